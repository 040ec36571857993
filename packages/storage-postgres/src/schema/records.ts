import type { SchemaArea } from "./context.js"

/** Tables of this area (filled in by the repositories that use them). */
export const recordTables: SchemaArea = () => ""

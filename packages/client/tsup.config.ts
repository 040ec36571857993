import { packageConfig } from "../../tsup.shared.js"

/** The client (`src/index.ts`, ESM and CJS with types); it runs wherever `fetch` and WebCrypto do. */
export default packageConfig({ target: "es2022" })

import { packageConfig } from "../../tsup.shared.js"

/**
 * The library (`src/index.ts`, ESM and CJS with types) and the CLI (`src/cli.ts`, the
 * `switchboard-whatsapp-simulator` bin; its shebang is kept and the file made executable).
 */
export default packageConfig({ entry: ["src/index.ts", "src/cli.ts"] })

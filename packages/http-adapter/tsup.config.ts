import { packageConfig } from "../../tsup.shared.js"

// `shims`: the CJS build gets `import.meta.url` (the /docs page resolves swagger-ui-dist
// with `createRequire(import.meta.url)`, src/openapiDocsPage.ts).
export default packageConfig({ shims: true })

import { packageConfig } from "../../tsup.shared.js"

// `shims`: the CJS build gets `import.meta.url` (the /docs page resolves swagger-ui-dist
// with `createRequire(import.meta.url)`, src/openapiDocsPage.ts). `tracing/index` is the
// `@switchboard/http-adapter/tracing` entry (its OpenTelemetry imports stay out of the main one).
export default packageConfig({
  shims: true,
  entry: { index: "src/index.ts", "tracing/index": "src/tracing/index.ts" }
})

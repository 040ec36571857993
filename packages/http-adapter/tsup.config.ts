import { packageConfig } from "../../tsup.shared.js"

// `shims`: the CJS build gets `import.meta.url` (the /docs page resolves swagger-ui-dist
// with `createRequire(import.meta.url)`, src/openapiDocsPage.ts). Three entries: the main
// one, `tracing/index` (`@switchboard/http-adapter/tracing`, its OpenTelemetry imports stay
// out of the main one) and `metrics` (`@switchboard/http-adapter/metrics`, the only one
// importing the optional peer `prom-client`).
export default packageConfig({
  shims: true,
  entry: { index: "src/index.ts", "tracing/index": "src/tracing/index.ts", metrics: "src/metrics/index.ts" }
})

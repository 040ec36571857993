import { packageConfig } from "../../tsup.shared.js"

// `shims`: the CJS build gets `import.meta.url` (the /docs page resolves swagger-ui-dist
// with `createRequire(import.meta.url)`, src/openapiDocsPage.ts). Three entries, each
// subpath built to `dist/<name>.*` from `src/<name>/index.ts`: the main one, `tracing`
// (`@switchboard/http-adapter/tracing`, its OpenTelemetry imports stay out of the main one)
// and `metrics` (`@switchboard/http-adapter/metrics`, the only one importing the optional
// peer `prom-client`).
export default packageConfig({
  shims: true,
  entry: { index: "src/index.ts", tracing: "src/tracing/index.ts", metrics: "src/metrics/index.ts" }
})

import { packageConfig } from "../../tsup.shared.js"

// Two entries: the store, and `@switchboard/blob-s3/url` (`parseS3Url` alone, so a program can
// check a configured URL without loading the AWS SDK).
export default packageConfig({ entry: { index: "src/index.ts", url: "src/url.ts" } })

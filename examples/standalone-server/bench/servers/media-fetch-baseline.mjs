// The media bench's fetch baseline (bench/media.mjs): what a hand-written fetcher does with
// a customer's file, in a process of its own: Meta's media look-up (`GET
// {graph}/v21.0/{media-id}` with the token), then the download with `fetch`, hashed
// (SHA-256) as it streams into a file through `pipeline(…, fs.createWriteStream(file))`.
// Arguments: the Graph API's base URL, the media id, the file to write; the token in
// BENCH_MEDIA_ACCESS_TOKEN. Prints `ready` once started and waits for a line on stdin;
// then fetches, prints `{"size":…,"sha256":…}` and exits once stdin closes.
import { createHash } from "node:crypto"
import { once } from "node:events"
import { createWriteStream } from "node:fs"
import { createInterface } from "node:readline"
import { pipeline } from "node:stream/promises"

const [graph, mediaId, file] = process.argv.slice(2)
const headers = { authorization: `Bearer ${process.env.BENCH_MEDIA_ACCESS_TOKEN}` }

const lines = createInterface({ input: process.stdin })
process.stdout.write("ready\n")
await once(lines, "line")

const lookUp = await fetch(`${graph}/v21.0/${mediaId}`, { headers })
if (!lookUp.ok) throw new Error(`the media look-up answered HTTP ${lookUp.status}`)
const { url } = await lookUp.json()
const response = await fetch(url, { headers })
if (!response.ok || response.body === null) throw new Error(`the media download answered HTTP ${response.status}`)
const hash = createHash("sha256")
let size = 0
await pipeline(
  response.body,
  async function* (chunks) {
    for await (const chunk of chunks) {
      size += chunk.byteLength
      hash.update(chunk)
      yield chunk
    }
  },
  createWriteStream(file)
)
process.stdout.write(`${JSON.stringify({ size, sha256: hash.digest("hex") })}\n`)
await once(lines, "close")

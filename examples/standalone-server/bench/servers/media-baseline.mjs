// The media bench's baseline (bench/media.mjs): a bare node:http server answering every
// request with the file named by its first argument, `fs.createReadStream(file).pipe(res)`
// with its Content-Length and Content-Type: no key check, no database, no range.
import { createReadStream, statSync } from "node:fs"
import { createServer } from "node:http"
import { listen } from "../lib.mjs"

const file = process.argv[2]
const size = statSync(file).size

const server = createServer((request, response) => {
  response.writeHead(200, { "content-type": "application/pdf", "content-length": size })
  createReadStream(file).pipe(response)
})

await listen("media baseline", server)

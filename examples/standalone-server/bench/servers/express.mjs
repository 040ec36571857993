// Benchmark baseline: the `GET /verify` a team would write instead of Switchboard, one
// process, on the SQLite file given as argument (started by lib.mjs `startServer`; prints
// "Express listening on …" on stderr).
//
// What it does, per request, in this order:
// - a logging middleware: a request id (`crypto.randomUUID`, sent as `x-request-id`) and,
//   on `res.on("finish")`, one JSON line with pino on stderr (method, route, status,
//   duration_ms, organization_id, request_id), as Switchboard logs one line per request;
// - the API-key check (lib.mjs `apiKeyCheck`, the same as Switchboard's: Bearer key,
//   SHA-256 hex, one prepared better-sqlite3 SELECT of the key and its organization,
//   revoked / subscription / api_access refused; no cache), answering 401/403 with the
//   error envelope;
// - express-rate-limit with its default MemoryStore, keyed by organization, with a limit no
//   run reaches (`standardHeaders: "draft-7"`, the `RateLimit` headers);
// - the route: `res.json` of the same envelope Switchboard answers.
// What it does not do: other routes, body parsing (none on this route), CORS, a shared
// rate-limit store across processes (Switchboard's counters are in SQLite, shared).
import { randomUUID } from "node:crypto"
import { createServer } from "node:http"
import express from "express"
import { rateLimit } from "express-rate-limit"
import pino from "pino"
import { apiKeyCheck, listen, openDatabase } from "../lib.mjs"

const db = openDatabase(process.argv[2])
const authenticate = apiKeyCheck(db)
const logger = pino(pino.destination({ dest: 2, sync: true }))

const app = express()
app.disable("x-powered-by")
app.use((req, res, next) => {
  const started = performance.now()
  const requestId = randomUUID()
  res.setHeader("x-request-id", requestId)
  res.on("finish", () => {
    logger.info(
      {
        method: req.method,
        route: req.route?.path ?? req.path,
        status: res.statusCode,
        duration_ms: Math.round((performance.now() - started) * 100) / 100,
        organization_id: res.locals.organization?.id ?? null,
        request_id: requestId
      },
      "request"
    )
  })
  next()
})

const api = express.Router()
api.use((req, res, next) => {
  const key = authenticate(req.get("authorization"))
  if (key.status !== 200) {
    res.status(key.status).json({ status: key.status, success: false, message: key.message, data: null, errors: [] })
    return
  }
  res.locals.organization = key.organization
  next()
})
api.use(
  rateLimit({
    windowMs: 3_600_000,
    limit: 1_000_000_000,
    standardHeaders: "draft-7",
    legacyHeaders: false,
    keyGenerator: (req, res) => res.locals.organization.id
  })
)
api.get("/verify", (req, res) => {
  const message = "API key is valid"
  res.json({ status: 200, success: true, message, data: { message, organization: res.locals.organization }, errors: [] })
})
app.use("/api/v1/api", api)

await listen("Express", createServer(app))

/**
 * An existing Express app with routes of its own (`GET /health`, a small JSON API under
 * `/notes` parsed by `express.json()` on its own router) that mounts the Switchboard API
 * at `/api/v1/api` (docs/mounting.md "Express").
 *
 * @packageDocumentation
 */
import express, { type ErrorRequestHandler, type Express } from "express"
import { createHandler, DEFAULT_BASE_PATH, type HandlerOptions, type SwitchboardHandler } from "@switchboard/http-adapter"

/**
 * Options of {@link createApp}: the options of the Switchboard handler (`storage` is
 * required; see docs/configuration.md). `basePath` is where the API is mounted in the app,
 * default `/api/v1/api`.
 *
 * @category app
 */
export type AppOptions = HandlerOptions

/**
 * The app and its Switchboard handler: `api.ready` settles when the storage is open;
 * `api.dispose()` closes it (call it after the server closed).
 *
 * @category app
 */
export interface ExampleApp {
  readonly app: Express
  readonly api: SwitchboardHandler
}

/** One note of the app's own JSON API. */
interface Note {
  readonly id: number
  readonly text: string
}

/**
 * Builds the Express app:
 * - `GET /health` → `{"status":"ok"}`;
 * - `GET /notes`, `POST /notes` (`{"text": string}`) → the app's own notes, in memory,
 *   with `express.json()` on the notes router only;
 * - everything under `basePath` (default `/api/v1/api`) → the Switchboard API, mounted with
 *   `app.use(basePath, api)`. Express strips the mount path from `req.url`; the handler
 *   matches on `req.originalUrl`, so its own `basePath` must be the full path (the same
 *   value as the mount path). The API reads its own body: keep body parsers off it (here
 *   `express.json()` sits on the notes router, and an app-wide parser would have to come
 *   after the mount);
 * - anything else → the app's own 404 `{"error":"not found"}`.
 *
 * @category app
 * @example
 * import { MemoryStorage } from "@switchboard/core"
 *
 * const { app, api } = createApp({ storage: MemoryStorage.layer })
 * const server = app.listen(3000)
 * // on shutdown: server.close(); await api.dispose()
 */
export const createApp = (options: AppOptions): ExampleApp => {
  const basePath = options.basePath ?? DEFAULT_BASE_PATH
  const api = createHandler({ ...options, basePath })
  const app = express()
  app.disable("x-powered-by")

  app.get("/health", (_req, res) => {
    res.json({ status: "ok" })
  })

  const notes: Array<Note> = []
  const notesRouter = express.Router()
  notesRouter.use(express.json())
  notesRouter.get("/", (_req, res) => {
    res.json({ notes })
  })
  notesRouter.post("/", (req, res) => {
    const text = (req.body as { text?: unknown } | undefined)?.text
    if (typeof text !== "string" || text.trim() === "") {
      res.status(400).json({ error: "text must be a non-empty string" })
      return
    }
    const note = { id: notes.length + 1, text }
    notes.push(note)
    res.status(201).json(note)
  })
  app.use("/notes", notesRouter)

  // The Switchboard API: every path under basePath, any method.
  app.use(basePath, api)

  app.use((_req, res) => {
    res.status(404).json({ error: "not found" })
  })
  const onError: ErrorRequestHandler = (error: { status?: number; expose?: boolean; message?: string }, _req, res, _next) => {
    const status = typeof error.status === "number" && error.status >= 400 && error.status < 600 ? error.status : 500
    res.status(status).json({ error: error.expose === true ? error.message : "internal error" })
  }
  app.use(onError)
  return { app, api }
}

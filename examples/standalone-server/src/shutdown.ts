import type { Server } from "node:http"

/**
 * How long in-flight requests may run after a shutdown began before their connections are
 * cut, in milliseconds.
 *
 * @category server
 */
export const DEFAULT_SHUTDOWN_TIMEOUT_MS = 10_000

/** How often idle keep-alive connections are closed while the server drains, in ms. */
const IDLE_SWEEP_INTERVAL_MS = 100

/**
 * Closes a `node:http` server gracefully and resolves when every connection has ended:
 * - it stops accepting connections (`server.close()`);
 * - idle keep-alive connections are closed now, and every 100 ms while draining, so a
 *   connection is closed as soon as its in-flight request is answered;
 * - requests still arriving on open connections are answered with `Connection: close`;
 * - after `timeoutMs` (default 10 s) the remaining connections are cut
 *   (`server.closeAllConnections()`).
 *
 * @category server
 */
export const closeGracefully = (server: Server, timeoutMs: number = DEFAULT_SHUTDOWN_TIMEOUT_MS): Promise<void> =>
  new Promise((resolve) => {
    server.prependListener("request", (_request, response) => {
      if (!response.headersSent) response.setHeader("Connection", "close")
    })
    const sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_INTERVAL_MS)
    const deadline = setTimeout(() => server.closeAllConnections(), timeoutMs)
    server.close(() => {
      clearInterval(sweep)
      clearTimeout(deadline)
      resolve()
    })
    server.closeIdleConnections()
  })

/**
 * What {@link shutDown} stops: the listening `server`, the `handler` (its dispatch loops
 * and runtime) and the store (`closeStore`, which the handler does not own).
 *
 * @category server
 */
export interface ShutdownParts {
  readonly server: Server
  readonly handler: { readonly drain: () => Promise<void>; readonly dispose: () => Promise<void> }
  readonly closeStore: () => Promise<void>
}

/**
 * The server's shutdown on SIGTERM or SIGINT (docs/standalone-server.md "Stopping it"),
 * side by side, then in order:
 * 1. the server stops accepting and finishes its requests in flight (at most 10 s,
 *    {@link closeGracefully}) while the dispatchers claim nothing more and record the
 *    outcome of the attempts they have in flight (at most the send timeout + 2 s:
 *    `handler.drain()`);
 * 2. the handler waits for requests still running (a send's attempt outlives a cut
 *    connection) and closes its runtime (`handler.dispose()`);
 * 3. the store closes.
 * Every step runs even when an earlier one failed; it rejects with the first failure.
 *
 * @category server
 */
export const shutDown = async (parts: ShutdownParts): Promise<void> => {
  const outcomes = await Promise.allSettled([closeGracefully(parts.server), parts.handler.drain()])
  outcomes.push(...(await Promise.allSettled([parts.handler.dispose()])))
  outcomes.push(...(await Promise.allSettled([parts.closeStore()])))
  const failed = outcomes.find((outcome): outcome is PromiseRejectedResult => outcome.status === "rejected")
  if (failed !== undefined) throw failed.reason
}

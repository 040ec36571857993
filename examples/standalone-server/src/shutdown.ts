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

import { existsSync, mkdirSync, writeFileSync } from "node:fs"
import { dirname, resolve } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { chromium, type Browser } from "playwright-core"
import { listen, makeHandler, makeSharedStorage } from "./helpers.js"

// docs/api-reference.md: GET {base}/docs renders the OpenAPI document with Swagger UI,
// from node_modules only. Loaded in Debian's headless Chromium over a real socket; every
// request the page makes must go to this server (no CDN), the Content-Security-Policy must
// not block anything, and the `/verify` operation must show and be callable ("Try it
// out", answered 401 without a key). A screenshot is taken (a PNG); it is written for humans
// to look at only to the path in SWITCHBOARD_SCREENSHOT when set (docs/images/api-reference.png
// was made so), so the test leaves nothing in the temporary directory; it prints where.

const CHROMIUM = "/usr/bin/chromium"
const SCREENSHOT = process.env.SWITCHBOARD_SCREENSHOT === undefined ? undefined : resolve(process.env.SWITCHBOARD_SCREENSHOT)
const hasChromium = existsSync(CHROMIUM)
if (!hasChromium) console.warn(`docs page test skipped: ${CHROMIUM} is missing (apt-get install -y chromium; .ci/run installs it)`)

describe.skipIf(!hasChromium)("the /docs page in headless Chromium", () => {
  const handler = makeHandler(makeSharedStorage())
  let server: Awaited<ReturnType<typeof listen>>
  let browser: Browser

  beforeAll(async () => {
    server = await listen(handler)
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync"
      ]
    })
  }, 60_000)

  afterAll(async () => {
    await browser?.close()
    await server?.close()
    await handler.dispose()
  })

  it("loads from this server only, without CSP violations, and shows a callable /verify operation", async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 1600 } })
    const origin = new URL(server.base).origin
    const foreign: Array<string> = []
    const failed: Array<string> = []
    const problems: Array<string> = []
    page.on("request", (request) => {
      if (!request.url().startsWith(origin) && !request.url().startsWith("data:")) foreign.push(request.url())
    })
    page.on("requestfailed", (request) => failed.push(`${request.url()}: ${request.failure()?.errorText}`))
    page.on("response", (response) => {
      if (response.status() >= 400) failed.push(`${response.url()}: HTTP ${response.status()}`)
    })
    page.on("console", (message) => {
      if (message.type() === "error") problems.push(message.text())
    })
    page.on("pageerror", (error) => problems.push(error.message))

    const response = await page.goto(`${server.base}/docs`, { waitUntil: "load" })
    expect(response?.status()).toBe(200)
    const verify = page.locator(".opblock-summary-path", { hasText: /^\/verify$/ })
    await verify.first().waitFor({ state: "visible", timeout: 30_000 })
    expect(await verify.count()).toBe(1)
    expect(await page.locator(".opblock-tag", { hasText: "Guide" }).count()).toBeGreaterThan(0)
    expect(await page.locator(".info .title").innerText()).toContain("Switchboard Developer Messaging API")

    const screenshot = await page.screenshot({ fullPage: false })
    expect(screenshot.subarray(1, 4).toString("latin1")).toBe("PNG")
    if (SCREENSHOT !== undefined) {
      mkdirSync(dirname(SCREENSHOT), { recursive: true })
      writeFileSync(SCREENSHOT, screenshot)
      console.log(`API reference screenshot written to ${SCREENSHOT}`)
    }

    // "Try it out" on /verify: the page may call the API (connect-src 'self'); no key → 401.
    const operation = page.locator("#operations-Auth-getVerify")
    await operation.locator(".opblock-summary").click()
    await operation.locator("button.try-out__btn").click()
    await operation.locator("button.execute").click()
    await operation.locator(".live-responses-table .response-col_status", { hasText: "401" }).first().waitFor({ timeout: 30_000 })
    failed.splice(0, failed.length, ...failed.filter((entry) => !entry.endsWith("/verify: HTTP 401")))
    problems.splice(0, problems.length, ...problems.filter((entry) => !entry.includes("401")))

    expect(foreign).toEqual([])
    expect(failed).toEqual([])
    expect(problems).toEqual([])
    await page.close()
  }, 90_000)
})

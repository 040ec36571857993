import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"

// The API reference page (docs/api-reference.md "The reference page"): Swagger UI (`swagger-ui-dist`, an
// http-adapter dependency) rendering `{base}/openapi.json`. Its files are read from
// node_modules and served by the handler under `{base}/docs/…`: no CDN, works offline.
// The page has no inline script, so its Content-Security-Policy allows scripts from the
// server itself only.

/**
 * The `Content-Security-Policy` of the reference page: scripts, styles, images, fonts and
 * `fetch` from this origin only (Swagger UI sets inline `style` attributes, and its
 * stylesheet embeds `data:` SVG icons), no plugins, no framing, no form posts.
 *
 * @category openapi
 */
export const DOCS_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'"
].join("; ")

/**
 * The files of the reference page served under `{base}/docs/`: name → content type.
 * `switchboard-docs.js` is ours (it starts Swagger UI); the others come from
 * `swagger-ui-dist`.
 *
 * @category openapi
 */
export const DOCS_FILES: Readonly<Record<string, string>> = {
  "swagger-ui.css": "text/css; charset=utf-8",
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
  "switchboard-docs.js": "text/javascript; charset=utf-8"
}

/**
 * The HTML of the reference page for an API served under `basePath`: Swagger UI's
 * stylesheet and bundle from `{base}/docs/`, and the document's URL in a `data-` attribute
 * read by `switchboard-docs.js`.
 *
 * @category openapi
 */
export const docsPageHtml = (basePath: string, title: string): string => {
  const base = escapeHtml(basePath)
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} — reference</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${base}/docs/swagger-ui.css">
</head>
<body>
<div id="swagger-ui" data-openapi-url="${base}/openapi.json"></div>
<script src="${base}/docs/swagger-ui-bundle.js"></script>
<script src="${base}/docs/switchboard-docs.js"></script>
</body>
</html>
`
}

/**
 * The content of one of {@link DOCS_FILES}, read once then kept in memory, or `undefined`
 * for a name not in the list. Throws when `swagger-ui-dist` cannot be found or read (the
 * package is a dependency: a broken installation).
 *
 * @category openapi
 */
export const docsFile = (name: string): { readonly content: string; readonly contentType: string } | undefined => {
  const contentType = Object.hasOwn(DOCS_FILES, name) ? DOCS_FILES[name] : undefined
  if (contentType === undefined) return undefined
  let content = fileCache.get(name)
  if (content === undefined) {
    content = name === "switchboard-docs.js" ? INITIALIZER : readFileSync(join(swaggerUiDirectory(), name), "utf8")
    fileCache.set(name, content)
  }
  return { content, contentType }
}

const fileCache = new Map<string, string>()

/** Starts Swagger UI on `#swagger-ui` with the document named by its `data-openapi-url`. */
const INITIALIZER = `"use strict";
(function () {
  var root = document.getElementById("swagger-ui");
  window.ui = SwaggerUIBundle({
    url: root.getAttribute("data-openapi-url"),
    domNode: root,
    deepLinking: true,
    validatorUrl: null,
    displayRequestDuration: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout"
  });
})();
`

/**
 * The directory of the installed `swagger-ui-dist`, resolved from this module (the CJS
 * build gets `import.meta.url` from tsup's `shims`).
 */
const swaggerUiDirectory = (): string => dirname(createRequire(import.meta.url).resolve("swagger-ui-dist"))

const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (character) => `&#${character.charCodeAt(0)};`)

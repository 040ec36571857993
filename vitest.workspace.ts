import { defineWorkspace } from "vitest/config"
import { isolatedFiles, project } from "./vitest.shared.js"

/**
 * One test project per package and example; each has its own vitest.config.ts.
 * `http-adapter-sqlite` runs the endpoint suites of the http-adapter again on SQLite files
 * (helpers.ts `makeSharedStorage`), so every HTTP rule is checked on memory and on SQLite;
 * `http-adapter-postgres` runs a subset on PostgreSQL schemas (hostile input, sends,
 * scheduled sends, read receipts, broadcasts, plan limits, tenant isolation, webhook
 * secret rotation, provider
 * webhooks) when `POSTGRES_URL` is set,
 * and is skipped, saying why, when it is not. The files of vitest.shared.ts `isolatedFiles`
 * run in `<project>-isolated`, each in a fresh process.
 */
const postgres = process.env.POSTGRES_URL !== undefined && process.env.POSTGRES_URL !== ""
if (!postgres) console.warn("http-adapter-postgres: POSTGRES_URL is not set; the HTTP suites on PostgreSQL are skipped")

export default defineWorkspace([
  "packages/*",
  "examples/*",
  ...Object.entries(isolatedFiles).map(([name, include]) => ({
    ...project(`${name}-isolated`, { include: [...include], isolate: true }),
    root: `./packages/${name}`
  })),
  {
    ...project("http-adapter-sqlite", {
      env: { SWITCHBOARD_TEST_STORAGE: "sqlite" },
      include: [
        "test/authentication.test.ts",
        "test/basic-replies.test.ts",
        "test/broadcasts.test.ts",
        "test/channels.test.ts",
        "test/chats*.test.ts",
        "test/contacts*.test.ts",
        "test/groups.test.ts",
        "test/hostile-input.test.ts",
        "test/idempotency*.test.ts",
        "test/interactive.test.ts",
        "test/label-assignments.test.ts",
        "test/labels.test.ts",
        "test/messages.test.ts",
        "test/messaging.test.ts",
        "test/metrics.test.ts",
        "test/plan-limits.test.ts",
        "test/reactions.test.ts",
        "test/scheduled-sends.test.ts",
        "test/templates.test.ts",
        "test/template-sync.test.ts",
        "test/storage-under-test.test.ts",
        "test/tenant-isolation.test.ts",
        "test/webhook-endpoints.test.ts",
        "test/webhook-secret-rotation.test.ts",
        "test/webhooks-dispatch.test.ts",
        "test/whatsapp-webhook.test.ts"
      ]
    }),
    root: "./packages/http-adapter"
  },
  ...(postgres
    ? [
        {
          ...project("http-adapter-postgres", {
            env: { SWITCHBOARD_TEST_STORAGE: "postgres" },
            // A subset, to keep the suite short: what reaches the store's own code paths
            // beyond the contract (the edge's hostile input, plan limits and tenant
            // isolation through HTTP, sends, scheduled sends leaving through the send queue,
            // read receipts, broadcasts and provider webhooks end to end). The other chat
            // routes, contacts and idempotency are covered on PostgreSQL by the contract, the
            // chat-list oracle and the standalone server's two-process tests.
            include: [
              "test/broadcasts.test.ts",
              "test/chats-read.test.ts",
              "test/hostile-input.test.ts",
              "test/interactive.test.ts",
              "test/messaging.test.ts",
              "test/plan-limits.test.ts",
        "test/reactions.test.ts",
              "test/scheduled-sends.test.ts",
              "test/storage-under-test.test.ts",
              "test/tenant-isolation.test.ts",
              "test/webhook-secret-rotation.test.ts",
              "test/whatsapp-webhook.test.ts"
            ]
          }),
          root: "./packages/http-adapter"
        }
      ]
    : [])
])

import { describe, expect, it } from "@effect/vitest"
import { afterAll } from "vitest"
import Sqlite from "better-sqlite3"
import { Effect } from "effect"
import { type OrganizationId, Storage, type WebhookEndpointId } from "@switchboard/core"
import { fixtures } from "@switchboard/storage-contract"
import { SqliteStorage } from "@switchboard/storage-sqlite"
import { SQL } from "../src/repositories/webhooks.js"
import { fixtureProcesses, tempFiles } from "./helpers.js"

const files = tempFiles()
afterAll(files.cleanup)

/** The query plan of `sql`, its `detail` lines joined. */
const planOf = (db: Sqlite.Database, sql: string, ...params: Array<unknown>): string =>
  (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{ detail: string }>).map((row) => row.detail).join("\n")

describe("webhook statements use their indexes", () => {
  it.effect("the outbox's look-up, the claim, the attempt list and its cursor", () =>
    Effect.gen(function* () {
      const db = new Sqlite(":memory:")
      yield* Effect.provide(Storage, SqliteStorage.layerFromClient(db))
      expect(planOf(db, SQL.subscribers, "org", "chat.updated")).toMatch(/SEARCH webhook_endpoints USING INDEX webhook_endpoints_enabled \(organization_id=\?\)/)
      expect(planOf(db, SQL.due, "t", "t", 10)).toMatch(/SEARCH d USING INDEX webhook_deliveries_due \(status=\? AND next_attempt_at<\?\)/)
      expect(planOf(db, SQL.due, "t", "t", 10)).not.toMatch(/TEMP B-TREE/)
      expect(planOf(db, SQL.attemptsFirst, "e", 10)).toMatch(/SEARCH webhook_attempts USING INDEX webhook_attempts_newest \(endpoint_uuid=\?\)/)
      expect(planOf(db, SQL.attemptsAfter, "e", "t", "id", 10)).toMatch(/USING INDEX webhook_attempts_newest/)
      expect(planOf(db, SQL.attemptsAfter, "e", "t", "id", 10)).not.toMatch(/TEMP B-TREE/)
      expect(planOf(db, SQL.cancelPending, "e")).toMatch(/USING INDEX webhook_deliveries_endpoint/)
      db.close()
    }))
})

describe("two processes claiming from one file together", () => {
  const { available, startChild } = fixtureProcesses("claim-deliveries.ts")

  /** A file with one organization, one endpoint and 20 due deliveries (20 contacts imported). */
  const seed = (filename: string) =>
    Effect.gen(function* () {
      const { contacts, organizations, webhooks } = yield* Storage
      const organization = fixtures.organization()
      yield* organizations.insert(organization)
      const endpoint = {
        uuid: fixtures.uuid() as WebhookEndpointId,
        url: "https://example.com/hooks",
        events: null,
        description: null,
        enabled: true,
        created_at: fixtures.instant(0),
        updated_at: fixtures.instant(0)
      }
      yield* webhooks.insertEndpoint(organization.id as OrganizationId, { endpoint, secret_sealed: "sealed" }, 10)
      const rows = Array.from({ length: 20 }, (_, n) => fixtures.importRow(fixtures.phone(n)))
      yield* contacts.importBulk(organization.id, fixtures.importRequest(rows, { now: fixtures.instant(1) }))
    }).pipe(Effect.provide(SqliteStorage.layer({ filename })))

  it.skipIf(!available)(
    "every one of 20 deliveries is claimed, none twice",
    async () => {
      const filename = files.file()
      await Effect.runPromise(seed(filename))
      const children = [startChild(filename), startChild(filename)]
      await Promise.all(children.map((child) => child.ready))
      for (const child of children) child.go()
      const results = await Promise.all(children.map((child) => child.exited))
      const claimed = results.map((result) => {
        expect(result.code, result.output).toBe(0)
        const line = result.output.split("\n").find((text) => text.startsWith("claimed "))
        return JSON.parse(line!.slice("claimed ".length)) as Array<string>
      })
      const all = claimed.flat()
      expect(all).toHaveLength(20)
      expect(new Set(all).size).toBe(20)
    },
    60_000
  )
})

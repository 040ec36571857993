import { expect } from "@effect/vitest"
import { Effect } from "effect"
import type { LabelId, StorageService } from "@switchboard/core"
import { fixtures } from "@switchboard/storage-contract"

const { importRow, instant, phone } = fixtures

/**
 * Two storages on one database, as two server instances would have, used at the same
 * time: concurrent imports and label creates split between them never pass the plan's
 * limits together, and each sees the other's writes (docs/storage.md
 * "Scaling out with several instances"). Run on the driver
 * stand-in (adapter.test.ts) and on a real server (storage-contract.test.ts).
 */
export const limitsHoldAcrossInstances = (first: StorageService, second: StorageService) =>
  Effect.gen(function* () {
    const org = fixtures.organization({ plan: { contacts_limit: 10, label_limit: 3, media_bytes_limit: null, api_access: true } })
    yield* first.organizations.insert(org)
    const imports = yield* Effect.all(
      Array.from({ length: 8 }, (_, i) =>
        (i % 2 === 0 ? first : second).contacts.importBulk(
          org.id,
          fixtures.importRequest([importRow(phone(100 + 2 * i)), importRow(phone(101 + 2 * i))], { contactsLimit: 10 })
        )
      ),
      { concurrency: "unbounded" }
    )
    expect(imports.filter((o) => o._tag === "Imported")).toHaveLength(5)
    expect(imports.filter((o) => o._tag === "LimitExceeded")).toHaveLength(3)
    expect((yield* second.contacts.list(org.id, { page: 1, per_page: 1 })).total).toBe(10)
    const labels = yield* Effect.all(
      Array.from({ length: 6 }, (_, i) =>
        (i % 2 === 0 ? first : second).labels.create(
          org.id,
          { uuid: fixtures.uuid() as LabelId, name: `label ${i}`, color: "#000", now: instant(i) },
          3
        )
      ),
      { concurrency: "unbounded" }
    )
    expect(labels.filter((o) => o._tag === "Created")).toHaveLength(3)
    expect((yield* first.labels.list(org.id, { page: 1, per_page: 1 })).total).toBe(3)
  })

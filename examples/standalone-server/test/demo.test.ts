import { describe, expect, it } from "@effect/vitest"
import { Core, MemoryStorage, Organizations } from "@switchboard/core"
import { Effect, Layer, Option } from "effect"
import { DEMO_ORGANIZATION_NAME, ensureDemoOrganization } from "../src/demo.js"

const TestLayer = Core.layer.pipe(Layer.provideMerge(MemoryStorage.layer))

describe("ensureDemoOrganization", () => {
  it.effect("creates an active, unlimited demo organization with a working key on an empty store only", () =>
    Effect.gen(function* () {
      const first = yield* ensureDemoOrganization
      expect(Option.isSome(first)).toBe(true)
      const demo = Option.getOrThrow(first)
      const organizations = yield* Organizations
      const authenticated = yield* organizations.authenticate(demo.api_key)
      expect(authenticated.organization).toMatchObject({
        id: demo.org_id,
        name: DEMO_ORGANIZATION_NAME,
        plan: { contacts_limit: null, label_limit: null, api_access: true },
        subscription: "active"
      })
      expect(authenticated.api_key_id).toBe(demo.key_id)

      expect(yield* ensureDemoOrganization).toEqual(Option.none())
      expect(yield* organizations.list()).toHaveLength(1)
    }).pipe(Effect.provide(TestLayer))
  )

  it.effect("does nothing when any organization exists", () =>
    Effect.gen(function* () {
      const organizations = yield* Organizations
      yield* organizations.create({ name: "Acme" })
      expect(yield* ensureDemoOrganization).toEqual(Option.none())
      expect((yield* organizations.list()).map((organization) => organization.name)).toEqual(["Acme"])
    }).pipe(Effect.provide(TestLayer))
  )
})

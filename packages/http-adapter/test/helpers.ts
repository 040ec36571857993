import type { IncomingMessage, ServerResponse } from "node:http"
import { Effect, Layer } from "effect"
import inject from "light-my-request"
import { Core, MemoryStorage, Organizations, Storage, type CreateOrganizationInput } from "@switchboard/core"
import { createHandler, type HandlerOptions, type SwitchboardHandler } from "@switchboard/http-adapter"

/** A memory store shared by the handler under test and the test's own set-up calls. */
export const makeSharedStorage = () => Layer.succeed(Storage, MemoryStorage.make())

/** Creates an organization with an API key in `storage`; returns both. */
export const createOrganization = (
  storage: Layer.Layer<Storage>,
  input: CreateOrganizationInput = { name: "Acme" }
) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const organizations = yield* Organizations
      const organization = yield* organizations.create(input)
      const key = yield* organizations.issueApiKey(organization.id)
      return { organization, key }
    }).pipe(Effect.provide(Core.layer), Effect.provide(storage))
  )

/** Revokes a key in `storage`. */
export const revokeKey = (storage: Layer.Layer<Storage>, keyId: Parameters<Organizations["Type"]["revokeApiKey"]>[0]) =>
  Effect.runPromise(
    Organizations.pipe(
      Effect.flatMap((organizations) => organizations.revokeApiKey(keyId)),
      Effect.provide(Core.layer),
      Effect.provide(storage)
    )
  )

/** A handler on `storage` with request logs silenced unless a logger is given. */
export const makeHandler = (
  storage: Layer.Layer<Storage, unknown>,
  options: Partial<HandlerOptions> = {}
): SwitchboardHandler => createHandler({ storage, logger: false, ...options })

/** Sends one request to `handler` without a socket (light-my-request). */
export const request = (
  listener: (req: IncomingMessage, res: ServerResponse) => void,
  options: inject.InjectOptions
) => inject((req, res) => listener(req, res), options)

export const bearer = (apiKey: string) => ({ authorization: `Bearer ${apiKey}` })

import { afterAll, afterEach, beforeAll, expect } from "vitest"
import { Effect, Layer, Option } from "effect"
import {
  Channels,
  ChannelVerifier,
  Core,
  generateSecretKey,
  Media,
  MemoryBlobStore,
  MemoryStorage,
  type MessageId,
  MessageTransport,
  type OrganizationId,
  recordingTransport,
  SecretKey,
  Storage,
  WhatsAppCloudTransport
} from "@switchboard/core"
import { type SimulatedNumber, startSimulator, type WhatsAppSimulator } from "@switchboard/whatsapp-simulator"

/**
 * What a test file that sends through the WhatsApp simulator shares: the simulator holding
 * `number` (started before the file's tests, reset after each, closed after them), and
 *
 * - `run(body, transport?)`: `body` on a fresh memory store with the media service on a
 *   memory blob store, sending through the simulator for a channel's messages and through
 *   the recording transport otherwise, or through `transport` when given;
 * - `addChannel(organizationId)`: the simulator's number as the organization's channel;
 * - `findMessage(organizationId, id)`: the stored message, which must exist;
 * - `simulator`: the running simulator.
 *
 * Call it at a file's top level (it registers the file's hooks).
 */
export const useSimulatorSends = (number: SimulatedNumber & { readonly access_token: string }) => {
  let simulator: WhatsAppSimulator | undefined
  beforeAll(async () => {
    simulator = await startSimulator({ numbers: [number] })
  })
  afterEach(() => simulator?.reset())
  afterAll(() => simulator?.close())
  const acceptingVerifier = Layer.succeed(ChannelVerifier, { verify: () => Effect.succeed({ display_phone_number: number.display_phone_number }) })
  return {
    get simulator(): WhatsAppSimulator {
      return simulator ?? expect.fail("the simulator is not started yet")
    },
    run: <A, E>(body: Effect.Effect<A, E, any>, transport?: Layer.Layer<MessageTransport>) =>
      Effect.suspend(() => {
        const chosen = transport ?? Layer.succeed(MessageTransport, WhatsAppCloudTransport.withChannels({ baseUrl: simulator!.url }, recordingTransport))
        const core = Core.layerWithTransport(chosen).pipe(
          Layer.provideMerge(Layer.mergeAll(SecretKey.layer(generateSecretKey()), acceptingVerifier)),
          Layer.provideMerge(MemoryStorage.layer)
        )
        const layer = Media.layer.pipe(Layer.provideMerge(core), Layer.provideMerge(MemoryBlobStore.layer))
        return body.pipe(Effect.provide(layer)) as Effect.Effect<A, E>
      }),
    addChannel: (organizationId: OrganizationId) =>
      Effect.flatMap(Channels, (channels) =>
        channels.add(organizationId, { phone_number_id: number.phone_number_id, waba_id: number.waba_id, access_token: number.access_token })),
    findMessage: (organizationId: OrganizationId, id: MessageId) =>
      Effect.map(Effect.flatMap(Storage, (storage) => storage.chats.findMessage(organizationId, id)), (found) =>
        Option.isSome(found) ? found.value : expect.fail(`message ${id} not found`))
  }
}

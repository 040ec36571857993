import type { StatusName } from "./payloads.js"

/**
 * Settings that can change while the simulator runs (`configure`, control API
 * `PUT /_simulator/settings`):
 * - `webhookUrl`: where notifications and inbound messages are posted (`null`: nowhere);
 * - `appSecret`: signs them (`X-Hub-Signature-256`); `null` posts them unsigned;
 * - `statuses`: the notifications after a successful send, in order (default `sent`,
 *   `delivered`, `read`; `[]` for none);
 * - `statusDelayMs`: the wait before each of them (default 100 ms).
 *
 * @category simulator
 */
export interface SimulatorSettings {
  readonly webhookUrl: string | null
  readonly appSecret: string | null
  readonly statuses: ReadonlyArray<Exclude<StatusName, "failed">>
  readonly statusDelayMs: number
}

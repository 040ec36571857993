import type { IncomingMessage, ServerResponse } from "node:http"
import { graphError, invalidParameterError } from "./graphErrors.js"
import { NONE, scriptedRefusal, writeJson } from "./graphAnswers.js"
import type { GraphOutcome } from "./graph.js"
import type { SimulatedNumber } from "./payloads.js"
import type { Script } from "./script.js"

// Meta's read receipt: `POST /{version}/{phone_number_id}/messages` with
// `{messaging_product: "whatsapp", status: "read", message_id, typing_indicator?}`.

/**
 * A customer's message the simulator delivered (posted to the webhook): the number it was
 * sent to and the customer's WhatsApp id. A read receipt must name one of these.
 *
 * @category records
 */
export interface DeliveredInbound {
  readonly phone_number_id: string
  readonly from: string
}

/** What the read route needs of the simulator. */
export interface ReadHost {
  readonly script: Script
  /** The customer's message delivered as `wamid`, or `undefined`. */
  inboundMessage(wamid: string): DeliveredInbound | undefined
}

/**
 * Whether a `POST …/messages` body is a read receipt: Meta reads `status: "read"` before
 * `to` (a read receipt has no recipient).
 */
export const isReadReceipt = (body: unknown): boolean =>
  typeof body === "object" && body !== null && !Array.isArray(body) && (body as Record<string, unknown>).status === "read"

/**
 * Answers a read receipt as Meta does: `messaging_product` must be `whatsapp`, `message_id`
 * a string, `typing_indicator` (optional) `{type: "text"}` (else 100, Invalid parameter);
 * `message_id` must name a customer's message the simulator delivered to this number (else
 * 131009, Parameter value is not valid); then the script (route `mark_read`) decides, and a
 * success answers `{success: true}`.
 */
export const answerReadReceipt = async (
  host: ReadHost,
  number: SimulatedNumber,
  body: unknown,
  req: IncomingMessage,
  res: ServerResponse
): Promise<GraphOutcome> => {
  const fields = body as Record<string, unknown>
  const refused = (error: unknown) => ({ ...NONE, answer: writeJson(res, 400, error) })
  if (fields.messaging_product !== "whatsapp") return refused(invalidParameterError("The parameter messaging_product is required."))
  const messageId = fields.message_id
  if (typeof messageId !== "string" || messageId === "") return refused(invalidParameterError("The parameter message_id is required."))
  const typing = fields.typing_indicator
  if (typing !== undefined && (typeof typing !== "object" || typing === null || (typing as Record<string, unknown>).type !== "text")) {
    return refused(invalidParameterError("Param typing_indicator[type] must be one of {text}."))
  }
  const delivered = host.inboundMessage(messageId)
  if (delivered === undefined || delivered.phone_number_id !== number.phone_number_id) {
    return refused(graphError(131009, { details: `message_id ${JSON.stringify(messageId)} is not a message this phone number received.` }))
  }
  const scripted = host.script.answerFor("mark_read", null)
  const refusal = await scriptedRefusal(scripted, req, res)
  if (refusal !== null) return { ...NONE, scripted, answer: refusal }
  return { ...NONE, scripted, answer: writeJson(res, 200, { success: true }) }
}

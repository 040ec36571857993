import type { IssueCollector } from "../internal/validation.js"
import { type BasicReplyInput, MAX_RESPONSE_LENGTH } from "../model/basicReplies.js"

/**
 * Reads one reply from `input`, adding an issue to `collector` for every bad field, named
 * `<path>.<field>` (bare field names when `path` is `""`). Shared by `create` and the
 * admin import. The result is meaningful only when no issue was added.
 */
export const readBasicReply = (collector: IssueCollector, path: string, input: unknown): BasicReplyInput => {
  const at = (field: string) => (path === "" ? field : `${path}.${field}`)
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    collector.add("invalid_type", path === "" ? "reply" : path, `${path === "" ? "the reply" : path} must be an object`)
    return { name: "", trigger: "", response: "" }
  }
  const record = input as Record<string, unknown>
  return {
    name: collector.requiredText(at("name"), record.name),
    trigger: collector.requiredText(at("trigger"), record.trigger),
    response: collector.requiredText(at("response"), record.response, MAX_RESPONSE_LENGTH)
  }
}

import { parsePhoneNumberFromString } from "libphonenumber-js/max"
import { Effect, Option } from "effect"
import { InvalidInput } from "../model/commonErrors.js"
import { IssueCollector } from "../internal/validation.js"
import {
  type ChannelInput,
  type ChannelUpdateInput,
  DEFAULT_THROUGHPUT_MPS,
  MAX_THROUGHPUT_MPS,
  MIN_THROUGHPUT_MPS
} from "../model/channels.js"

/** Longest accepted access token, in characters. */
const MAX_TOKEN_LENGTH = 4096
/** Shortest accepted access token: `access_token_last4` must never be most of it. */
const MIN_TOKEN_LENGTH = 16

/** The checked fields of a {@link ChannelInput}. */
export interface ChannelFields {
  readonly phone_number_id: string
  readonly waba_id: string
  readonly access_token: string
  readonly display_phone_number: string | null
  readonly throughput_mps: number
}

/** The checked fields of a {@link ChannelUpdateInput}: `undefined` leaves a field as it is. */
export interface ChannelUpdateFields {
  readonly access_token: string | undefined
  readonly throughput_mps: number | undefined
}

/**
 * Checks a channel input, reporting every bad field at once (`InvalidInput`): the two
 * Meta ids are strings of 1–64 digits (trimmed); the token a string of 16–4096
 * characters without whitespace; `display_phone_number`, when given, a valid phone number
 * written internationally, normalised to E.164; `throughput_mps`, when given, an integer
 * 1–1 000 (else 50). Messages never repeat the token.
 */
export const readChannelInput = (input: ChannelInput): Effect.Effect<ChannelFields, InvalidInput> => {
  const collector = new IssueCollector()
  const fields: ChannelFields = {
    phone_number_id: metaId(collector, "phone_number_id", input.phone_number_id),
    waba_id: metaId(collector, "waba_id", input.waba_id),
    access_token: accessToken(collector, input.access_token),
    display_phone_number:
      input.display_phone_number === undefined || input.display_phone_number === null
        ? null
        : collector.phone("display_phone_number", input.display_phone_number, undefined),
    throughput_mps: throughput(collector, input.throughput_mps) ?? DEFAULT_THROUGHPUT_MPS
  }
  return collector.issues.length > 0 ? Effect.fail(new InvalidInput({ issues: collector.issues })) : Effect.succeed(fields)
}

/**
 * Checks a channel update (`InvalidInput`, every bad field at once): each field absent or
 * `null` is left as it is; otherwise `access_token` and `throughput_mps` follow the rules
 * of {@link readChannelInput}. Messages never repeat the token.
 */
export const readChannelUpdate = (input: ChannelUpdateInput): Effect.Effect<ChannelUpdateFields, InvalidInput> => {
  const collector = new IssueCollector()
  const fields: ChannelUpdateFields = {
    access_token: input.access_token === undefined || input.access_token === null ? undefined : accessToken(collector, input.access_token),
    throughput_mps: throughput(collector, input.throughput_mps)
  }
  return collector.issues.length > 0 ? Effect.fail(new InvalidInput({ issues: collector.issues })) : Effect.succeed(fields)
}

/**
 * Meta's `display_phone_number` (`"+1 555-010-0123"`, `"15550100123"`…) in E.164, or
 * `None` when it is not a possible phone number. Meta writes it with the country code,
 * with or without `+`.
 */
export const displayNumberOf = (text: string): Option.Option<string> => {
  const digits = text.replace(/[^\d]/g, "")
  const parsed = digits === "" ? undefined : parsePhoneNumberFromString(`+${digits}`)
  return parsed !== undefined && parsed.isPossible() ? Option.some(parsed.number) : Option.none()
}

const metaId = (collector: IssueCollector, field: string, value: unknown): string => {
  if (value === undefined || value === null || (typeof value === "string" && value.trim() === "")) {
    collector.add("required", field, `${field} is required`)
    return ""
  }
  if (typeof value !== "string") {
    collector.add("invalid_type", field, `${field} must be a string of digits`)
    return ""
  }
  const trimmed = value.trim()
  if (!/^\d{1,64}$/.test(trimmed)) collector.add("invalid_format", field, `${field} must be Meta's numeric id (1 to 64 digits)`)
  return trimmed
}

/** An optional `throughput_mps`: `undefined` when absent or `null`, else an integer 1–1 000 or an issue. */
const throughput = (collector: IssueCollector, value: unknown): number | undefined => {
  if (value === undefined || value === null) return undefined
  if (typeof value !== "number" || !Number.isInteger(value) || value < MIN_THROUGHPUT_MPS || value > MAX_THROUGHPUT_MPS) {
    collector.add(
      typeof value === "number" ? "out_of_range" : "invalid_type",
      "throughput_mps",
      `throughput_mps must be an integer from ${MIN_THROUGHPUT_MPS} to ${MAX_THROUGHPUT_MPS} (messages per second)`
    )
    return undefined
  }
  return value
}

const accessToken = (collector: IssueCollector, value: unknown): string => {
  if (value === undefined || value === null || value === "") {
    collector.add("required", "access_token", "access_token is required")
    return ""
  }
  if (typeof value !== "string") {
    collector.add("invalid_type", "access_token", "access_token must be a string")
    return ""
  }
  if (value.length < MIN_TOKEN_LENGTH || value.length > MAX_TOKEN_LENGTH) {
    collector.add("out_of_range", "access_token", `access_token must be ${MIN_TOKEN_LENGTH} to ${MAX_TOKEN_LENGTH} characters`)
  } else if (/\s/.test(value)) {
    collector.add("invalid_format", "access_token", "access_token must not contain whitespace")
  }
  return value
}

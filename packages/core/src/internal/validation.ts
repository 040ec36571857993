import { parsePhoneNumberFromString, type CountryCode } from "libphonenumber-js/max"
import type { InputIssue } from "../model/commonErrors.js"
import { MAX_NAME_LENGTH } from "../model/names.js"

/**
 * Collects the issues of one input while reading its fields, so every problem is
 * reported at once (docs/contacts.md "Rules": bulk import is all or nothing).
 */
export class IssueCollector {
  readonly issues: Array<InputIssue> = []

  add(code: string, field: string, message: string): void {
    this.issues.push({ code, field, message })
  }

  /** A required text: trimmed, 1 to `max` characters; a value of another type is `invalid_type`. */
  requiredText(field: string, value: unknown, max = MAX_NAME_LENGTH): string {
    if (this.wrongType(field, value)) return ""
    if (typeof value !== "string" || value.trim() === "") {
      this.add("required", field, `${field} is required`)
      return ""
    }
    return this.optionalText(field, value, max) ?? ""
  }

  /** An optional text: trimmed; empty becomes `null`; longer than `max` is an issue. */
  optionalText(field: string, value: unknown, max = MAX_NAME_LENGTH): string | null {
    if (value === null || value === undefined) return null
    if (typeof value !== "string") {
      this.add("invalid_type", field, `${field} must be a string`)
      return null
    }
    const trimmed = value.trim()
    if (trimmed.length > max) this.add("too_long", field, `${field} must be at most ${max} characters`)
    return trimmed === "" ? null : trimmed
  }

  /** A phone number normalised to E.164 (docs/contacts.md "Rules"), or an issue. */
  phone(field: string, value: unknown, defaultCountry: CountryCode | undefined): string {
    const read = this.phoneCandidate(field, value, defaultCountry)
    if (read.valid) return read.phone
    if (read.phone !== "") this.invalidPhone(field, read.phone)
    return ""
  }

  /**
   * A phone number normalised to E.164 (`valid: true`), or, when libphonenumber-js calls it
   * invalid, the text as given (`valid: false`) with no issue added: the caller accepts it
   * (docs/contacts.md "Unverified phones") or adds {@link IssueCollector.invalidPhone}. A
   * missing or non-string value is an issue and `phone: ""`.
   */
  phoneCandidate(
    field: string,
    value: unknown,
    defaultCountry: CountryCode | undefined
  ): { readonly phone: string; readonly valid: boolean } {
    if (this.wrongType(field, value)) return { phone: "", valid: false }
    if (typeof value !== "string" || value.trim() === "") {
      this.add("required", field, `${field} is required`)
      return { phone: "", valid: false }
    }
    const parsed = parsePhoneNumberFromString(value, defaultCountry)
    return parsed !== undefined && parsed.isValid() ? { phone: parsed.number, valid: true } : { phone: value, valid: false }
  }

  /** The issue of a phone number libphonenumber-js calls invalid. */
  invalidPhone(field: string, value: string): void {
    this.add("invalid_format", field, `${field} '${value}' is not a valid phone number`)
  }

  /** An optional e-mail address, trimmed; empty or `null` becomes `null`. */
  email(field: string, value: unknown): string | null {
    const text = this.optionalText(field, value)
    if (text !== null && !EMAIL.test(text)) this.add("invalid_format", field, `${field} must be an e-mail address`)
    return text
  }

  /** An optional uuid ({@link UUID_PATTERN}, lowercased); absent or `null` is `null`. */
  optionalUuid(field: string, value: unknown): string | null {
    if (value === null || value === undefined) return null
    if (typeof value !== "string" || !UUID_PATTERN.test(value)) {
      this.add("invalid_format", field, `${field} must be a uuid`)
      return null
    }
    return value.toLowerCase()
  }

  /** Adds `invalid_type` for a value present but not a string (`null` counts as absent). */
  private wrongType(field: string, value: unknown): boolean {
    if (value === null || value === undefined || typeof value === "string") return false
    this.add("invalid_type", field, `${field} must be a string`)
    return true
  }
}

/**
 * The shape of a WhatsApp sender id kept as an unverified phone (docs/contacts.md
 * "Unverified phones"): `+` and 1–20 digits.
 */
export const UNVERIFIED_PHONE = /^\+[0-9]{1,20}$/

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/

/** A UUID string of any version, as docs/http-api.md "Records and identifiers" requires for every `uuid`. */
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/** `value` is a plain JSON object (not `null`, not an array). */
export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/**
 * The array at `root[key]` of an import document: `[]` when the key is absent; `[]` with an
 * `invalid_type` issue at `key` when it is not an array.
 */
export const arrayAt = (collector: IssueCollector, root: Record<string, unknown>, key: string): ReadonlyArray<unknown> => {
  const value = root[key]
  if (value === undefined) return []
  if (!Array.isArray(value)) {
    collector.add("invalid_type", key, `${key} must be an array`)
    return []
  }
  return value
}

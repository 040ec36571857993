import { Context } from "effect"
import type { CountryCode } from "libphonenumber-js"

/**
 * Domain settings a host may change (docs/contacts.md "Rules"):
 * - `defaultCountry`: ISO 3166-1 alpha-2 code used to read phone numbers written without
 *   a country code (`"0612345678"` with `"NL"` → `+31612345678`). Default none: such
 *   numbers are invalid.
 *
 * Provide another value with `Layer.succeed(Settings, { defaultCountry: "US" })`.
 *
 * @category services
 */
export class Settings extends Context.Reference<Settings>()("@switchboard/core/Settings", {
  defaultValue: (): SettingsValue => ({ defaultCountry: undefined })
}) {}

/**
 * The value of {@link Settings}.
 *
 * @category services
 */
export interface SettingsValue {
  readonly defaultCountry: CountryCode | undefined
}

import type { CountryCode } from "libphonenumber-js"
import type { GroupId } from "../model/groups.js"
import { IssueCollector, UUID_PATTERN } from "../internal/validation.js"
import { CONTACT_DETAIL_FIELDS, type ContactDetails, type ContactImportInput, type ContactImportRow, type GroupReference } from "../model/contacts.js"
import { nameKey } from "../model/names.js"

/** An import row read from input, with the JSON path of each group entry. */
export interface ReadRow extends ContactImportRow {
  readonly groupFields: ReadonlyArray<string>
}

/**
 * Reads one bulk-import row (docs/contacts.md "Rules"),
 * adding an issue to `collector` for every bad field, named `<path>.<field>` (a row that
 * is not an object is one `invalid_type` issue at `<path>`). Fields other than those of
 * {@link ContactImportInput} are ignored.
 */
export const readImportRow = (
  collector: IssueCollector,
  path: string,
  input: ContactImportInput,
  defaultCountry: CountryCode | undefined
): ReadRow => {
  if (typeof input !== "object" || input === null || Array.isArray(input)) {
    collector.add("invalid_type", path, `${path} must be an object`)
    return { phone: "", details: {}, groups: [], groupFields: [] }
  }
  const phone = collector.phone(`${path}.phone`, input.phone, defaultCountry)
  const details: { -readonly [K in keyof ContactDetails]?: ContactDetails[K] } = {}
  for (const field of CONTACT_DETAIL_FIELDS) {
    const value = input[field]
    if (value === undefined) continue
    details[field] =
      field === "first_name"
        ? collector.requiredText(`${path}.${field}`, value)
        : field === "email"
          ? collector.email(`${path}.${field}`, value)
          : collector.optionalText(`${path}.${field}`, value)
  }
  if (input.first_name === undefined) collector.requiredText(`${path}.first_name`, undefined)
  const groups: Array<GroupReference> = []
  const groupFields: Array<string> = []
  const groupList = Array.isArray(input.group) ? input.group : []
  if (input.group !== undefined && !Array.isArray(input.group)) {
    collector.add("invalid_type", `${path}.group`, `${path}.group must be an array of strings`)
  } else if (groupList.length > MAX_GROUPS_PER_ROW) {
    collector.add("too_long", `${path}.group`, `${path}.group must name at most ${MAX_GROUPS_PER_ROW} groups`)
    return { phone, details, groups: [], groupFields: [] }
  }
  for (const [index, entry] of groupList.entries()) {
    const field = `${path}.group[${index}]`
    const name = collector.requiredText(field, entry)
    if (name === "") continue
    groups.push(UUID_PATTERN.test(name) ? { _tag: "ById", uuid: name.toLowerCase() as GroupId } : { _tag: "ByName", name })
    groupFields.push(field)
  }
  return { phone, details, groups, groupFields }
}

/** The most groups one import row may name in `group` (docs/contacts.md "Rules"). */
export const MAX_GROUPS_PER_ROW = 100

/**
 * Merges rows with the same phone (docs/contacts.md "Rules"): the later row's fields
 * overwrite, groups are added; the result keeps first-seen order. Also counts the
 * distinct group names (each may need a new uuid) and maps each group uuid to the path
 * of its first mention, for error messages.
 */
export const mergeRowsByPhone = (rows: ReadonlyArray<ReadRow>) => {
  const byPhone = new Map<string, { details: Partial<ContactDetails>; groups: Map<string, GroupReference> }>()
  const groupNames = new Set<string>()
  const groupFields = new Map<string, string>()
  for (const row of rows) {
    const merged = byPhone.get(row.phone) ?? { details: {}, groups: new Map<string, GroupReference>() }
    merged.details = { ...merged.details, ...row.details }
    row.groups.forEach((reference, index) => {
      const key = reference._tag === "ById" ? reference.uuid : `name:${nameKey(reference.name)}`
      if (!merged.groups.has(key)) merged.groups.set(key, reference)
      if (reference._tag === "ByName") groupNames.add(nameKey(reference.name))
      else if (!groupFields.has(reference.uuid)) groupFields.set(reference.uuid, row.groupFields[index] ?? "contacts")
    })
    byPhone.set(row.phone, merged)
  }
  const merged: Array<ContactImportRow> = [...byPhone].map(([phone, { details, groups }]) => ({
    phone,
    details,
    groups: [...groups.values()]
  }))
  return { rows: merged, groupNames: groupNames.size, groupFields }
}

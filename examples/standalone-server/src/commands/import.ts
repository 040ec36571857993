import { readFile } from "node:fs/promises"
import { Imports, InvalidInput, Organizations, parseJsonInput, type OrganizationId } from "@switchboard/core"
import type { Command } from "commander"
import { Effect, Either } from "effect"
import { parseUuid, runAdminCommand } from "./admin.js"

/**
 * Registers `import --org ID --file F.json` (docs/import.md): imports groups,
 * labels, contacts, templates, basic replies and chats with their messages from a JSON
 * file into the organization, all or nothing, and prints `{groups: {name: uuid}, labels:
 * {name: uuid}, contacts: {phone: uuid}, templates: {"name/language": uuid},
 * basic_replies: {trigger: uuid}, chats: {phone: uuid}}` with keys as written in the file.
 * Existing records are matched (a chat by its contact: attributes given are set, only
 * messages it does not hold are appended), so running one file twice duplicates nothing.
 * A file that cannot be read or parsed, any invalid entry, or contacts over the plan's
 * `contacts_limit` print the problems on stderr and exit 1 with nothing written.
 *
 * @category cli
 */
export const registerImportCommand = (program: Command): void => {
  program
    .command("import")
    .description("import groups, labels, contacts, templates, basic replies and chats (with messages) from a JSON file; prints the uuids created or matched")
    .requiredOption("--org <org_id>", "organization id", parseUuid)
    .requiredOption("--file <path>", "JSON file in the import format (docs/import.md)")
    .action((options: { readonly org: string; readonly file: string }) =>
      runAdminCommand(
        Effect.gen(function* () {
          const organization = yield* (yield* Organizations).get(options.org as OrganizationId)
          const document = yield* readJsonFile(options.file)
          const imports = yield* Imports
          return yield* imports.importDocument(organization.id, document)
        })
      )
    )
}

/**
 * Reads the import file with the rules of a request body (docs/errors.md "Limits"): strict
 * UTF-8, no `__proto__` keys, at most 64 levels of nesting; any problem is one
 * `invalid_file` issue and nothing is imported.
 */
const readJsonFile = (path: string) =>
  Effect.tryPromise({
    try: () => readFile(path),
    catch: (error) => invalidFile(`cannot read ${path}: ${error instanceof Error ? error.message : String(error)}`)
  }).pipe(
    Effect.flatMap((bytes) =>
      Either.match(parseJsonInput(bytes), {
        onLeft: (problem) => Effect.fail(invalidFile(`${path} ${problem.message}`)),
        onRight: (document) => Effect.succeed(document)
      })
    )
  )

const invalidFile = (message: string) => new InvalidInput({ issues: [{ code: "invalid_file", field: "file", message }] })

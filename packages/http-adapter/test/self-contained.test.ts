/**
 * The repository is self-contained: no tracked file (outside `.changeset/` and
 * `package-lock.json`) cites the team's specification, design or style files, which a
 * clone does not have — by section (the file's name in capitals, then `§` and a number),
 * by file name (`<NAME>.md`), or by a relative path climbing to a folder named `shared`
 * (the repository has no folder of that name, so such a path always leaves it). Behaviour
 * is cited from the project's own `docs/` pages instead (docs/README.md lists them).
 *
 * The tracked files come from `git ls-files`; without git or a `.git` directory the test
 * is skipped and says why. The patterns are built from pieces so this file does not match
 * them itself. Lives in the http-adapter project beside the other repository-wide check
 * (packaging.test.ts).
 */
import { execFileSync } from "node:child_process"
import { existsSync, readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const root = fileURLToPath(new URL("../../../", import.meta.url))

/** The names of the team's files outside the repository, in pieces. */
const teamFiles = ["SP" + "EC", "DE" + "SIGN", "ST" + "YLE"].join("|")
/** `<NAME> §4`, `<NAME>§3b` or `<NAME>.md`. */
const citation = new RegExp(`\\b(?:${teamFiles})(?: ?\\u00a7|\\.md\\b)`)
/** A relative path climbing to a folder named `shared`. */
const sharedPath = new RegExp("\\.\\./" + "sha" + "red\\b")

/** Tracked files, or why they cannot be listed. */
const listTrackedFiles = (): { readonly files: ReadonlyArray<string> } | { readonly skip: string } => {
  if (!existsSync(`${root}.git`)) return { skip: `no .git at ${root}` }
  try {
    const out = execFileSync("git", ["ls-files", "-z"], { cwd: root, encoding: "utf8", maxBuffer: 64 * 1024 * 1024 })
    return { files: out.split("\0").filter((file) => file !== "") }
  } catch (error) {
    return { skip: `git ls-files failed: ${(error as Error).message}` }
  }
}

/** Whether a tracked file counts: everything but `.changeset/` and `package-lock.json`. */
const counts = (file: string) => !file.startsWith(".changeset/") && file !== "package-lock.json"

/** The offending lines of one file's text, as `path:line: text`. */
const offendingLines = (file: string, text: string): Array<string> => {
  const offences: Array<string> = []
  text.split("\n").forEach((line, index) => {
    if (sharedPath.test(line) || citation.test(line)) offences.push(`${file}:${index + 1}: ${line.trim()}`)
  })
  return offences
}

/** Whether a buffer looks binary (a NUL byte in its first 8000 bytes, as git decides). */
const isBinary = (content: Buffer) => content.subarray(0, 8000).includes(0)

const listing = listTrackedFiles()
if ("skip" in listing) console.warn(`self-contained.test.ts skipped: ${listing.skip}`)

describe("the repository cites only itself", () => {
  it("finds section citations, file names and shared paths, and nothing else", () => {
    const spec = "SP" + "EC"
    const design = "DE" + "SIGN"
    const up = "../"
    const text = [
      `the envelope (${spec} \u00a77)`,
      `checks (${design}\u00a73b "Lists")`,
      `see ${design}.md`,
      `specified in \`${up}${"sha" + "red"}/${spec}.md\``,
      `import { Page } from "${up}${"sha" + "red"}/model.js"`,
      `a ${spec}IAL case, a ${design}ER, docs/errors.md "Validation"`
    ].join("\n")
    expect(offendingLines("packages/core/src/chats/a.ts", text).map((line) => line.split(":")[1])).toEqual([
      "1",
      "2",
      "3",
      "4",
      "5"
    ])
  })

  it.skipIf("skip" in listing)("no tracked file outside .changeset/ cites a file a clone does not have", () => {
    const files = "files" in listing ? listing.files : []
    const offences = files
      .filter(counts)
      .filter((file) => existsSync(`${root}${file}`))
      .flatMap((file) => {
        const content = readFileSync(`${root}${file}`)
        return isBinary(content) ? [] : offendingLines(file, content.toString("utf8"))
      })
    expect(files.length).toBeGreaterThan(0)
    expect(offences, `cite docs/ pages instead:\n${offences.join("\n")}`).toEqual([])
  })
})

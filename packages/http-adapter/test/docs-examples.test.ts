/**
 * The examples of README.md and docs/*.md keep the convention docs/README.md "Examples on
 * these pages" states: each is whole or marked as a fragment.
 * - A TypeScript or JavaScript block is a program the suite runs (`ts run`, `js run`:
 *   docs-programs.test.ts) or starts with a `// Fragment: …` line.
 * - A shell block (`sh`, `bash`) starts with a `# Fragment: …` line, or uses no shell
 *   variable that neither it nor an earlier shell block of the same page sets (a use with a
 *   default, `${PORT:-3000}`, needs none). Single-quoted text, comments and the bodies of
 *   quoted here-documents are not read (`jq '.data as $p'` uses no variable).
 * - A Python block starts with `# Fragment: …` or is a whole program (not checked further).
 * And the package tables (README.md "Packages", docs/getting-started.md "Install") name
 * every package of packages/*; the README's names every example of examples/*.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const root = fileURLToPath(new URL("../../../", import.meta.url))

/** README.md and every docs/*.md, relative to the root. */
const markdownFiles = ["README.md", ...readdirSync(join(root, "docs")).filter((name) => name.endsWith(".md")).map((name) => `docs/${name}`)]

/** A fenced code block: its info string, its first line (1-based) and its text. */
interface Block {
  readonly info: string
  readonly line: number
  readonly text: string
}

/** The fenced code blocks of a Markdown text, in order (an info string holds no backtick: "```` ```ts ````" is text). */
const blocksOf = (markdown: string): Array<Block> => {
  const lines = markdown.split("\n")
  const blocks: Array<Block> = []
  for (let index = 0; index < lines.length; index++) {
    const opening = /^```([^`]*)$/.exec(lines[index]!)
    if (opening === null) continue
    const end = lines.indexOf("```", index + 1)
    if (end === -1) throw new Error(`line ${index + 1}: a code block that never closes`)
    blocks.push({ info: opening[1]!.trim(), line: index + 1, text: lines.slice(index + 1, end).join("\n") })
    index = end
  }
  return blocks
}

/** Names the shell sees in use; the caller's environment is not assumed, only these. */
const ALWAYS_SET = new Set(["HOME", "PATH", "PWD"])

/**
 * What a shell script reads and sets: variables used (`$NAME`, `${NAME}`, not `${NAME:-…}`
 * and its kin) and variables set (`NAME=`, `for NAME in`, `read NAME`). Single-quoted text,
 * comments and quoted here-document bodies are skipped.
 */
const shellVariables = (script: string): { readonly used: Set<string>; readonly set: Set<string> } => {
  const used = new Set<string>()
  const set = new Set<string>()
  let visible = ""
  let inSingle = false
  let heredocEnd: string | undefined
  for (const line of script.split("\n")) {
    if (heredocEnd !== undefined) {
      if (line.trim() === heredocEnd) heredocEnd = undefined
      continue
    }
    let kept = ""
    for (let index = 0; index < line.length; index++) {
      const char = line[index]!
      if (inSingle) {
        if (char === "'") inSingle = false
        continue
      }
      if (char === "\\") {
        kept += line.slice(index, index + 2)
        index++
      } else if (char === "'") {
        inSingle = true
        kept += "''"
      } else if (char === "#" && (index === 0 || /\s/.test(line[index - 1]!))) {
        break
      } else kept += char
    }
    const quotedHeredoc = /<<-?\s*(['"])(\w+)\1/.exec(line)
    if (quotedHeredoc !== null) heredocEnd = quotedHeredoc[2]
    visible += `${kept}\n`
  }
  for (const match of visible.matchAll(/\$\{([A-Za-z_]\w*)(:?[-=?+])?|\$([A-Za-z_]\w*)/g)) {
    const name = match[1] ?? match[3]!
    if (match[2] === undefined) used.add(name)
  }
  for (const match of visible.matchAll(/(?:^|[\s;&|(`])([A-Za-z_]\w*)=/gm)) set.add(match[1]!)
  for (const match of visible.matchAll(/\bfor\s+([A-Za-z_]\w*)\s+in\b/g)) set.add(match[1]!)
  for (const match of visible.matchAll(/\bread\s+(?:-\w+\s+)*([A-Za-z_]\w*)/g)) set.add(match[1]!)
  return { used, set }
}

/** The examples of one page that break the convention, as `file:line: why`. */
const offencesOf = (file: string, markdown: string): Array<string> => {
  const offences: Array<string> = []
  const setOnPage = new Set<string>()
  for (const block of blocksOf(markdown)) {
    const language = block.info.split(/\s+/)[0]
    const fragment = (marker: string) => block.text.startsWith(`${marker} Fragment: `)
    if (language === "ts" || language === "js") {
      if (!/^(ts|js) run\b/.test(block.info) && !fragment("//")) {
        offences.push(`${file}:${block.line}: a ${language} block neither \`${language} run\` nor starting with "// Fragment: "`)
      }
    } else if (language === "sh" || language === "bash") {
      const { used, set } = shellVariables(block.text)
      for (const name of set) setOnPage.add(name)
      if (fragment("#")) continue
      const unset = [...used].filter((name) => !setOnPage.has(name) && !ALWAYS_SET.has(name))
      if (unset.length > 0) {
        offences.push(`${file}:${block.line}: uses ${unset.map((name) => `$${name}`).join(", ")}, set by no earlier block of the page: set it or start with "# Fragment: "`)
      }
    } else if (language === "python" && block.text.includes("Fragment") && !fragment("#")) {
      offences.push(`${file}:${block.line}: a fragment marker not on the first line`)
    }
  }
  return offences
}

describe("the examples of the documentation: whole or marked as fragments (docs/README.md)", () => {
  it("reads shell variables as the shell would, past quotes, comments and quoted here-documents", () => {
    const { used, set } = shellVariables(
      [
        'API="http://127.0.0.1:${PORT:-3000}/api/v1/api"',
        "curl -s \"$API/chats\" -H \"$AUTH\" | jq '.data as $p | $p' # $COMMENT",
        "ID=$(node -pe 'JSON.parse(process.argv[1]).data.uuid' \"$ANSWER\")",
        "cat > data/x.json <<'JSON'",
        '{ "text": "$NOT_A_VARIABLE" }',
        "JSON",
        'for attempt in 1 2; do echo "${attempt}"; done',
        "curl -d '{\"a\": 1,",
        "  \"b\": \"$STILL_QUOTED\"}' -d \"{\\\"tag\\\": \\\"$LABEL\\\"}\""
      ].join("\n")
    )
    expect([...used].sort()).toEqual(["ANSWER", "API", "AUTH", "LABEL", "attempt"])
    expect([...set].sort()).toEqual(["API", "ID", "attempt"])
  })

  it("finds an unmarked program, an unmarked block using a variable no block set, and accepts the marked and the whole", () => {
    const page = [
      "```sh",
      'API="http://127.0.0.1:${PORT:-3000}/api/v1/api"',
      "```",
      "```sh",
      'curl -s "$API/chats" -H "$AUTH"',
      "```",
      "```sh",
      "# Fragment: $CHAT is a chat's uuid",
      'curl -s "$API/chats/$CHAT"',
      "```",
      "```ts",
      "const handler = createHandler({ storage })",
      "```",
      "```ts",
      "// Fragment: storage is yours",
      "const handler = createHandler({ storage })",
      "```"
    ].join("\n")
    expect(offencesOf("docs/x.md", page)).toEqual([
      'docs/x.md:4: uses $AUTH, set by no earlier block of the page: set it or start with "# Fragment: "',
      'docs/x.md:11: a ts block neither `ts run` nor starting with "// Fragment: "'
    ])
  })

  it.each(markdownFiles)("%s keeps the convention", (file) => {
    expect(offencesOf(file, readFileSync(join(root, file), "utf8"))).toEqual([])
  })

  it("docs/README.md states the convention", () => {
    const index = readFileSync(join(root, "docs/README.md"), "utf8")
    expect(index).toContain("## Examples on these pages")
    expect(index).toContain("`// Fragment: …`")
    expect(index).toContain("`# Fragment: …`")
  })
})

describe("the package tables name every package", () => {
  const packageNames = readdirSync(join(root, "packages"))
    .filter((directory) => existsSync(join(root, "packages", directory, "package.json")))
    .map((directory) => (JSON.parse(readFileSync(join(root, "packages", directory, "package.json"), "utf8")) as { name: string }).name)
  const examples = readdirSync(join(root, "examples")).filter((directory) => existsSync(join(root, "examples", directory, "package.json")))

  /** The first cells of a page's table whose header starts with `| package |`. */
  const packageTable = (file: string): Array<string> => {
    const lines = readFileSync(join(root, file), "utf8").split("\n")
    const header = lines.findIndex((line) => line.startsWith("| package |"))
    if (header < 0) throw new Error(`${file} has no table headed "| package |"`)
    const rows: Array<string> = []
    for (let index = header + 2; index < lines.length && lines[index]!.startsWith("|"); index++) {
      rows.push(lines[index]!.slice(1).split("|")[0]!.trim())
    }
    return rows
  }

  it.each(["README.md", "docs/getting-started.md"])("%s", (file) => {
    const rows = packageTable(file).join(" ")
    expect(packageNames.length).toBeGreaterThan(5)
    expect(packageNames.filter((name) => !rows.includes(`\`${name}\``))).toEqual([])
  })

  it("README.md names every example too", () => {
    const rows = packageTable("README.md").join(" ")
    expect(examples.filter((example) => !rows.includes(`examples/${example}`))).toEqual([])
  })
})

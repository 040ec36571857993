// Placeholders `{{n}}` of template texts (docs/templates-and-replies.md). Internal to
// the templates module: not exported from the package.

/** Anything written between double braces: a placeholder, or a malformed one. */
const BRACED = /\{\{([^{}]*)\}\}/g

/** A well-formed placeholder: `{{n}}` with `n` a positive integer without leading zero. */
const PLACEHOLDER = /\{\{([1-9][0-9]*)\}\}/g

/**
 * Reads the placeholders of `text`. `count` is the number of parameters the text takes
 * (the highest `n`); `problem` describes why the placeholders are invalid: a braced value
 * that is not a positive integer (`{{name}}`, `{{0}}`, `{{ 1 }}`), or numbers that do not
 * run from `{{1}}` without gaps. A number may appear more than once; one parameter fills
 * every occurrence.
 */
export const placeholdersOf = (text: string): { readonly count: number; readonly problem?: string } => {
  const numbers = new Set<number>()
  for (const match of text.matchAll(BRACED)) {
    const inner = match[1] ?? ""
    if (!/^[1-9][0-9]*$/.test(inner)) return { count: 0, problem: `'{{${inner}}}' is not a placeholder such as {{1}}` }
    numbers.add(Number(inner))
  }
  const count = numbers.size === 0 ? 0 : Math.max(...numbers)
  if (numbers.size !== count) {
    return { count, problem: `placeholders must be numbered from {{1}} to {{${count}}} without gaps` }
  }
  return { count }
}

/** `text` with every `{{n}}` replaced by `values[n - 1]`, in one pass (values are not re-read). */
export const render = (text: string, values: ReadonlyArray<string>): string =>
  text.replace(PLACEHOLDER, (whole, n: string) => values[Number(n) - 1] ?? whole)

/** Iterating a list operation over every page (docs/client.md "Paging"). */

/**
 * The `pagination` object of a list's data: offset pages (`page`, `per_page`, `total`,
 * `total_pages`) or cursor pages (`mode: "cursor"`, `next_cursor`, `has_more`).
 */
interface Pagination {
  readonly mode?: string
  readonly page?: number
  readonly total_pages?: number
  readonly next_cursor?: string | null
  readonly has_more?: boolean
}

/**
 * The query of the page after the one whose data is `data` and whose query was `query`:
 * the next `cursor` when the list pages by cursor and has more, the next `page` when it pages
 * by offset and is not on the last; `undefined` on the last page (or a list that does not page).
 *
 * @category paging
 */
export const nextPageQuery = (
  data: unknown,
  query: Record<string, unknown> | undefined
): Record<string, unknown> | undefined => {
  const pagination = (data as { pagination?: Pagination } | null)?.pagination
  if (pagination === undefined || pagination === null) return undefined
  if (pagination.mode === "cursor" || "next_cursor" in pagination) {
    if (pagination.has_more === false || typeof pagination.next_cursor !== "string") return undefined
    return { ...query, cursor: pagination.next_cursor }
  }
  if (typeof pagination.page === "number" && typeof pagination.total_pages === "number" && pagination.page < pagination.total_pages) {
    return { ...query, page: pagination.page + 1 }
  }
  return undefined
}

/**
 * What a list method answers: an async iterable of the items of every page, fetched a page
 * at a time as the loop asks for them; `pages()` iterates the pages' data themselves (each
 * with its `requestId`).
 *
 * @category paging
 */
export interface List<Item, Page> extends AsyncIterable<Item> {
  /** Every page's data, first to last. */
  readonly pages: () => AsyncIterableIterator<Page>
}

/**
 * A {@link List} fetching each page with `fetchPage(query)` and taking its items from `data[itemsKey]`.
 *
 * @category paging
 */
export const makeList = <Item, Page>(
  fetchPage: (query: Record<string, unknown> | undefined) => Promise<Page>,
  itemsKey: string,
  query: Record<string, unknown> | undefined
): List<Item, Page> => {
  const pages = async function* (): AsyncIterableIterator<Page> {
    for (let next: Record<string, unknown> | undefined = query, first = true; first || next !== undefined; first = false) {
      const data: Page = await fetchPage(next)
      yield data
      next = nextPageQuery(data, next)
    }
  }
  return {
    pages,
    async *[Symbol.asyncIterator]() {
      for await (const page of pages()) {
        const items = (page as Record<string, unknown> | null)?.[itemsKey]
        if (Array.isArray(items)) yield* items as Array<Item>
      }
    }
  }
}

/** The next page of a list (docs/client.md "Paging"): by cursor where the route pages by cursor, by page number where by offset. */
import { describe, expect, it } from "vitest"
import { makeList, nextPageQuery } from "../src/paging.js"

describe("nextPageQuery", () => {
  it("follows next_cursor while has_more, keeping the other parameters", () => {
    const data = { chats: [], pagination: { mode: "cursor", limit: 2, next_cursor: "abc", has_more: true } }
    expect(nextPageQuery(data, { limit: 2, status: "open" })).toEqual({ limit: 2, status: "open", cursor: "abc" })
    expect(nextPageQuery({ pagination: { mode: "cursor", next_cursor: null, has_more: false } }, { limit: 2 })).toBeUndefined()
    expect(nextPageQuery({ pagination: { next_cursor: "x", has_more: false } }, undefined)).toBeUndefined()
  })

  it("asks for the next page number until total_pages", () => {
    expect(nextPageQuery({ pagination: { page: 1, per_page: 100, total: 250, total_pages: 3 } }, { per_page: 100 })).toEqual({ per_page: 100, page: 2 })
    expect(nextPageQuery({ pagination: { page: 3, per_page: 100, total: 250, total_pages: 3 } }, { per_page: 100, page: 3 })).toBeUndefined()
    expect(nextPageQuery({ pagination: { page: 1, per_page: 20, total: 0, total_pages: 0 } }, undefined)).toBeUndefined()
  })

  it("stops after one page of a list that does not page", () => {
    expect(nextPageQuery({ channels: [] }, undefined)).toBeUndefined()
  })
})

describe("makeList", () => {
  it("yields every item of every page in order, fetching a page only when the loop needs it", async () => {
    const asked: Array<unknown> = []
    const pages: Record<string, { items: Array<number>; pagination: Record<string, unknown> }> = {
      first: { items: [1, 2], pagination: { mode: "cursor", next_cursor: "b", has_more: true } },
      b: { items: [3, 4], pagination: { mode: "cursor", next_cursor: "c", has_more: true } },
      c: { items: [5], pagination: { mode: "cursor", next_cursor: null, has_more: false } }
    }
    const list = makeList<number, (typeof pages)[string]>(async (query) => {
      asked.push(query)
      return pages[(query?.cursor as string | undefined) ?? "first"]!
    }, "items", { limit: 2 })
    const items: Array<number> = []
    for await (const item of list) items.push(item)
    expect(items).toEqual([1, 2, 3, 4, 5])
    expect(asked).toEqual([{ limit: 2 }, { limit: 2, cursor: "b" }, { limit: 2, cursor: "c" }])
    asked.length = 0
    for await (const item of list) if (item === 2) break
    expect(asked).toHaveLength(1)
  })
})

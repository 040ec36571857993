import { afterAll, describe, expect, it } from "vitest"
import { makeHandler, makeSharedStorage, makeTenant, UNKNOWN_UUID, type ApiClient } from "./helpers.js"

const storage = makeSharedStorage()
const handler = makeHandler(storage)
afterAll(() => handler.dispose())

const tenant = async () => (await makeTenant(storage, handler)).api

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/

const hours = { name: "Hours", trigger: "Opening hours", response: "We are open 9–17, Monday to Friday." }

const createReply = async (api: ApiClient, body: Record<string, unknown>) => {
  const result = await api.post("/basic-replies", body)
  expect(result.status, JSON.stringify(result.errors)).toBe(200)
  return result.data as { id: string; message: string; uuid: string; name: string; trigger: string; response: string }
}

const replyCount = async (api: ApiClient) => (await api.get("/basic-replies")).data.pagination.total as number

describe("POST /basic-replies (docs/templates-and-replies.md)", () => {
  it("creates a reply: data {id, message, ...reply}, fields trimmed, unknown fields dropped", async () => {
    const api = await tenant()
    const result = await api.post("/basic-replies", {
      name: "  Hours ",
      trigger: " Opening hours ",
      response: " Open 9–17. ",
      uuid: UNKNOWN_UUID,
      organization_id: UNKNOWN_UUID
    })
    expect(result.status).toBe(200)
    expect(result.data).toEqual({
      id: result.data.uuid,
      message: "Basic reply created",
      uuid: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: "Hours",
      trigger: "Opening hours",
      response: "Open 9–17.",
      created_at: expect.stringMatching(ISO_UTC),
      updated_at: expect.stringMatching(ISO_UTC)
    })
    expect(result.data.uuid).not.toBe(UNKNOWN_UUID)
    const { id: _, message: __, ...reply } = result.data
    expect((await api.get(`/basic-replies/${reply.uuid}`)).data).toEqual(reply)
  })

  it("400 for a missing, blank or non-string field, naming each one; nothing created", async () => {
    const api = await tenant()
    for (const [body, expected] of [
      [{}, [["required", "name"], ["required", "trigger"], ["required", "response"]]],
      [{ ...hours, name: " " }, [["required", "name"]]],
      [{ ...hours, trigger: "" }, [["required", "trigger"]]],
      [{ ...hours, response: "\n" }, [["required", "response"]]],
      [{ ...hours, trigger: 12 }, [["invalid_type", "trigger"]]],
      [{ ...hours, response: null }, [["required", "response"]]],
      [{ name: ["Hours"], trigger: "a", response: "b" }, [["invalid_type", "name"]]]
    ] as const) {
      const result = await api.post("/basic-replies", body)
      expect(result.status, JSON.stringify(body)).toBe(400)
      expect(result.errors.map(({ code, field }) => [code, field]), JSON.stringify(body)).toEqual(expected)
    }
    expect(await replyCount(api)).toBe(0)
  })

  it("name and trigger up to 255 characters, response up to 4096; longer → 400 too_long", async () => {
    const api = await tenant()
    await createReply(api, { name: ` ${"n".repeat(255)} `, trigger: "t".repeat(255), response: "r".repeat(4096) })
    const result = await api.post("/basic-replies", { name: "n".repeat(256), trigger: "u".repeat(256), response: "r".repeat(4097) })
    expect(result.status).toBe(400)
    expect(result.errors.map(({ code, field }) => [code, field])).toEqual([
      ["too_long", "name"],
      ["too_long", "trigger"],
      ["too_long", "response"]
    ])
    expect(await replyCount(api)).toBe(1)
  })

  it("400 trigger_taken for a trigger already used, case-insensitively after trimming; names may repeat", async () => {
    const api = await tenant()
    await createReply(api, hours)
    for (const trigger of ["Opening hours", "OPENING HOURS", "  opening hours "]) {
      const result = await api.post("/basic-replies", { ...hours, trigger })
      expect(result.status, trigger).toBe(400)
      expect(result.errors).toEqual([{ code: "trigger_taken", field: "trigger", message: expect.any(String) }])
    }
    await createReply(api, { ...hours, trigger: "hours" })
    expect(await replyCount(api)).toBe(2)
  })
})

describe("GET /basic-replies and GET /basic-replies/{uuid}", () => {
  it("lists {basic_replies, pagination} newest first, paginated; past the end is an empty 200; bad values → 400", async () => {
    const api = await tenant()
    for (let n = 0; n < 5; n++) await createReply(api, { ...hours, trigger: `t${n}` })
    const first = await api.get("/basic-replies")
    expect(Object.keys(first.data).sort()).toEqual(["basic_replies", "pagination"])
    expect(first.data.pagination).toEqual({ page: 1, per_page: 20, total: 5, total_pages: 1 })
    expect(first.data.basic_replies.map((reply: { trigger: string }) => reply.trigger)).toEqual(["t4", "t3", "t2", "t1", "t0"])
    expect(Object.keys(first.data.basic_replies[0]).sort()).toEqual(["created_at", "name", "response", "trigger", "updated_at", "uuid"])
    const second = await api.get("/basic-replies?page=2&per_page=2")
    expect(second.data.basic_replies.map((reply: { trigger: string }) => reply.trigger)).toEqual(["t2", "t1"])
    expect(second.data.pagination).toEqual({ page: 2, per_page: 2, total: 5, total_pages: 3 })
    expect((await api.get("/basic-replies?page=9")).data.basic_replies).toEqual([])
    for (const query of ["page=0", "per_page=101", "per_page=1.5"]) {
      expect((await api.get(`/basic-replies?${query}`)).status, query).toBe(400)
    }
  })

  it("reads one reply; 404 not_found for an unknown uuid; 400 for a malformed one", async () => {
    const api = await tenant()
    const { id: _, message: __, ...reply } = await createReply(api, hours)
    expect((await api.get(`/basic-replies/${reply.uuid}`)).data).toEqual(reply)
    const unknown = await api.get(`/basic-replies/${UNKNOWN_UUID}`)
    expect(unknown.status).toBe(404)
    expect(unknown.errors.map((error) => error.code)).toEqual(["not_found"])
    const malformed = await api.get("/basic-replies/hours")
    expect(malformed.status).toBe(400)
    expect(malformed.errors[0]?.field).toBe("uuid")
  })
})

describe("basic replies: tenant isolation", () => {
  it("another organization cannot read or list a reply, and may use the same trigger", async () => {
    const owner = await tenant()
    const intruder = await tenant()
    const reply = await createReply(owner, hours)
    const read = await intruder.get(`/basic-replies/${reply.uuid}`)
    expect(read.status).toBe(404)
    expect(read.errors.map((error) => error.code)).toEqual(["not_found"])
    expect((await intruder.get("/basic-replies")).data).toEqual({
      basic_replies: [],
      pagination: { page: 1, per_page: 20, total: 0, total_pages: 0 }
    })
    const theirs = await createReply(intruder, { ...hours, trigger: "OPENING HOURS" })
    expect((await intruder.get("/basic-replies")).data.basic_replies.map((r: { uuid: string }) => r.uuid)).toEqual([theirs.uuid])
    expect((await owner.get("/basic-replies")).data.basic_replies.map((r: { uuid: string }) => r.uuid)).toEqual([reply.uuid])
  })
})

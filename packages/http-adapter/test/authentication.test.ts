import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { bearer, createOrganization, makeHandler, makeSharedStorage, request, revokeKey } from "./helpers.js"

const storage = makeSharedStorage()
const handler = makeHandler(storage)
let apiKey = ""
let organizationId = ""

beforeAll(async () => {
  const created = await createOrganization(storage, { name: "Acme" })
  apiKey = created.key.api_key
  organizationId = created.organization.id
})
afterAll(() => handler.dispose())

const verify = (headers: Record<string, string>) =>
  request(handler, { method: "GET", url: "/api/v1/api/verify", headers })

const expectUnauthorized = async (headers: Record<string, string>, code: string) => {
  const response = await verify(headers)
  expect(response.statusCode).toBe(401)
  const body = response.json()
  expect(body).toMatchObject({ status: 401, success: false, data: null })
  expect(body.errors).toEqual([{ code, message: body.message }])
  expect(typeof body.message).toBe("string")
}

describe("authentication (docs/http-adapter.md)", () => {
  it("GET /verify answers 200 in the envelope with the organization", async () => {
    const response = await verify(bearer(apiKey))
    expect(response.statusCode).toBe(200)
    expect(response.headers["content-type"]).toBe("application/json; charset=utf-8")
    expect(response.json()).toEqual({
      status: 200,
      success: true,
      message: "API key is valid",
      data: { message: "API key is valid", organization: { id: organizationId, name: "Acme" } },
      errors: []
    })
  })

  it("accepts the scheme name in any case", async () => {
    expect((await verify({ authorization: `bearer ${apiKey}` })).statusCode).toBe(200)
  })

  it("401 missing_api_key without an Authorization header or without a token", async () => {
    await expectUnauthorized({}, "missing_api_key")
    await expectUnauthorized({ authorization: "" }, "missing_api_key")
    await expectUnauthorized({ authorization: "Bearer" }, "missing_api_key")
    await expectUnauthorized({ authorization: "Bearer    " }, "missing_api_key")
  })

  it("401 wrong_auth_scheme for Basic, Token and other schemes", async () => {
    await expectUnauthorized({ authorization: `Basic ${Buffer.from("a:b").toString("base64")}` }, "wrong_auth_scheme")
    await expectUnauthorized({ authorization: `Token ${apiKey}` }, "wrong_auth_scheme")
    await expectUnauthorized({ authorization: apiKey }, "wrong_auth_scheme")
  })

  it("401 jwt_not_accepted for a bearer token shaped like a JWT", async () => {
    const part = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url")
    const jwt = `${part({ alg: "HS256", typ: "JWT" })}.${part({ sub: "user-1" })}.c2lnbmF0dXJl`
    await expectUnauthorized(bearer(jwt), "jwt_not_accepted")
    const unsigned = `${part({ alg: "none" })}.${part({ sub: "user-1" })}.`
    await expectUnauthorized(bearer(unsigned), "jwt_not_accepted")
  })

  it("a dotted token whose first part is not a JSON header is just an invalid key", async () => {
    await expectUnauthorized(bearer("abc.def.ghi"), "invalid_api_key")
  })

  it("401 invalid_api_key for an unknown key", async () => {
    await expectUnauthorized(bearer(apiKey.slice(0, -1) + (apiKey.endsWith("A") ? "B" : "A")), "invalid_api_key")
    await expectUnauthorized(bearer("sb_unknown"), "invalid_api_key")
  })

  it("401 invalid_api_key for a revoked key, while the organization's other keys still work", async () => {
    const { organization, key } = await createOrganization(storage, { name: "Revoking" })
    expect((await verify(bearer(key.api_key))).statusCode).toBe(200)
    await revokeKey(storage, key.key_id)
    await expectUnauthorized(bearer(key.api_key), "invalid_api_key")
    expect(organization.subscription).toBe("active")
  })

  it("403 subscription_inactive for an organization whose subscription is not active", async () => {
    const { key } = await createOrganization(storage, { name: "Lapsed", subscription: "inactive" })
    const response = await verify(bearer(key.api_key))
    expect(response.statusCode).toBe(403)
    expect(response.json()).toMatchObject({ status: 403, success: false, data: null, errors: [{ code: "subscription_inactive" }] })
  })

  it("403 api_access_not_allowed for a plan without API access", async () => {
    const { key } = await createOrganization(storage, { name: "Basic plan", plan: { api_access: false } })
    const response = await verify(bearer(key.api_key))
    expect(response.statusCode).toBe(403)
    expect(response.json()).toMatchObject({ status: 403, errors: [{ code: "api_access_not_allowed" }] })
  })

  it("never echoes the key in a response", async () => {
    const response = await verify(bearer(apiKey))
    expect(response.body).not.toContain(apiKey)
    const failed = await verify(bearer(apiKey + "x"))
    expect(failed.body).not.toContain(apiKey)
  })
})

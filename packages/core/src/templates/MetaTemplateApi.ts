import { Context, Effect, Layer } from "effect"
import type { ChannelsService } from "../channels/Channels.js"
import {
  graphAnsweredStatus,
  type GraphApiOptions,
  graphSignal,
  graphUnreachable,
  graphUrl,
  networkErrorCode,
  withoutSecret
} from "../channels/graphApi.js"
import { MetaTemplateCallFailed } from "../model/metaTemplateErrors.js"
import type { OrganizationId } from "../model/organizations.js"
import { NoChannelForAccount } from "../model/templateErrors.js"
import type { StorageError } from "../storage/errors.js"
import { Storage } from "../storage/Storage.js"
import type { SecretKeyMismatch, SecretKeyMissing } from "../model/channelErrors.js"

/**
 * The WhatsApp Business Account a template call acts on, and the access token of one of
 * its numbers (sent as `Authorization: Bearer`, never logged nor named in a failure).
 *
 * @category templates
 */
export interface MetaTemplateAccount {
  readonly waba_id: string
  readonly access_token: string
}

/**
 * One page of an account's templates as Meta lists them: `templates`, each Meta's raw
 * object (`name`, `language`, `status`, `category`, `components`, `rejected_reason`, `id`),
 * and `after`, the cursor of the next page, `null` on the last.
 *
 * @category templates
 */
export interface MetaTemplatePage {
  readonly templates: ReadonlyArray<unknown>
  readonly after: string | null
}

/**
 * A template as submitted to Meta: Meta's management shape, `components` as given.
 *
 * @category templates
 */
export interface MetaTemplateSubmission {
  readonly name: string
  readonly language: string
  readonly category: string
  readonly components: ReadonlyArray<unknown>
}

/**
 * What Meta answered a submission: its template `id`, `status` (usually `PENDING`) and the
 * `category` it gave (Meta may change the one asked for).
 *
 * @category templates
 */
export interface MetaTemplateSubmitted {
  readonly id: string
  readonly status: string
  readonly category: string
}

/**
 * Meta's template management API (docs/templates-and-replies.md "Templates from Meta"),
 * each call failing with {@link MetaTemplateCallFailed}:
 * - `list`: one page of `GET /{waba_id}/message_templates` (`fields` name, language,
 *   status, category, components, rejected_reason, id; `limit` templates per page,
 *   `after` the cursor of the page asked for, `null` for the first; `name`, when given,
 *   Meta's name filter, which matches any template whose name contains it);
 * - `submit`: `POST /{waba_id}/message_templates`;
 * - `remove`: `DELETE /{waba_id}/message_templates?name=…[&hsm_id=…]` (with `hsm_id`, that
 *   template only; without, every language of the name).
 *
 * @category templates
 */
export interface MetaTemplateApiService {
  readonly list: (
    account: MetaTemplateAccount,
    page: { readonly after: string | null; readonly limit: number; readonly name?: string }
  ) => Effect.Effect<MetaTemplatePage, MetaTemplateCallFailed>
  readonly submit: (
    account: MetaTemplateAccount,
    template: MetaTemplateSubmission
  ) => Effect.Effect<MetaTemplateSubmitted, MetaTemplateCallFailed>
  readonly remove: (
    account: MetaTemplateAccount,
    template: { readonly name: string; readonly hsm_id: string | null }
  ) => Effect.Effect<void, MetaTemplateCallFailed>
}

/**
 * The fields a template list asks Meta for.
 *
 * @category templates
 */
export const META_TEMPLATE_FIELDS = "name,language,status,category,components,rejected_reason,id"

/**
 * Meta's template management API in use. Default: the Graph API at
 * `https://graph.facebook.com`, version `v21.0` ({@link graphTemplateApi}). Provide
 * `MetaTemplateApi.graph({ baseUrl, apiVersion })` to reach another address (the WhatsApp
 * simulator), or `Layer.succeed(MetaTemplateApi, { list, submit, remove })` for your own.
 *
 * @category templates
 */
export class MetaTemplateApi extends Context.Reference<MetaTemplateApi>()("@switchboard/core/MetaTemplateApi", {
  defaultValue: (): MetaTemplateApiService => graphTemplateApi({})
}) {
  /** A Layer of {@link graphTemplateApi} with these Graph API options. */
  static readonly graph = (options: GraphApiOptions): Layer.Layer<MetaTemplateApi> =>
    Layer.succeed(MetaTemplateApi, graphTemplateApi(options))
}

/**
 * {@link MetaTemplateApiService} through the Graph API with `fetch` (each request bounded
 * by `timeoutMs`, default 10 000 ms). A 2xx JSON answer of the expected shape succeeds;
 * anything else fails with Meta's `error.message`, `code` and `error_subcode`, the HTTP
 * status, or the network error's code, the token cut out of every text.
 *
 * @category templates
 */
export const graphTemplateApi = (options: GraphApiOptions): MetaTemplateApiService => {
  const call = (
    account: MetaTemplateAccount,
    method: "GET" | "POST" | "DELETE",
    query: Record<string, string>,
    body: unknown
  ): Effect.Effect<GraphObject, MetaTemplateCallFailed> =>
    Effect.tryPromise({
      try: async (signal) => {
        const url = new URL(graphUrl(options, account.waba_id, "message_templates"))
        for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value)
        const response = await fetch(url, {
          method,
          headers: {
            authorization: `Bearer ${account.access_token}`,
            accept: "application/json",
            ...(body === undefined ? {} : { "content-type": "application/json" })
          },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
          signal: graphSignal(options, signal)
        })
        const text = await response.text()
        return { status: response.status, body: parseObject(text) }
      },
      catch: (error) =>
        new MetaTemplateCallFailed({
          reason: withoutSecret(graphUnreachable(options, error), account.access_token),
          provider_code: null,
          provider_subcode: null,
          http_status: null,
          network_error: networkErrorCode(error) ?? "unknown"
        })
    }).pipe(
      Effect.flatMap(({ body, status }) =>
        status >= 200 && status <= 299 ? Effect.succeed(body) : Effect.fail(answeredFailure(options, account, status, body))
      )
    )

  const unexpected = (account: MetaTemplateAccount, status: number, what: string) =>
    new MetaTemplateCallFailed({
      reason: withoutSecret(`${graphAnsweredStatus(options, status)} without ${what}`, account.access_token),
      provider_code: null,
      provider_subcode: null,
      http_status: status,
      network_error: null
    })

  return {
    list: (account, page) =>
      Effect.flatMap(
        call(account, "GET", { fields: META_TEMPLATE_FIELDS, limit: String(page.limit), ...(page.after === null ? {} : { after: page.after }), ...(page.name === undefined ? {} : { name: page.name }) }, undefined),
        (body) => {
          if (!Array.isArray(body.data)) return Effect.fail(unexpected(account, 200, "a list of templates"))
          const paging = isObject(body.paging) ? body.paging : {}
          const cursors = isObject(paging.cursors) ? paging.cursors : {}
          // Meta's last page has no `next`; its `after` cursor then points nowhere new.
          const after = typeof paging.next === "string" && typeof cursors.after === "string" && cursors.after !== "" ? cursors.after : null
          return Effect.succeed({ templates: body.data, after })
        }
      ),
    submit: (account, template) =>
      Effect.flatMap(call(account, "POST", {}, template), (body) => {
        const id = typeof body.id === "string" || typeof body.id === "number" ? String(body.id) : null
        if (id === null) return Effect.fail(unexpected(account, 200, "a template id"))
        return Effect.succeed({
          id,
          status: typeof body.status === "string" ? body.status : "PENDING",
          category: typeof body.category === "string" ? body.category : template.category
        })
      }),
    remove: (account, template) =>
      Effect.asVoid(call(account, "DELETE", { name: template.name, ...(template.hsm_id === null ? {} : { hsm_id: template.hsm_id }) }, undefined))
  }
}

type GraphObject = Record<string, unknown>

const isObject = (value: unknown): value is GraphObject => typeof value === "object" && value !== null && !Array.isArray(value)

const parseObject = (text: string): GraphObject => {
  try {
    const parsed: unknown = JSON.parse(text)
    return isObject(parsed) ? parsed : {}
  } catch {
    return {}
  }
}

/** The failure of a non-2xx answer: Meta's error object when there is one, else the status. */
const answeredFailure = (options: GraphApiOptions, account: MetaTemplateAccount, status: number, body: GraphObject): MetaTemplateCallFailed => {
  const error = isObject(body.error) ? body.error : {}
  const text = (value: unknown) => (typeof value === "string" || typeof value === "number" ? String(value) : null)
  const message = typeof error.error_user_msg === "string" && error.error_user_msg !== ""
    ? `${text(error.message) ?? "Meta refused the call"}: ${error.error_user_msg}`
    : text(error.message)
  return new MetaTemplateCallFailed({
    reason: withoutSecret(message ?? graphAnsweredStatus(options, status), account.access_token),
    provider_code: text(error.code),
    provider_subcode: text(error.error_subcode),
    http_status: status,
    network_error: null
  })
}

/**
 * The account `wabaId` of the organization as Meta's template API is called for it: the
 * token of any of the organization's `active` channels on that WhatsApp Business Account.
 * None → `NoChannelForAccount`; a token that cannot be opened fails as
 * `Channels.getWithToken` does.
 *
 * @category templates
 */
export const metaTemplateAccount = (
  channels: ChannelsService,
  organizationId: OrganizationId,
  wabaId: string
): Effect.Effect<MetaTemplateAccount, NoChannelForAccount | SecretKeyMissing | SecretKeyMismatch | StorageError, Storage> =>
  Effect.gen(function* () {
    const storage = yield* Storage
    const active = (yield* storage.channels.list(organizationId)).find((channel) => channel.waba_id === wabaId && channel.status === "active")
    if (active === undefined) return yield* new NoChannelForAccount({ waba_id: wabaId })
    const { access_token } = yield* channels.getWithToken(organizationId, active.uuid).pipe(
      Effect.catchTag("RecordNotFound", () => Effect.fail(new NoChannelForAccount({ waba_id: wabaId })))
    )
    return { waba_id: wabaId, access_token }
  })

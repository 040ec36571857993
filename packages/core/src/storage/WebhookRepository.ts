import type { Effect, Option } from "effect"
import type { OrganizationId } from "../model/organizations.js"
import type {
  WebhookDeliveryAttempt,
  WebhookDeliveryStatus,
  WebhookEndpoint,
  WebhookEndpointId,
  WebhookEndpointPatch,
  WebhookEvent
} from "../model/webhooks.js"
import type { StorageError } from "./errors.js"

// Outgoing webhooks (docs/webhooks.md): the organization's endpoints, the outbox of events
// and their deliveries, and what the dispatcher needs to claim and record attempts.
//
// THE OUTBOX. A store writes an event, and one `pending` delivery (due now) for each
// enabled endpoint of the organization whose `events` include its type (or are `null`),
// in the same atomic step as the change that causes it — and nothing at all when no such
// endpoint exists. Event `id`s are new UUIDs, `created_at` the write's `now`, `data` the
// record as the store returns it. The changes that write events:
// - `contacts.importBulk` with `request.events !== false`: `contact.created` per created contact;
// - `chats.appendMessage` of an inbound message (not a duplicate): `message.received`, and
//   `chat.updated` when it reopened the chat;
// - `chats.updateMessageStatus` and `chats.updateMessageStatusByProviderId` when the
//   status changed (pending reports applied included): `message.status_updated`;
// - `chats.update` when anything changed: `chat.updated`;
// - `templates.updateStatus` when anything changed: `template.category_updated` when it
//   was given a category, else `template.status_updated`.
// `chats.importChats` and every other write record none.

/**
 * A webhook endpoint as stored: the record, its organization, and its signing secret
 * sealed by `sealSecret` (never the plaintext); after a rotation with an overlap, the
 * previous secret (sealed too) and the instant it stops signing (ISO 8601), else both
 * `null` (docs/webhooks.md "The secret").
 *
 * @category storage
 */
export interface StoredWebhookEndpoint {
  readonly organization_id: OrganizationId
  readonly endpoint: WebhookEndpoint
  readonly secret_sealed: string
  readonly previous_secret_sealed: string | null
  readonly previous_secret_expires_at: string | null
}

/**
 * What {@link WebhookRepository.rotateSecret} writes, only while the endpoint's sealed
 * secret is still `expected_secret_sealed` (a compare-and-set): the new sealed secret,
 * and the previous one with its expiry (both `null`: no overlap).
 *
 * @category storage
 */
export interface WebhookSecretRotation {
  readonly expected_secret_sealed: string
  readonly secret_sealed: string
  readonly previous_secret_sealed: string | null
  readonly previous_secret_expires_at: string | null
}

/**
 * Outcome of {@link WebhookRepository.rotateSecret}: `Rotated` with the endpoint;
 * `NotFound`; `SecretChanged` when the sealed secret was no longer the expected one
 * (another rotation or a re-seal came first), nothing written.
 *
 * @category storage
 */
export type WebhookSecretRotationOutcome =
  | { readonly _tag: "Rotated"; readonly endpoint: WebhookEndpoint }
  | { readonly _tag: "NotFound" }
  | { readonly _tag: "SecretChanged" }

/**
 * An endpoint's sealed secrets, as `secret-key rotate` reads them (every organization's,
 * by `uuid`): the current one and the previous one (`null`: none).
 *
 * @category storage
 */
export interface SealedWebhookSecrets {
  readonly uuid: WebhookEndpointId
  readonly secret_sealed: string
  readonly previous_secret_sealed: string | null
}

/**
 * A delivery the dispatcher claimed: leased to it until `lease_until` under `lease`, a
 * token only the holder knows; with everything needed to send it.
 *
 * @category storage
 */
export interface ClaimedDelivery {
  readonly delivery_id: string
  readonly lease: string
  readonly organization_id: OrganizationId
  readonly endpoint_uuid: WebhookEndpointId
  readonly url: string
  readonly secret_sealed: string
  /** The previous secret while an overlap may run: signs too until `previous_secret_expires_at` (core compares). */
  readonly previous_secret_sealed: string | null
  readonly previous_secret_expires_at: string | null
  readonly event: WebhookEvent
  /** The number of this attempt, from 1. */
  readonly attempt: number
}

/**
 * The outcome of one attempt, recorded by {@link WebhookRepository.recordAttempt}:
 * `delivery_status` `delivered` (a 2xx), `pending` again (due at `next_attempt_at`) or
 * `failed` (no attempt left); the receiver's `status` or the `error`, `duration_ms`,
 * `response_body` (at most 1 KiB, or `null`).
 *
 * @category storage
 */
export interface AttemptRecord {
  readonly attempt_id: string
  readonly delivery_status: Exclude<WebhookDeliveryStatus, "cancelled">
  readonly status: number | null
  readonly error: string | null
  readonly duration_ms: number
  readonly response_body: string | null
  readonly attempted_at: string
  readonly next_attempt_at: string | null
}

/**
 * A position in an endpoint's attempts, newest first: the `attempted_at` and id of an
 * attempt. {@link WebhookRepository.listAttempts} answers the attempts strictly after it.
 *
 * @category storage
 */
export interface AttemptPosition {
  readonly attempted_at: string
  readonly id: string
}

/**
 * Outcome of {@link WebhookRepository.insertEndpoint}: `LimitReached` wrote nothing.
 *
 * @category storage
 */
export type WebhookEndpointInsertOutcome =
  | { readonly _tag: "Inserted"; readonly endpoint: WebhookEndpoint }
  | { readonly _tag: "LimitReached"; readonly limit: number }

/**
 * Outgoing webhooks of the organizations (docs/webhooks.md), and the outbox described at
 * the top of this module. Every method fails only with {@link StorageError}.
 *
 * @category storage
 */
export interface WebhookRepository {
  /** Inserts an endpoint in one atomic step with the check that the organization has fewer than `limit`. */
  readonly insertEndpoint: (
    organizationId: OrganizationId,
    stored: { readonly endpoint: WebhookEndpoint; readonly secret_sealed: string },
    limit: number
  ) => Effect.Effect<WebhookEndpointInsertOutcome, StorageError>
  /** The organization's endpoints, newest first (`created_at desc, uuid desc`). */
  readonly listEndpoints: (organizationId: OrganizationId) => Effect.Effect<ReadonlyArray<WebhookEndpoint>, StorageError>
  /** The endpoint with this uuid, with its sealed secret. */
  readonly findEndpoint: (
    organizationId: OrganizationId,
    id: WebhookEndpointId
  ) => Effect.Effect<Option.Option<StoredWebhookEndpoint>, StorageError>
  /**
   * Sets the fields of `patch` that differ (and `updated_at` = `now` when any does); when
   * it disables the endpoint, its `pending` deliveries become `cancelled` in the same
   * atomic step. `None` when the organization has no such endpoint.
   */
  readonly updateEndpoint: (
    organizationId: OrganizationId,
    id: WebhookEndpointId,
    patch: WebhookEndpointPatch,
    now: string
  ) => Effect.Effect<Option.Option<WebhookEndpoint>, StorageError>
  /**
   * Replaces the sealed secret, the previous secret and its expiry (and `updated_at`) in
   * one compare-and-set on the sealed secret (`SecretChanged`, nothing written, when it is
   * no longer `rotation.expected_secret_sealed`); later attempts, retries included, use them.
   */
  readonly rotateSecret: (
    organizationId: OrganizationId,
    id: WebhookEndpointId,
    rotation: WebhookSecretRotation,
    now: string
  ) => Effect.Effect<WebhookSecretRotationOutcome, StorageError>
  /**
   * Up to `limit` endpoints of every organization with their sealed secrets, by `uuid`
   * ascending, strictly after `after` (from the first when `null`): `secret-key rotate`
   * reads them in pages.
   */
  readonly listSealedSecrets: (
    after: WebhookEndpointId | null,
    limit: number
  ) => Effect.Effect<ReadonlyArray<SealedWebhookSecrets>, StorageError>
  /**
   * Sets the endpoint's sealed `secret` or `previous_secret` to `sealed` only while it is
   * still `expected` (a compare-and-set; `updated_at` unchanged): `true` when written,
   * `false` (nothing written) when the endpoint is gone or the value changed meanwhile.
   */
  readonly resealSecret: (
    id: WebhookEndpointId,
    field: "secret" | "previous_secret",
    expected: string,
    sealed: string
  ) => Effect.Effect<boolean, StorageError>
  /** Deletes the endpoint with its deliveries and attempts; `false` when not found. */
  readonly deleteEndpoint: (organizationId: OrganizationId, id: WebhookEndpointId) => Effect.Effect<boolean, StorageError>
  /**
   * Up to `limit` attempts of the endpoint's deliveries, newest first (`attempted_at desc,
   * id desc`), strictly after `after` (from the newest when `null`). `None` when the
   * organization has no such endpoint.
   */
  readonly listAttempts: (
    organizationId: OrganizationId,
    id: WebhookEndpointId,
    after: AttemptPosition | null,
    limit: number
  ) => Effect.Effect<Option.Option<ReadonlyArray<WebhookDeliveryAttempt>>, StorageError>
  /**
   * Claims up to `limit` due deliveries of any organization — `pending`, `next_attempt_at`
   * ≤ `now`, not leased or with a lease ended before `now` — oldest due first, leasing each
   * until `leaseUntil` under a new lease token, atomically: of several processes claiming
   * together, each delivery goes to one.
   */
  readonly claimDue: (now: string, leaseUntil: string, limit: number) => Effect.Effect<ReadonlyArray<ClaimedDelivery>, StorageError>
  /**
   * Records an attempt and the delivery's new state, only while `lease` still holds it
   * (the lease token matches and the delivery is `pending`): then `true`, and the lease is
   * released; else nothing is written and `false` (another process took it over).
   */
  readonly recordAttempt: (deliveryId: string, lease: string, attempt: AttemptRecord) => Effect.Effect<boolean, StorageError>
  /**
   * Makes one delivery of the endpoint due again now (a hand retry of a `failed` or
   * `delivered` one: state `pending`, attempt count kept); `false`, nothing changed, when
   * the organization has no such delivery for that endpoint or the endpoint is disabled
   * (checked in the same atomic step where the store can; a claim cancels a due delivery
   * of a disabled endpoint otherwise).
   */
  readonly retryDelivery: (
    organizationId: OrganizationId,
    endpointId: WebhookEndpointId,
    deliveryId: string,
    now: string
  ) => Effect.Effect<boolean, StorageError>
  /** Deletes deliveries (with their attempts and unreferenced events) created before `before`; how many. */
  readonly pruneDeliveries: (before: string) => Effect.Effect<number, StorageError>
}

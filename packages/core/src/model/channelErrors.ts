import { Schema } from "effect"

/**
 * Another channel, of this or any other organization, already has this
 * `phone_number_id`: a WhatsApp number belongs to one organization (docs/channels.md).
 * HTTP 400 `phone_number_id_taken`.
 *
 * @category errors
 */
export class ChannelPhoneNumberIdTaken extends Schema.TaggedError<ChannelPhoneNumberIdTaken>()(
  "ChannelPhoneNumberIdTaken",
  { phone_number_id: Schema.String }
) {
  override get message(): string {
    return `phone_number_id ${this.phone_number_id} is already connected`
  }
}

/**
 * The organization already has the most channels allowed (a fixed product limit,
 * `MAX_CHANNELS_PER_ORGANIZATION`). HTTP 400 `channel_limit_reached`.
 *
 * @category errors
 */
export class ChannelLimitReached extends Schema.TaggedError<ChannelLimitReached>()("ChannelLimitReached", {
  limit: Schema.Int
}) {
  override get message(): string {
    return `An organization may connect at most ${this.limit} channels`
  }
}

/**
 * Meta's Graph API did not confirm that the access token may use the number: it refused
 * (`reason` is its error message, with the token removed), answered something unusable,
 * or could not be reached. HTTP 400 `channel_verification_failed`. The message never
 * contains the token.
 *
 * @category errors
 */
export class ChannelVerificationFailed extends Schema.TaggedError<ChannelVerificationFailed>()(
  "ChannelVerificationFailed",
  { phone_number_id: Schema.String, reason: Schema.String }
) {
  override get message(): string {
    return `The access token could not be verified for phone_number_id ${this.phone_number_id}: ${this.reason}`
  }
}

/**
 * Channels and webhook endpoints need a secret key to encrypt access tokens and signing
 * secrets, and none is configured (`createHandler({ secretKey })`; standalone server and
 * CLI: `SWITCHBOARD_SECRET_KEY`). HTTP 503 `secret_key_not_configured`.
 *
 * @category errors
 */
export class SecretKeyMissing extends Schema.TaggedError<SecretKeyMissing>()("SecretKeyMissing", {}) {
  override get message(): string {
    return "Channels and webhook endpoints need a secret key to encrypt access tokens and signing secrets: none is configured (SWITCHBOARD_SECRET_KEY, or createHandler({ secretKey }))"
  }
}

/**
 * The configured secret key is not the one the store's channel tokens were encrypted
 * with (its stored check value does not open under it). Raised when the services start,
 * so a wrong key never yields a garbled token. HTTP 500 if it ever reaches a request.
 *
 * @category errors
 */
export class SecretKeyMismatch extends Schema.TaggedError<SecretKeyMismatch>()("SecretKeyMismatch", {}) {
  override get message(): string {
    return "SWITCHBOARD_SECRET_KEY (the secret key) is not the key this database's channel access tokens and webhook signing secrets were encrypted with; set the key used before"
  }
}

/**
 * `secret-key rotate` needs at least two keys configured (`SWITCHBOARD_SECRET_KEY="new,old"`:
 * the new key first, which every value is sealed under again, then the old one that opens
 * them); nothing was changed (docs/deployment.md "Rotating the secret key").
 *
 * @category errors
 */
export class SecretKeyRotationNeedsTwoKeys extends Schema.TaggedError<SecretKeyRotationNeedsTwoKeys>()(
  "SecretKeyRotationNeedsTwoKeys",
  { configured: Schema.Int }
) {
  override get message(): string {
    return `Rotating the secret key needs at least two keys in SWITCHBOARD_SECRET_KEY, separated by commas: the new key first, then the old one (${this.configured} configured); nothing was changed`
  }
}

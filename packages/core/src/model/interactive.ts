// Interactive messages (docs/messaging.md "Interactive messages"): reply buttons, lists and
// a call-to-action URL button, in Meta's own shapes, and the limits WhatsApp sets on them.

/**
 * The interactive message types a send accepts (docs/messaging.md "Interactive messages"):
 * `button` (up to 3 reply buttons), `list` (a menu of up to 10 rows in sections) and
 * `cta_url` (one button that opens a URL).
 *
 * @category interactive
 */
export type InteractiveType = "button" | "list" | "cta_url"

/** Every {@link InteractiveType}. @category interactive */
export const INTERACTIVE_TYPES: ReadonlyArray<InteractiveType> = ["button", "list", "cta_url"]

/**
 * WhatsApp's limits on an interactive message, in Unicode code points for texts and in
 * items for lists (docs/messaging.md "Interactive messages"):
 * - `bodyText`: the body's text, by type (a list's may be longer);
 * - `headerText`, `footerText`: a text header, the footer;
 * - `buttons`: reply buttons of a `button` message; `buttonId`, `buttonTitle`: each one's;
 * - `listButton`: the text of the button that opens a list; `sections`: a list's sections;
 *   `rows`: rows in all sections together; `rowId`, `rowTitle`, `rowDescription`,
 *   `sectionTitle`: each row's and section's;
 * - `displayText`: the text of a `cta_url` button; `url`: its URL and a header's media link.
 *
 * @category interactive
 */
export const INTERACTIVE_LIMITS = {
  bodyText: { button: 1024, list: 4096, cta_url: 1024 },
  headerText: 60,
  footerText: 60,
  buttons: 3,
  buttonId: 256,
  buttonTitle: 20,
  listButton: 20,
  sections: 10,
  rows: 10,
  rowId: 200,
  rowTitle: 24,
  rowDescription: 72,
  sectionTitle: 24,
  displayText: 20,
  url: 2048
} as const

/**
 * Where the file of a media header comes from, as a send gives it and the message record
 * keeps it: an http(s) `link` Meta fetches, or the `media_uuid` of a file Switchboard
 * stores (docs/media.md "Sending a stored file"), uploaded to Meta when the message leaves.
 *
 * @category interactive
 */
export type InteractiveMediaSource = { readonly link: string; readonly media_uuid?: undefined } | { readonly media_uuid: string; readonly link?: undefined }

/**
 * Where the file of a media header comes from as the transport sends it to Meta: the
 * `link`, or the provider's media `id` of the uploaded stored file.
 *
 * @category interactive
 */
export type InteractiveMediaReference = { readonly link: string; readonly id?: undefined } | { readonly id: string; readonly link?: undefined }

/**
 * A header's media object: its source, and for a document an optional `filename` (the name
 * the customer sees).
 *
 * @category interactive
 */
export type InteractiveHeaderMedia<Source> = Source & { readonly filename?: string }

/**
 * The header of an interactive message: `{type: "text", text}` (≤ 60 code points), or an
 * image, video or document `{type, <type>: {link} | {media_uuid}}` (`Source`; a list's
 * header is text only).
 *
 * @category interactive
 */
export type InteractiveHeader<Source = InteractiveMediaSource> =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "image"; readonly image: InteractiveHeaderMedia<Source> }
  | { readonly type: "video"; readonly video: InteractiveHeaderMedia<Source> }
  | { readonly type: "document"; readonly document: InteractiveHeaderMedia<Source> }

/** The media types a header may carry. @category interactive */
export type InteractiveHeaderMediaType = Exclude<InteractiveHeader["type"], "text">

/** One reply button: `{type: "reply", reply: {id, title}}`. @category interactive */
export interface InteractiveReplyButton {
  readonly type: "reply"
  readonly reply: { readonly id: string; readonly title: string }
}

/** One row of a list: `{id, title, description?}`. @category interactive */
export interface InteractiveListRow {
  readonly id: string
  readonly title: string
  readonly description?: string
}

/** One section of a list: `{title?, rows}` (`title` required when the list has more than one section). @category interactive */
export interface InteractiveListSection {
  readonly title?: string
  readonly rows: ReadonlyArray<InteractiveListRow>
}

/** The parts every interactive message has: `body.text`, an optional `footer.text`. */
interface InteractiveCommon {
  readonly body: { readonly text: string }
  readonly footer?: { readonly text: string }
}

/**
 * An interactive message in Meta's own shape (docs/messaging.md "Interactive messages"), as
 * `POST /send/interactive` reads it and a message record keeps it (`content.interactive`):
 * - `button`: `{type, header?, body: {text}, footer?, action: {buttons: [{type: "reply", reply: {id, title}}]}}`;
 * - `list`: `{type, header? (text), body, footer?, action: {button, sections: [{title?, rows: [{id, title, description?}]}]}}`;
 * - `cta_url`: `{type, header?, body, footer?, action: {name: "cta_url", parameters: {display_text, url}}}`.
 * `Source` is where a media header's file comes from: {@link InteractiveMediaSource} in the
 * record, {@link InteractiveMediaReference} when it goes to the transport.
 *
 * @category interactive
 */
export type InteractiveContent<Source = InteractiveMediaSource> =
  | (InteractiveCommon & {
      readonly type: "button"
      readonly header?: InteractiveHeader<Source>
      readonly action: { readonly buttons: ReadonlyArray<InteractiveReplyButton> }
    })
  | (InteractiveCommon & {
      readonly type: "list"
      readonly header?: Extract<InteractiveHeader<Source>, { readonly type: "text" }>
      readonly action: { readonly button: string; readonly sections: ReadonlyArray<InteractiveListSection> }
    })
  | (InteractiveCommon & {
      readonly type: "cta_url"
      readonly header?: InteractiveHeader<Source>
      readonly action: { readonly name: "cta_url"; readonly parameters: { readonly display_text: string; readonly url: string } }
    })

/**
 * The stored file an interactive message's header names (`header.<type>.media_uuid`), with
 * the header's type; `undefined` when it has none (no header, a text header, a link).
 *
 * @category interactive
 */
export const interactiveStoredMedia = (
  interactive: InteractiveContent
): { readonly type: InteractiveHeaderMediaType; readonly media_uuid: string } | undefined => {
  const header = interactive.header
  if (header === undefined || header.type === "text") return undefined
  const media = (header as Record<string, unknown>)[header.type] as InteractiveHeaderMedia<InteractiveMediaSource> | undefined
  return media?.media_uuid === undefined ? undefined : { type: header.type, media_uuid: media.media_uuid }
}

/**
 * The interactive object of a record as the transport sends it: a header's `media_uuid`
 * replaced by the provider's media id `providerMediaId` (the upload of the stored file);
 * every other part as kept.
 *
 * @category interactive
 */
export const interactiveForProvider = (
  interactive: InteractiveContent,
  providerMediaId: string | undefined
): InteractiveContent<InteractiveMediaReference> => {
  const stored = interactiveStoredMedia(interactive)
  if (stored === undefined) return interactive as InteractiveContent<InteractiveMediaReference>
  const header = interactive.header as Record<string, unknown>
  const { media_uuid: _, ...media } = header[stored.type] as InteractiveHeaderMedia<{ readonly media_uuid: string }>
  return {
    ...interactive,
    header: { type: stored.type, [stored.type]: { ...media, id: providerMediaId ?? "" } }
  } as InteractiveContent<InteractiveMediaReference>
}

/**
 * The number of Unicode code points of `text` (what WhatsApp's length limits count: an
 * emoji outside the Basic Multilingual Plane is one, not two UTF-16 units).
 *
 * @category interactive
 */
export const codePointLength = (text: string): number => {
  let count = 0
  for (const _ of text) count++
  return count
}

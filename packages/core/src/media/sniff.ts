import { TextDecoder } from "node:util"

// Whether a file's first bytes are what its declared MIME type says (docs/media.md "Types
// and limits"): `file-type` reads the magic numbers; text has none, so `text/plain` is
// accepted when no binary type is found and its first bytes are UTF-8.

/**
 * What `file-type` may answer for each declared type: the type itself, and the containers
 * it is read as (an Office document is a ZIP or a Compound File; an M4A an MP4; an Opus
 * file Ogg).
 */
const ACCEPTED: Readonly<Record<string, ReadonlyArray<string>>> = {
  "image/jpeg": ["image/jpeg"],
  "image/png": ["image/png"],
  "image/webp": ["image/webp"],
  "video/mp4": ["video/mp4", "video/quicktime", "video/x-m4v"],
  "video/3gpp": ["video/3gpp", "video/3gpp2", "video/mp4"],
  "audio/aac": ["audio/aac", "audio/x-aac"],
  "audio/amr": ["audio/amr"],
  "audio/mpeg": ["audio/mpeg"],
  "audio/mp4": ["audio/mp4", "audio/x-m4a", "video/mp4", "audio/m4a"],
  "audio/ogg": ["audio/ogg", "audio/opus", "audio/ogg; codecs=opus"],
  "application/pdf": ["application/pdf"],
  "application/msword": ["application/x-cfb", "application/msword"],
  "application/vnd.ms-excel": ["application/x-cfb", "application/vnd.ms-excel"],
  "application/vnd.ms-powerpoint": ["application/x-cfb", "application/vnd.ms-powerpoint"],
  "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ["application/zip", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"],
  "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": ["application/zip", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"],
  "application/vnd.openxmlformats-officedocument.presentationml.presentation": ["application/zip", "application/vnd.openxmlformats-officedocument.presentationml.presentation"]
}

/** `file-type`, loaded once (it is ESM-only: loaded with `import()`). */
let fileTypeModule: Promise<typeof import("file-type")> | undefined

/**
 * `null` when `head` (a file's first bytes, up to 4 100) is what `mimeType` (an essence
 * media may have) says; else the reason it is not, in words, for the 400
 * `unsupported_media_type`.
 *
 * @category media
 */
export const sniffedTypeMatches = async (mimeType: string, head: Uint8Array): Promise<string | null> => {
  fileTypeModule ??= import("file-type")
  const { fileTypeFromBuffer } = await fileTypeModule
  const detected = await fileTypeFromBuffer(head).catch(() => undefined)
  if (mimeType === "text/plain") {
    if (detected !== undefined) return `The file is ${detected.mime}, not text/plain`
    return isUtf8Prefix(head) ? null : "The file is not UTF-8 text"
  }
  if (detected === undefined) return `The file's bytes are not ${mimeType}`
  return (ACCEPTED[mimeType] ?? [mimeType]).includes(detected.mime) ? null : `The file is ${detected.mime}, not ${mimeType}`
}

/** Whether `bytes` are UTF-8, allowing a character cut at their end. */
const isUtf8Prefix = (bytes: Uint8Array): boolean => {
  const decoder = new TextDecoder("utf-8", { fatal: true })
  for (let cut = 0; cut <= 3 && cut < bytes.length; cut++) {
    try {
      decoder.decode(bytes.subarray(0, bytes.length - cut))
      return true
    } catch {
      // A multi-byte character cut by the 4 100-byte window: try without its start.
    }
  }
  return bytes.length === 0
}

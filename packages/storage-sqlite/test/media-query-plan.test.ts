import { describe, expect, it } from "vitest"
import { SQL } from "../src/repositories/media.js"
import { planOnFreshSchema as planOf } from "./helpers.js"

// Migration 19: every statement of the media repository reads the rows it needs through an
// index (the organization's list, the due fetch jobs, a channel's jobs, a contact's media,
// the blobs to remove, the stored bytes, the oldest stored), never by scanning the media
// table or sorting in a temporary B-tree, however many records the store keeps.

const AT = "2026-03-01T12:00:00.000Z"
const ORG = "00000000-0000-4000-8000-000000000001"
const ID = "00000000-0000-4000-8000-000000000002"

const cases: ReadonlyArray<readonly [keyof typeof SQL, ReadonlyArray<unknown>, RegExp]> = [
  ["find", [ORG, ID], /sqlite_autoindex_media_1 \(uuid=\?\)/],
  ["pageFirst", [ORG, null, null, "stored", "stored", 11], /media_newest \(organization_id=\?\)/],
  ["pageAfter", [ORG, "upload", "upload", null, null, AT, ID, 11], /media_newest \(organization_id=\? AND \(created_at,uuid\)<\(\?,\?\)\)/],
  ["bytesUsed", [ORG], /COVERING INDEX media_stored_bytes \(organization_id=\?\)/],
  ["leased", [ID, "lease"], /sqlite_autoindex_media_1 \(uuid=\?\)/],
  ["expiring", [AT, 100], /media_stored_oldest \(created_at<\?\)/],
  ["blobsToRemove", [100], /INDEX media_blobs_to_remove/],
  ["anyDue", [AT, AT], /media_fetch_due \(next_fetch_at>\? AND next_fetch_at<\?\)/],
  ["due", [AT, AT, 10], /media_fetch_due \(next_fetch_at>\? AND next_fetch_at<\?\)/],
  ["nextDue", [], /media_fetch_due/],
  ["postpone", [AT, ID, AT], /media_fetch_channel \(channel_uuid=\?/],
  ["deleteOfContact", [ORG, ID], /media_of_contact \(organization_id=\? AND contact_uuid=\?\)/],
  ["renew", [AT, ID, "lease"], /sqlite_autoindex_media_1 \(uuid=\?\)/],
  ["uploadFor", [ID, ID, AT], /media_uploads USING PRIMARY KEY \(media_uuid=\? AND channel_uuid=\?\)/]
]

describe("query plans of migration 19", () => {
  for (const [name, params, expected] of cases) {
    it(`${name} reads through an index, with no table scan and no temporary sort`, () => {
      const plan = planOf(SQL[name], params)
      expect(plan.join("\n"), name).toMatch(expected)
      for (const step of plan) {
        expect(step, name).toMatch(/^(SEARCH|SCAN) media(_uploads)? USING (COVERING )?(INDEX|PRIMARY KEY) /)
        expect(step, name).not.toMatch(/TEMP B-TREE/)
      }
    })
  }
})

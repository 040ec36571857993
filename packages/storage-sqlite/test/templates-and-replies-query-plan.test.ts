import { describe, expect, it } from "vitest"
import { SQL as REPLIES } from "../src/repositories/basicReplies.js"
import { SQL as TEMPLATES } from "../src/repositories/templates.js"
import { SQL as SYNCS } from "../src/repositories/templateSyncs.js"
import { planOnFreshSchema as planOf } from "./helpers.js"

// Migrations 3 and 20: every read of the templates, template syncs and basic-replies
// repositories is answered from an index (organization + identity, organization + Meta's
// id, due time, organization + trigger_key, organization + newest first), never by
// scanning the table or sorting in a temporary B-tree.

const ORG = "00000000-0000-4000-8000-000000000001"
const ID = "00000000-0000-4000-8000-000000000002"

const cases: ReadonlyArray<readonly [string, string, ReadonlyArray<unknown>, RegExp]> = [
  ["templates.findById", TEMPLATES.findById, [ORG, ID], /USING INDEX sqlite_autoindex_templates_1 \(uuid=\?\)/],
  ["templates.findByIdentity", TEMPLATES.findByIdentity, [ORG, "order_update", "en_US", "102290129340398"], /USING INDEX templates_identity \(organization_id=\? AND name_key=\? AND language=\? AND <expr>=\?\)/],
  ["templates.findByProviderId", TEMPLATES.findByProviderId, [ORG, "1407680676729941"], /USING INDEX templates_by_provider_id \(organization_id=\? AND provider_template_id=\?\)/],
  ["templates.identityOwner", TEMPLATES.identityOwner, [ORG, "order_update", "en_US", null, ID], /USING (COVERING )?INDEX templates_identity/],
  ["templateSyncs.get", SYNCS.get, [ORG, "102290129340398"], /USING PRIMARY KEY \(organization_id=\? AND waba_id=\?\)/],
  ["templateSyncs.claimAccount", SYNCS.claimAccount, ["lease", "2026-01-01T00:01:00.000Z", ORG, "102290129340398", "2026-01-01T00:00:00.000Z"], /USING PRIMARY KEY \(organization_id=\? AND waba_id=\?\)/],
  ["templateSyncs.due", SYNCS.due, ["2026-01-01T00:00:00.000Z", "2026-01-01T00:00:00.000Z", 10], /USING INDEX template_syncs_due \(next_due_at<\?\)/],
  ["templateSyncs.anyDue", SYNCS.anyDue, ["2026-01-01T00:00:00.000Z", "2026-01-01T00:00:00.000Z"], /USING INDEX template_syncs_due/],
  ["templates.page", TEMPLATES.page, [ORG, 20, 0], /USING INDEX templates_newest/],
  ["templates.count", TEMPLATES.count, [ORG], /USING (COVERING )?INDEX/],
  ["basicReplies.findByTrigger", REPLIES.findByTrigger, [ORG, "hours"], /USING INDEX sqlite_autoindex_basic_replies_2/],
  ["basicReplies.page", REPLIES.page, [ORG, 20, 0], /USING INDEX basic_replies_newest/],
  ["basicReplies.count", REPLIES.count, [ORG], /USING (COVERING )?INDEX/]
]

describe("query plans of migrations 3 and 20", () => {
  for (const [name, sql, params, expected] of cases) {
    it(`${name} uses an index, with no scan and no temporary sort`, () => {
      const plan = planOf(sql, params)
      expect(plan.join("\n"), name).toMatch(expected)
      for (const step of plan) expect(step, name).toMatch(/^SEARCH (templates|template_syncs|basic_replies) USING (COVERING )?(PRIMARY KEY|INDEX) /)
    })
  }
})

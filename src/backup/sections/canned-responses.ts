/**
 * The `canned-responses` section (docs/backup.md, docs/inbox.md): the inbox's saved replies, as D1
 * keeps them. An import upserts by shortcode in one batch, after every row met the door's rules
 * (shortcode, title, a template that parses) and the table as it will be (the deployment's
 * shortcodes with the document's) holds at most 500.
 */
import { MAX_CANNED_RESPONSES, Shortcode, CannedResponseBody, allCannedResponses } from "../../inbox/canned-responses";
import { d1 } from "../../platform/persistence/d1";
import { defineSection, parseAtRow, refuseDuplicates, rowFault, runBatch } from "../section";

const S = "canned-responses";

export const cannedResponsesSection = defineSection({
  name: S,
  secret: false,
  description: "Canned responses: the inbox's saved replies (shortcode, title, mustache template).",
  store: "conversations",
  exportRows: (ctx) => allCannedResponses(ctx.db),
  async validate(rows, ctx) {
    refuseDuplicates(S, rows, (r) => r.shortcode, "shortcode");
    const checked = rows.map((r, i) => ({
      ...r,
      shortcode: parseAtRow(S, i, "shortcode", Shortcode, r.shortcode),
      // The door's own rules, and its trimmed title.
      ...parseAtRow(S, i, null, CannedResponseBody, { title: r.title, template: r.template }),
    }));
    const merged = new Set([...(await allCannedResponses(ctx.db)).map((r) => r.shortcode), ...rows.map((r) => r.shortcode)]);
    if (merged.size > MAX_CANNED_RESPONSES) throw rowFault(S, rows.length - 1, null, `would make more than ${MAX_CANNED_RESPONSES} canned responses`);
    return checked;
  },
  async apply(rows, ctx) {
    const q = d1(ctx.db);
    await runBatch(
      ctx.db,
      rows.map(
        (r) => q`INSERT INTO canned_responses (shortcode, title, template, created_at, updated_at, updated_by)
          VALUES (${r.shortcode}, ${r.title}, ${r.template}, ${r.created_at}, ${r.updated_at}, ${r.updated_by})
          ON CONFLICT(shortcode) DO UPDATE SET title = excluded.title, template = excluded.template,
            created_at = excluded.created_at, updated_at = excluded.updated_at, updated_by = excluded.updated_by`,
      ),
    );
    return { applied: rows.length };
  },
});

/**
 * The `text-resources` section (docs/backup.md): the stored texts a TemplatedText `id` names (a
 * state's schema, a binding's programs, a route's expression as it was given). They restore before
 * anything that renders them.
 *
 * An id resolves in the content store first, then in the D1 text resources
 * (src/storage/text-resources.ts), so the export carries both, the stored object winning over a
 * D1 row of the same id: the text objects of the content store (textual type, at most 256 KiB,
 * UTF-8, an id a row may hold, not a plugin's console asset; templates included) and the D1 rows.
 * An import writes the rows into D1 in one batch, where every id resolves again at once; binary
 * and bigger objects are for R2's own backup tools.
 */
import { z } from "zod";
import { all, d1 } from "../../platform/persistence/d1";
import { bucketIn } from "../../storage/bucket";
import { storedTextsForBackup } from "../../storage/text-resources";
import { resourceContent, resourceId, upsertTextResourceStatement } from "../../storage/text-resources-d1";
import { MAX_ROWS } from "../rows";
import { defineSection, parseAtRow, refuseDuplicates, runBatch } from "../section";

const TextResourceRow = z.object({ id: z.string(), content: z.string(), created_at: z.string(), updated_at: z.string() });

export const textResourcesSection = defineSection({
  name: "text-resources",
  secret: false,
  description: "Stored text resources (what a TemplatedText id names): the content store's text objects and the D1 text resources.",
  async exportRows(ctx) {
    const results = await all(TextResourceRow, d1(ctx.db)`SELECT id, content, created_at, updated_at FROM text_resources ORDER BY id`);
    const bucket = bucketIn(ctx.env, ctx.settings.storage.bucketBinding);
    if (!bucket) return results;
    const stored = await storedTextsForBackup(bucket, (id) => resourceId.safeParse(id).success, MAX_ROWS);
    const byId = new Map(results.map((r) => [r.id, r]));
    for (const [id, row] of stored) byId.set(id, row);
    return [...byId.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  },
  async validate(rows) {
    refuseDuplicates("text-resources", rows, (r) => r.id, "id");
    for (const [i, row] of rows.entries()) {
      parseAtRow("text-resources", i, "id", resourceId, row.id);
      parseAtRow("text-resources", i, "content", resourceContent, row.content);
    }
    return rows;
  },
  async apply(rows, ctx) {
    await runBatch(
      ctx.db,
      rows.map((r) => upsertTextResourceStatement(ctx.db, r)),
    );
    return { applied: rows.length };
  },
});

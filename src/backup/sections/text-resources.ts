/**
 * The `text-resources` section (docs/backup.md): the stored texts a TemplatedText `id` names (a
 * state's schema, a binding's programs, a route's expression as it was given). They restore before
 * anything that renders them.
 */
import { resourceContent, resourceId, upsertTextResourceStatement } from "../../store/text-resources";
import { defineSection, parseAtRow, refuseDuplicates, runBatch } from "../section";

export const textResourcesSection = defineSection({
  name: "text-resources",
  secret: false,
  description: "Stored text resources (what a TemplatedText id names).",
  async exportRows(ctx) {
    const { results } = await ctx.db.prepare("SELECT id, content, created_at, updated_at FROM text_resources ORDER BY id").all<{ id: string; content: string; created_at: string; updated_at: string }>();
    return results;
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
    await runBatch(ctx.db, rows.map((r) => upsertTextResourceStatement(ctx.db, r)));
    return { applied: rows.length };
  },
});

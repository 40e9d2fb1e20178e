/**
 * The `text-resources` section (docs/backup.md): the stored texts a TemplatedText `id` names (a
 * state's schema, a binding's programs, a route's expression as it was given). They restore before
 * anything that renders them.
 */
import { z } from "zod";
import { defineSection, parseAtRow, refuseDuplicates, runBatch } from "../section";

/** The storage door's rules (`POST /api/storage/resources`, src/routers/resources.ts). */
const ResourceId = z.string().regex(/^[A-Za-z0-9_./-]{1,256}$/, { message: "must be 1-256 characters of letters, digits and _ . / -" });
const ResourceContent = z.string().max(256 * 1024);

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
      parseAtRow("text-resources", i, "id", ResourceId, row.id);
      parseAtRow("text-resources", i, "content", ResourceContent, row.content);
    }
    return rows;
  },
  async apply(rows, ctx) {
    await runBatch(
      ctx.db,
      rows.map((r) =>
        ctx.db
          .prepare("INSERT INTO text_resources (id, content, created_at, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET content = excluded.content, updated_at = excluded.updated_at")
          .bind(r.id, r.content, r.created_at, r.updated_at),
      ),
    );
    return { applied: rows.length };
  },
});

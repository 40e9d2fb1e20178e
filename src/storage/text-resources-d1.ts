/**
 * The D1 text resources (`text_resources`): a TemplatedText `id` source, read after the content
 * store (src/storage/text-resources.ts has the order). A backup import restores them here.
 */
import { z } from "zod";
import { d1, first, run } from "../platform/persistence/d1";

/** A D1 text resource id, as a backup import takes it. */
export const resourceId = z.string().regex(/^[A-Za-z0-9_./-]{1,256}$/, { message: "must be 1-256 characters of letters, digits and _ . / -" });

/** A D1 text resource's content, as a backup import takes it. */
export const resourceContent = z.string().max(256 * 1024);

const TextResource = z.object({ id: z.string(), content: z.string(), created_at: z.string(), updated_at: z.string() });
export type TextResource = z.infer<typeof TextResource>;

export async function readTextResource(db: D1Database, id: string): Promise<TextResource | null> {
  return first(TextResource, d1(db)`SELECT id, content, created_at, updated_at FROM text_resources WHERE id = ${id}`);
}

/**
 * The create-or-replace of a resource as a statement; a replaced one keeps its `created_at`. A
 * backup import batches it with its document's times.
 */
export function upsertTextResourceStatement(db: D1Database, r: TextResource): D1PreparedStatement {
  return d1(db)`INSERT INTO text_resources (id, content, created_at, updated_at) VALUES (${r.id}, ${r.content}, ${r.created_at}, ${r.updated_at})
    ON CONFLICT(id) DO UPDATE SET content = excluded.content, updated_at = excluded.updated_at`.prepared();
}

export async function deleteTextResource(db: D1Database, id: string): Promise<boolean> {
  const meta = await run(d1(db)`DELETE FROM text_resources WHERE id = ${id}`);
  return (meta.changes ?? 0) > 0;
}

/** Deletes every text resource whose id is under `dir/`; how many went. */
export async function deleteTextResourcesUnder(db: D1Database, dir: string): Promise<number> {
  const prefix = `${dir}/`;
  const meta = await run(d1(db)`DELETE FROM text_resources WHERE substr(id, 1, ${prefix.length}) = ${prefix}`);
  return meta.changes ?? 0;
}

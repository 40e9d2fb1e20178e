/**
 * The D1 text resources (`text_resources`): a TemplatedText `id` source, read after the content
 * store (src/storage/text-resources.ts has the order). A backup import restores them here.
 */
import { z } from "zod";

/** A D1 text resource id, as a backup import takes it. */
export const resourceId = z.string().regex(/^[A-Za-z0-9_./-]{1,256}$/, { message: "must be 1-256 characters of letters, digits and _ . / -" });

/** A D1 text resource's content, as a backup import takes it. */
export const resourceContent = z.string().max(256 * 1024);

export interface TextResource {
  id: string;
  content: string;
  created_at: string;
  updated_at: string;
}

export async function readTextResource(db: D1Database, id: string): Promise<TextResource | null> {
  return db.prepare("SELECT id, content, created_at, updated_at FROM text_resources WHERE id = ?").bind(id).first<TextResource>();
}

/**
 * The create-or-replace of a resource as a statement; a replaced one keeps its `created_at`. A
 * backup import batches it with its document's times.
 */
export function upsertTextResourceStatement(db: D1Database, r: TextResource): D1PreparedStatement {
  return db
    .prepare(
      "INSERT INTO text_resources (id, content, created_at, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET content = excluded.content, updated_at = excluded.updated_at",
    )
    .bind(r.id, r.content, r.created_at, r.updated_at);
}

export async function deleteTextResource(db: D1Database, id: string): Promise<boolean> {
  const res = await db.prepare("DELETE FROM text_resources WHERE id = ?").bind(id).run();
  return (res.meta.changes ?? 0) > 0;
}

/** Deletes every text resource whose id is under `dir/`; how many went. */
export async function deleteTextResourcesUnder(db: D1Database, dir: string): Promise<number> {
  const prefix = `${dir}/`;
  const res = await db.prepare("DELETE FROM text_resources WHERE substr(id, 1, ?) = ?").bind(prefix.length, prefix).run();
  return res.meta.changes ?? 0;
}

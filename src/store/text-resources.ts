/** Stored text resources (D1 `text_resources`), the `id` source of TemplatedText. */
import { z } from "zod";

/** A resource id, as the storage door and a backup import take it. */
export const resourceId = z.string().regex(/^[A-Za-z0-9_./-]{1,256}$/, { message: "must be 1-256 characters of letters, digits and _ . / -" });

/** A resource's content, as the storage door and a backup import take it. */
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
 * The create-or-replace of a resource as a statement; a replaced one keeps its `created_at`. The
 * storage door stamps both times now, a backup import batches it with its document's times.
 */
export function upsertTextResourceStatement(db: D1Database, r: TextResource): D1PreparedStatement {
  return db
    .prepare(
      "INSERT INTO text_resources (id, content, created_at, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET content = excluded.content, updated_at = excluded.updated_at",
    )
    .bind(r.id, r.content, r.created_at, r.updated_at);
}

export async function writeTextResource(db: D1Database, id: string, content: string, now: string): Promise<{ created: boolean; resource: TextResource }> {
  const existing = await readTextResource(db, id);
  await upsertTextResourceStatement(db, { id, content, created_at: now, updated_at: now }).run();
  return { created: !existing, resource: (await readTextResource(db, id))! };
}

export async function deleteTextResource(db: D1Database, id: string): Promise<boolean> {
  const res = await db.prepare("DELETE FROM text_resources WHERE id = ?").bind(id).run();
  return (res.meta.changes ?? 0) > 0;
}

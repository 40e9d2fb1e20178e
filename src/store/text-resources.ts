/** Stored text resources (D1 `text_resources`), the `id` source of TemplatedText. */
export interface TextResource {
  id: string;
  content: string;
  created_at: string;
  updated_at: string;
}

export async function readTextResource(db: D1Database, id: string): Promise<TextResource | null> {
  return db.prepare("SELECT id, content, created_at, updated_at FROM text_resources WHERE id = ?").bind(id).first<TextResource>();
}

export async function writeTextResource(db: D1Database, id: string, content: string, now: string): Promise<{ created: boolean; resource: TextResource }> {
  const existing = await readTextResource(db, id);
  await db
    .prepare(
      "INSERT INTO text_resources (id, content, created_at, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT(id) DO UPDATE SET content = excluded.content, updated_at = excluded.updated_at",
    )
    .bind(id, content, now, now)
    .run();
  return { created: !existing, resource: (await readTextResource(db, id))! };
}

export async function deleteTextResource(db: D1Database, id: string): Promise<boolean> {
  const res = await db.prepare("DELETE FROM text_resources WHERE id = ?").bind(id).run();
  return (res.meta.changes ?? 0) > 0;
}

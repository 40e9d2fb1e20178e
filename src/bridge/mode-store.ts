/** Per-thread control-mode overrides in D1 (spec §3.2). Expired overrides read as absent. */
export type Mode = "agent" | "manual";

export async function readOverride(db: D1Database, threadId: string, nowMs: number): Promise<Mode | null> {
  const r = await db
    .prepare("SELECT mode FROM mode_overrides WHERE thread_id = ? AND expires_at > ?")
    .bind(threadId, nowMs)
    .first<{ mode: Mode }>();
  return r?.mode ?? null;
}

export async function setOverride(db: D1Database, routeName: string, threadId: string, mode: Mode, expiresAtMs: number): Promise<void> {
  await db
    .prepare(
      "INSERT INTO mode_overrides (thread_id, route_name, mode, expires_at) VALUES (?, ?, ?, ?) ON CONFLICT(thread_id) DO UPDATE SET mode = excluded.mode, route_name = excluded.route_name, expires_at = excluded.expires_at",
    )
    .bind(threadId, routeName, mode, expiresAtMs)
    .run();
}

/** Pushes an existing override's expiry forward (each accepted inbound and operator send). */
export async function refreshOverride(db: D1Database, threadId: string, nowMs: number, expiresAtMs: number): Promise<void> {
  await db.prepare("UPDATE mode_overrides SET expires_at = ? WHERE thread_id = ? AND expires_at > ?").bind(expiresAtMs, threadId, nowMs).run();
}

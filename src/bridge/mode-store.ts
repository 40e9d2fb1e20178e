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

/**
 * The route and the thread's live override in one D1 round trip: what a turn needs right before
 * it runs (the mode is re-checked there so an answer never goes out after a takeover).
 */
export async function routeAndOverride(db: D1Database, routeName: string, threadId: string, nowMs: number): Promise<{ route: unknown | null; override: Mode | null }> {
  const [route, override] = await db.batch([
    db.prepare("SELECT * FROM routes WHERE route_name = ?").bind(routeName),
    db.prepare("SELECT mode FROM mode_overrides WHERE thread_id = ? AND expires_at > ?").bind(threadId, nowMs),
  ]);
  return { route: route.results[0] ?? null, override: ((override.results[0] as { mode?: Mode } | undefined)?.mode ?? null) };
}

/**
 * The interaction event ring: the InteractionHub object's SQLite. Ids increase and are
 * never reused (the last one given is kept in `ring_meta`), so a stream resumes after the last id it saw (`Last-Event-ID`).
 * The ring keeps the newest `INTERACTIONS_EVENTS_MAX` events; the highest id trimmed away is kept,
 * so a reader asking from before it learns it missed events (`gap`). Erasure drops an
 * interaction's events without counting as a gap.
 */
import { type InteractionEvent, InteractionEventInput } from "./rpc";
import { parseStored } from "../platform/persistence/stored-json";
import { type ObjectSchema, migrateSchema } from "../platform/persistence/object-sql";

/**
 * The `interaction-hub` schema. Version 1 is the tables as the store first created them, with
 * `IF NOT EXISTS`: a store written before versions adopts it with its rows kept.
 */
export const HUB_RING_SCHEMA: ObjectSchema = {
  name: "interaction-hub",
  steps: [
    [
      "CREATE TABLE IF NOT EXISTS events (id INTEGER PRIMARY KEY, interaction_id TEXT NOT NULL, audience TEXT, event TEXT NOT NULL)",
      "CREATE INDEX IF NOT EXISTS events_by_interaction ON events (interaction_id)",
      "CREATE TABLE IF NOT EXISTS ring_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)",
    ],
  ],
};

/** Brings the `interaction-hub` tables to their current version (idempotent). */
export function migrateRing(sql: SqlStorage): void {
  migrateSchema(sql, HUB_RING_SCHEMA);
}

/** Appends events in order and trims the ring to `cap`. */
export function appendEvents(sql: SqlStorage, events: readonly InteractionEventInput[], cap: number): void {
  let id = lastEventId(sql);
  for (const e of events)
    sql.exec("INSERT INTO events (id, interaction_id, audience, event) VALUES (?, ?, ?, ?)", ++id, e.interaction_id, e.audience, JSON.stringify(e));
  sql.exec("INSERT INTO ring_meta (key, value) VALUES ('last_id', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", id);
  const cut = sql.exec<{ id: number }>("SELECT id FROM events ORDER BY id DESC LIMIT 1 OFFSET ?", cap).toArray()[0];
  if (cut) {
    sql.exec("DELETE FROM events WHERE id <= ?", cut.id);
    sql.exec("INSERT INTO ring_meta (key, value) VALUES ('trimmed_through', ?) ON CONFLICT (key) DO UPDATE SET value = MAX(value, excluded.value)", cut.id);
  }
}

/** The newest id ever given (0: none). */
export function lastEventId(sql: SqlStorage): number {
  return sql.exec<{ value: number }>("SELECT value FROM ring_meta WHERE key = 'last_id'").toArray()[0]?.value ?? 0;
}

/** The highest id trimmed away (0: none). */
export function trimmedThrough(sql: SqlStorage): number {
  return sql.exec<{ value: number }>("SELECT value FROM ring_meta WHERE key = 'trimmed_through'").toArray()[0]?.value ?? 0;
}

/**
 * Events after `after`, oldest first, at most `limit`, only `audience`'s when given; with
 * `audienceSince` (ISO-8601), only of interactions created at or after it (a reader's key lineage,
 * src/access-control/identity.ts).
 */
export function eventsAfter(sql: SqlStorage, after: number, audience: string | null, limit: number, audienceSince?: string): InteractionEvent[] {
  const rows =
    audience === null
      ? sql.exec<{ id: number; event: string }>("SELECT id, event FROM events WHERE id > ? ORDER BY id LIMIT ?", after, limit).toArray()
      : audienceSince === undefined
        ? sql
            .exec<{ id: number; event: string }>("SELECT id, event FROM events WHERE id > ? AND audience = ? ORDER BY id LIMIT ?", after, audience, limit)
            .toArray()
        : sql
            .exec<{ id: number; event: string }>(
              "SELECT id, event FROM events WHERE id > ? AND audience = ? AND json_extract(event, '$.interaction.created_at') >= ? ORDER BY id LIMIT ?",
              after,
              audience,
              audienceSince,
              limit,
            )
            .toArray();
  return rows.map((r) => ({ id: r.id, ...parseStored(InteractionEventInput, r.event, "events.event") }));
}

/** Erasure: drops the events of these interactions; answers how many. */
export function dropInteractionEvents(sql: SqlStorage, interactionIds: readonly string[]): number {
  let n = 0;
  for (const id of interactionIds) n += sql.exec("DELETE FROM events WHERE interaction_id = ?", id).rowsWritten;
  return n;
}

/**
 * The interaction event ring: the InteractionHub object's SQLite. Ids increase and are
 * never reused (the last one given is kept in `ring_meta`), so a stream resumes after the last id it saw (`Last-Event-ID`).
 * The ring keeps the newest `INTERACTIONS_EVENTS_MAX` events; the highest id trimmed away is kept,
 * so a reader asking from before it learns it missed events (`gap`). Erasure drops an
 * interaction's events without counting as a gap.
 */
import { type InteractionEvent, InteractionEventInput } from "./rpc";
import { parseStored } from "../platform/persistence/stored-json";
import { type ObjectSchema, migrateSchema, objectSql } from "../platform/persistence/object-sql";

/** The store's name in its statements' errors. */
const STORE = "interaction-hub";

/**
 * The `interaction-hub` schema. Version 1 is the tables as the store first created them, with
 * `IF NOT EXISTS`: a store written before versions adopts it with its rows kept.
 */
export const HUB_RING_SCHEMA: ObjectSchema = {
  name: STORE,
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
  const q = objectSql(sql, STORE);
  let id = lastEventId(sql);
  for (const e of events) {
    id += 1;
    q.run`INSERT INTO events (id, interaction_id, audience, event) VALUES (${id}, ${e.interaction_id}, ${e.audience}, ${JSON.stringify(e)})`;
  }
  q.run`INSERT INTO ring_meta (key, value) VALUES ('last_id', ${id}) ON CONFLICT (key) DO UPDATE SET value = excluded.value`;
  const cut = q.one<{ id: number }>`SELECT id FROM events ORDER BY id DESC LIMIT 1 OFFSET ${cap}`;
  if (cut) {
    q.run`DELETE FROM events WHERE id <= ${cut.id}`;
    q.run`INSERT INTO ring_meta (key, value) VALUES ('trimmed_through', ${cut.id}) ON CONFLICT (key) DO UPDATE SET value = MAX(value, excluded.value)`;
  }
}

/** The newest id ever given (0: none). */
export function lastEventId(sql: SqlStorage): number {
  return objectSql(sql, STORE).one<{ value: number }>`SELECT value FROM ring_meta WHERE key = 'last_id'`?.value ?? 0;
}

/** The highest id trimmed away (0: none). */
export function trimmedThrough(sql: SqlStorage): number {
  return objectSql(sql, STORE).one<{ value: number }>`SELECT value FROM ring_meta WHERE key = 'trimmed_through'`?.value ?? 0;
}

/**
 * Events after `after`, oldest first, at most `limit`, only `audience`'s when given; with
 * `audienceSince` (ISO-8601), only of interactions created at or after it (a reader's key lineage,
 * src/access-control/identity.ts).
 */
export function eventsAfter(sql: SqlStorage, after: number, audience: string | null, limit: number, audienceSince?: string): InteractionEvent[] {
  const q = objectSql(sql, STORE);
  type Row = { id: number; event: string };
  const rows =
    audience === null
      ? q<Row>`SELECT id, event FROM events WHERE id > ${after} ORDER BY id LIMIT ${limit}`
      : audienceSince === undefined
        ? q<Row>`SELECT id, event FROM events WHERE id > ${after} AND audience = ${audience} ORDER BY id LIMIT ${limit}`
        : q<Row>`SELECT id, event FROM events
            WHERE id > ${after} AND audience = ${audience} AND json_extract(event, '$.interaction.created_at') >= ${audienceSince} ORDER BY id LIMIT ${limit}`;
  return rows.map((r) => ({ id: r.id, ...parseStored(InteractionEventInput, r.event, "events.event") }));
}

/** Erasure: drops the events of these interactions; answers how many. */
export function dropInteractionEvents(sql: SqlStorage, interactionIds: readonly string[]): number {
  const q = objectSql(sql, STORE);
  let n = 0;
  for (const id of interactionIds) n += q.run`DELETE FROM events WHERE interaction_id = ${id}`;
  return n;
}

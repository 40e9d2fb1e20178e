/**
 * What the thread's inbox parts keep in storage and must know before their first use: the inbox
 * state (src/conversations/thread/inbox.ts), the events queue's next instant (inbox-events.ts) and
 * the notes' earliest expiry (notes.ts). They are read in one statement, once per instance and
 * again at each alarm firing, and each part then keeps its own copy from the writes it makes, like
 * the records' book: a message on a thread the inbox never touched costs one read per instance for
 * all three, and nothing after.
 */
// Its own tag, not the store's helper: the store migrates the notes table, whose part reads here.
import { objectSql } from "../../platform/persistence/object-sql";

export interface InboxInstants {
  /** The stored inbox state's JSON, or null. */
  inbox: string | null;
  /** When the head event may go next (its retry, or its claim's end), or null for an empty queue. */
  eventsDue: number | null;
  /** The earliest note expiry, or null. */
  notesDue: number | null;
}

/** Per object storage: the instants last read, and which parts have taken their copy since. */
const seeds = new WeakMap<DurableObjectStorage, { value: InboxInstants; taken: Set<keyof InboxInstants> }>();

function read(storage: DurableObjectStorage): InboxInstants {
  const row = objectSql(storage.sql, "thread (inbox instants)")<{ inbox: string | null; events_due: number | null; notes_due: number | null }>`SELECT
      (SELECT value FROM meta WHERE key = 'inbox') AS inbox,
      (SELECT MAX(due_at, COALESCE(lease_until, 0)) FROM (SELECT due_at, lease_until FROM inbox_events ORDER BY seq LIMIT 1)) AS events_due,
      (SELECT MIN(expires_at) FROM notes) AS notes_due`[0];
  return { inbox: row?.inbox ?? null, eventsDue: row?.events_due ?? null, notesDue: row?.notes_due ?? null };
}

/**
 * A part's first look at its instant: from the shared read the first time since it was made (read
 * now when there is none), undefined once the part has taken it (the part then reads its own, as
 * its writes may have moved it).
 */
export function seedOf<K extends keyof InboxInstants>(storage: DurableObjectStorage, part: K): InboxInstants[K] | undefined {
  let seed = seeds.get(storage);
  if (!seed) {
    seed = { value: read(storage), taken: new Set() };
    seeds.set(storage, seed);
  }
  if (seed.taken.has(part)) return undefined;
  seed.taken.add(part);
  return seed.value[part];
}

/** The alarm fired: the next look of each part reads the stored instants again, in one statement. */
export function reloadInboxInstants(storage: DurableObjectStorage): void {
  seeds.delete(storage);
}

/**
 * A thread object that holds nothing gives its storage back. A web mint creates an object for a
 * visitor who may never return (src/conversations/thread/web-visitor.ts); once its pending session
 * is swept, or a credential for it is refused, the object holds only its schema, and that schema
 * alone would keep a stored object per page load. `holdsNothing` asks every table rather than a
 * list of them, so a table added later keeps an object that uses it.
 */
import { objectSql, sqlText } from "../../platform/persistence/object-sql";

/**
 * The meta rows that only version a schema line (store.ts, idempotency-keys.ts): every line's
 * version row is named `…schema_version`, so an object holding just these holds nothing.
 */
const SCHEMA_KEY = "%schema_version";

/** The tag for the vacancy statement `name`, named in its errors. */
function vacancySql(storage: DurableObjectStorage, name: string) {
  return objectSql(storage.sql, `thread vacancy (${name})`);
}

/**
 * True when the object stores no row of any table beyond its schema versions, and no key-value
 * entry. Runs only where an object may have emptied (a swept or refused session), never on a turn.
 */
export async function holdsNothing(storage: DurableObjectStorage): Promise<boolean> {
  const tables = vacancySql(storage, "tables")<{
    name: string;
  }>`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name <> '_schema'`.map((r) => r.name);
  for (const table of tables) {
    const held =
      table === "meta"
        ? vacancySql(storage, table)`SELECT 1 FROM meta WHERE key NOT LIKE ${SCHEMA_KEY} LIMIT 1`
        : vacancySql(storage, table)`SELECT 1 FROM ${sqlText(`"${table.replace(/"/g, '""')}"`)} LIMIT 1`;
    if (held.length) return false;
  }
  return (await storage.list({ limit: 1 })).size === 0;
}

/** Deletes the object's whole storage and its alarm; the schema is created again on the next use. */
export async function vacate(storage: DurableObjectStorage): Promise<void> {
  await storage.deleteAlarm();
  await storage.deleteAll();
}

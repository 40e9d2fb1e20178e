/**
 * How every Durable Object shell (durable-objects/*.ts) starts, so each brings its storage up to
 * date the same way before it answers anything.
 *
 * `migrate` brings the object's own SQLite to its current schema (`migrateSchema`, object-sql.ts):
 * synchronous and local, it runs at once, inside the constructor, so the parts the shell composes
 * next find their tables, and no request can reach the object before it ran (a constructor runs to
 * its end before any event is delivered). It is not deferred to `blockConcurrencyWhile`: the
 * runtime runs that callback after the constructor returns, when the parts are already composed.
 *
 * `load` reads what the instance keeps in memory (a floor, an expiry, the isolate's settings
 * overlay) inside `blockConcurrencyWhile`, so the first request waits for it. A failure of either
 * fails the object's start rather than letting a request run on a half-started instance.
 *
 * An object whose storage stays empty until its first write (one that must not leave a stored
 * object behind a read) migrates only a store that exists; its first write creates the store.
 */
export interface ObjectStart {
  /** Brings the object's SQLite to its current schema: synchronous, local storage only. */
  migrate?(storage: DurableObjectStorage): void;
  /** Reads what the instance holds in memory before its first request. */
  load?(storage: DurableObjectStorage): Promise<void>;
}

/** Starts one Durable Object (see the module comment); call it first in the shell's constructor. */
export function startObject(ctx: DurableObjectState, start: ObjectStart): void {
  start.migrate?.(ctx.storage);
  const { load } = start;
  if (load) void ctx.blockConcurrencyWhile(() => load(ctx.storage));
}

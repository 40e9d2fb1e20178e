/**
 * Schema-migration tests build a store's old shape by hand in a fresh object's storage and run the
 * store's migration over it. The scratch object is a MarketplaceLock: its one `lease` table shares
 * no name with the stores under test.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";

export function inScratchObject<T>(fn: (sql: SqlStorage, storage: DurableObjectStorage) => T): Promise<T> {
  const stub = env.MARKETPLACE_LOCK.get(env.MARKETPLACE_LOCK.idFromName(`schema-scratch-${crypto.randomUUID()}`));
  return runInDurableObject(stub, (_o, state) => fn(state.storage.sql, state.storage));
}

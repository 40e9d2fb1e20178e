/**
 * What the PersonDirectory object's parts share: its SQLite, the get-or-create that keeps a verb's
 * writes in one synchronous block, the person listing in the ledger (so the person doors find a
 * directory by person id alone), and the sweep alarm. The parts (src/persons/directory-people.ts,
 * src/persons/directory-pairing.ts) are composed over one kit by src/persons/compose.ts.
 */
import type { Arrival, PersonView } from "./rpc";
import { personDirectoryName } from "./rpc";
import { ledgerShard, personKey } from "../shards/rpc";
import type { Env } from "../platform/env";
import type { Clock } from "../platform/clock";
import { doorAddressKey } from "./pairing";
import { addRoute, adoptTarget, attachAddress, createPerson, personOfAddress, personView } from "./person-store";

export interface DirectoryDeps {
  storage: DurableObjectStorage;
  /** The object's env, read through a function so it follows the object's. */
  env: () => Env;
  clock: Clock;
}

export interface DirectoryKit extends DirectoryDeps {
  sql: SqlStorage;
  /** Get-or-create without awaiting anything, so the caller's writes stay in one transaction. */
  ensureSync(arrival: Arrival, localeHint: string | null, nowMs: number): { personId: string; created: boolean };
  /** The view of a person this verb has just written (it exists: the write is in the same block). */
  written(personId: string): PersonView;
  /** Lists person `personId` in the ledger, so the person doors find this directory by id alone. */
  indexPerson(personId: string, target: Arrival["target"]): Promise<void>;
  unindexPerson(personId: string): Promise<void>;
  /** Arms the sweep no later than `at`. */
  arm(at: number): Promise<void>;
}

export function directoryKit(deps: DirectoryDeps): DirectoryKit {
  const { storage } = deps;
  const sql = storage.sql;
  return {
    ...deps,
    sql,
    ensureSync(arrival, localeHint, nowMs) {
      adoptTarget(sql, arrival.target);
      const key = doorAddressKey(arrival.address);
      const existing = personOfAddress(sql, key);
      if (existing) {
        addRoute(sql, key, arrival.route_name);
        return { personId: existing, created: false };
      }
      const personId = createPerson(sql, nowMs, localeHint);
      attachAddress(sql, personId, arrival.address, [arrival.route_name], nowMs);
      return { personId, created: true };
    },
    written(personId) {
      const view = personView(sql, personId);
      if (!view) throw new Error("person directory: a person just written cannot be read back");
      return view;
    },
    async indexPerson(personId, target) {
      const k = personKey(personId);
      // No thread_id: forgetting the person thread drops a thread's ledger entries, and must not drop this one.
      await ledgerShard(deps.env(), k).put(k, { message_id: personId, thread_id: "", route_name: personDirectoryName(target.kind, target.name) }, null);
    },
    async unindexPerson(personId) {
      const k = personKey(personId);
      await ledgerShard(deps.env(), k).drop([k]);
    },
    async arm(at) {
      const current = await storage.getAlarm();
      if (current === null || current > at) await storage.setAlarm(at);
    },
  };
}

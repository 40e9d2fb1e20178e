/**
 * Finds a person by id alone (the person doors carry no target): the `person` ledger entry names
 * the PersonDirectory that holds it (src/shards/rpc.ts).
 */
import { type PersonDirectoryRpc, personDirectoryStub } from "./rpc";
import { ledgerShard, personKey } from "../shards/rpc";
import type { Env } from "../platform/env";
import { TargetKind } from "../shared/kinds";

/** The directory holding person `personId`, or null when no directory lists it. */
export async function directoryOfPerson(env: Env, personId: string): Promise<PersonDirectoryRpc | null> {
  const k = personKey(personId);
  const entry = await ledgerShard(env, k).find(k, Date.now());
  if (!entry?.route_name) return null;
  const cut = entry.route_name.indexOf(":");
  const kind = TargetKind.safeParse(entry.route_name.slice(0, cut));
  if (cut < 0 || !kind.success) return null;
  return personDirectoryStub(env, kind.data, entry.route_name.slice(cut + 1));
}

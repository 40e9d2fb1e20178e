/**
 * The check a live channel (a console socket, an event stream) makes before each push: is the key
 * that opened it still there, enabled, with its owner, and still granted the door it came through?
 * (docs/security.md "Every live channel dies with its credential".)
 *
 * What a check costs: the key comes from the isolate key cache (src/access-control/key-cache.ts),
 * so one read of the key's access epoch (an AccessEpoch object, no D1) while nothing changed, and
 * one D1 statement after a change to the key, its owner, their roles or scopes was published. The
 * grant is evaluated again only when the cached key record changed (a new record is a new object)
 * or its verdict is older than VERDICT_MAX_AGE_MS, so a key's conditions (jq programs) do not run
 * per push, while a condition over the time of day still closes the channel within that bound.
 */
import type { Env } from "../platform/env";
import type { TargetKind } from "../shared/kinds";
import { type Requirement, authorize, principalByHash, principalGrantsRun, readCredential } from "./principal";
import type { KeyRecord } from "./key-store";
import { sha256Hex } from "./crypto";

/** How long a grant verdict stands for an unchanged key record (conditions over `now` move on their own). */
export const VERDICT_MAX_AGE_MS = 60_000;

/** The door a live channel was opened through: what its key had to be granted, on which path. */
export interface LiveDoor {
  need: Requirement;
  request: { method: string; path: string };
  /** A run grant the door also asked for (an agent's streamed run). */
  run?: { kind: TargetKind; name: string };
}

/** The SHA-256 of the key a request presented (`x-api-key` or a bearer), as the key table stores it; null without one. */
export async function presentedKeyHash(headers: Headers): Promise<string | null> {
  const credential = readCredential(headers);
  return credential ? sha256Hex(credential) : null;
}

interface Verdict {
  owner: KeyRecord | null;
  ok: boolean;
  at: number;
}

/** Verdicts by key record, then by door: a record replaced in the key cache takes its verdicts with it. */
const verdicts = new WeakMap<KeyRecord, Map<string, Verdict>>();

/**
 * True while the key whose SHA-256 is `keyHash` may still use `door`. Never throws: a check that
 * could not be made (the epoch object or D1 unreachable) answers false, so the channel closes and
 * its client opens it again through the door, which checks from scratch.
 */
export async function keyStillAllows(env: Env, keyHash: string, door: LiveDoor, nowMs = Date.now()): Promise<boolean> {
  try {
    const p = await principalByHash(env, keyHash);
    if (!p) return false;
    const run = door.run ? `${door.run.kind}:${door.run.name}` : "";
    const memoKey = `${door.need.tag}\u0000${door.need.action}\u0000${door.need.admin ? 1 : 0}\u0000${door.request.method} ${door.request.path}\u0000${run}`;
    let byDoor = verdicts.get(p.key);
    const held = byDoor?.get(memoKey);
    if (held && held.owner === p.owner && nowMs - held.at < VERDICT_MAX_AGE_MS) return held.ok;
    let ok = true;
    try {
      await authorize(p, door.need, door.request, new Date(nowMs));
      if (door.run && !principalGrantsRun(p, door.run.kind, door.run.name)) ok = false;
    } catch {
      ok = false;
    }
    if (!byDoor) verdicts.set(p.key, (byDoor = new Map()));
    byDoor.set(memoKey, { owner: p.owner, ok, at: nowMs });
    return ok;
  } catch (err) {
    console.error(JSON.stringify({ event: "live_key_check_failed", error: err instanceof Error ? err.message : String(err) }));
    return false;
  }
}

/**
 * One delivery's fire (docs/hooks.md "What a fire does"): shared by the public topic door
 * and the trigger links. For each hook of the topic, in name order:
 *
 * 1. `condition` (jq over the payload, under the budget) must emit exactly `true`; otherwise the
 *    hook is skipped (a jq error is a skip with its kind, never a 5xx);
 * 2. `expr` (jq over the payload) must emit exactly one object: the weakest layer of the input;
 * 3. the input is the shallow merge, strongest last: the expr output, then a trigger link's
 *    `tool_kwargs`, then the hook's own `tool_kwargs`;
 * 4. a background tool run is submitted (src/tool-runs/submit.ts) as the hook's bound execution key
 *    (a trigger link's own key when the fire came through a link), `origin: "hook"` with the hook's
 *    name and its state binding. The run re-checks the key's live grants when it starts, is
 *    retried by its object's alarm, and records a `hook_fire` trace.
 *
 * Replays: the delivery's replay key (a signed delivery id, or a digest of the signed body: see
 * src/hooks/deliveries.ts) is claimed in the IndexShard ledger (namespace `hook:<topic>`, or
 * `hook-link:<first 32 hex of the link's token hash>` for a link) before anything fires; a claim
 * already held answers `already_seen` and fires nothing. Run ids are derived from (namespace, replay key, hook), so when a submit fails
 * and the claim is released for the provider's redelivery, the hooks that were already submitted
 * are not run twice (submitting is idempotent by run id).
 */
import { sha256Hex } from "../access-control/crypto";
import { type LedgerKey, ledgerShard } from "../shards/rpc";
import type { Env } from "../platform/env";
import { type JsonObject, type JsonValue, checkJsonBounds } from "../platform/http/bounded-json";
import { MAX_BODY_BYTES } from "../platform/http/body";
import { submitToolRun } from "../tool-runs/submit";
import { conditionHolds, exprInput } from "./programs";
import type { HookRow } from "./record";

/** The largest tool input a fire passes on (a provider payload forwarded whole fits the body cap). */
export const MAX_FIRE_INPUT_BYTES = MAX_BODY_BYTES;

export interface FireSource {
  /** The ledger namespace of the delivery ids (`hook:<topic>`, or `hook-link:<token hash prefix>` for a link). */
  namespace: string;
  /** The replay key (a signed delivery id or a digest of the signed body; an open topic's or a link's X-Delivery-Id), or null (no dedupe for this delivery). */
  deliveryId: string | null;
  /** A trigger link's kwargs and key, when the fire came through one. */
  link: { tool_kwargs: JsonObject; execution_key: string; execution_key_fingerprint: string } | null;
}

export interface Fired {
  hook: string;
  run_id: string;
}
export interface Skipped {
  hook: string;
  reason: string;
}
export type FireAnswer = { status: "accepted"; fired: Fired[]; skipped: Skipped[] } | { status: "already_seen" };

/** A UUID-shaped id (version 4 layout) from 32 hex digits of a digest. */
function uuidFromHex(h: string): string {
  const variant = ((parseInt(h[16], 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

async function runIdFor(source: FireSource, hook: string): Promise<string> {
  if (source.deliveryId === null) return crypto.randomUUID();
  return uuidFromHex(await sha256Hex(`hook-run\u0000${source.namespace}\u0000${source.deliveryId}\u0000${hook}`));
}

/** Claims the delivery id; answers the release to call when the fire cannot complete, or null when it was already seen. */
async function claim(env: Env, source: FireSource, nowMs: number, windowSeconds: number): Promise<{ release: () => Promise<void> } | null> {
  if (source.deliveryId === null) return { release: async () => undefined };
  const k: LedgerKey = { namespace: source.namespace, key: source.deliveryId };
  const mine = crypto.randomUUID();
  const shard = ledgerShard(env, k);
  const held = await shard.claim(k, { message_id: mine, thread_id: "", route_name: null }, nowMs + windowSeconds * 1000, nowMs);
  if (held.message_id !== mine) return null;
  return { release: () => shard.release(k, mine) };
}

/** Fires `hooks` (a topic's, in name order) for `payload`. Throws only when a run could not be submitted (the claim is released first). */
export async function fireHooks(
  env: Env,
  hooks: HookRow[],
  payload: JsonValue,
  source: FireSource,
  replayWindowSeconds: number,
  now: Date,
): Promise<FireAnswer> {
  if (hooks.length === 0) return { status: "accepted", fired: [], skipped: [] };
  const claimed = await claim(env, source, now.getTime(), replayWindowSeconds);
  if (!claimed) return { status: "already_seen" };
  const fired: Fired[] = [];
  const skipped: Skipped[] = [];
  try {
    for (const hook of hooks) {
      const holds = await conditionHolds(hook.condition_program, payload);
      if (!holds.ok) {
        skipped.push({ hook: hook.name, reason: holds.reason });
        continue;
      }
      if (!holds.value) {
        skipped.push({ hook: hook.name, reason: "condition was not true" });
        continue;
      }
      const base = await exprInput(hook.expr_program, payload);
      if (!base.ok) {
        skipped.push({ hook: hook.name, reason: base.reason });
        continue;
      }
      const input = { ...base.value, ...(source.link?.tool_kwargs ?? {}), ...hook.tool_kwargs } as JsonObject;
      const broken = checkJsonBounds(input, MAX_FIRE_INPUT_BYTES);
      if (broken) {
        skipped.push({ hook: hook.name, reason: `the tool input ${broken}` });
        continue;
      }
      const caller = source.link
        ? { user_id: source.link.execution_key, fingerprint: source.link.execution_key_fingerprint }
        : { user_id: hook.execution_key, fingerprint: hook.execution_key_fingerprint };
      const run_id = await runIdFor(source, hook.name);
      await submitToolRun(env, {
        run_id,
        tool_name: hook.tool,
        arguments: input,
        caller,
        origin: "hook",
        schedule_name: null,
        slot_at: null,
        hook_name: hook.name,
        state_binding: hook.state_binding,
        binding_by: hook.created_by,
      });
      fired.push({ hook: hook.name, run_id });
    }
  } catch (err) {
    // A run that could not be submitted (D1 or an object out of reach): the provider redelivers, and
    // the derived run ids keep the hooks already submitted from running twice.
    await claimed.release().catch(() => undefined);
    throw err;
  }
  return { status: "accepted", fired, skipped };
}

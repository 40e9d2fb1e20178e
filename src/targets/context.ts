/** What every target runs with. Built from env + settings, never from a Hono context, so the
 * bridge can dispatch from inside a Durable Object. */
import type { KeyWithOwner } from "../access-control/key-store";
import type { Mode, TargetKind } from "../shared/kinds";
import type { DoorAddress } from "../persons/pairing";
import type { Env } from "../platform/env";
import type { AskUserInput } from "../interactions/ask";
import { edgeFetch } from "../platform/net/edge-fetch";
import type { Settings } from "../platform/settings/settings";
import { type LocalThreadMemory, checkpointStoreFor } from "./checkpoints";
import type { CheckpointStore } from "../shared/agent-memory";

export interface TargetContext {
  env: Env;
  db: D1Database;
  settings: Settings;
  /** Injected; production passes the network edge (src/platform/net/edge-fetch.ts). */
  fetch: typeof fetch;
  now: () => Date;
  /** Present only inside a bridge turn; lets built-ins act on the calling turn's thread. */
  turn?: {
    thread_id: string;
    route_name: string;
    setMode: (mode: Mode) => Promise<void>;
    /** The thread's labels (docs/inbox.md): removals, then additions; answers the labels now held. */
    setLabels?: (add: string[], remove: string[]) => Promise<string[]>;
    conversation?: TurnConversation;
  };
  /** Checkpoint store selected by settings. */
  checkpoints: CheckpointStore;
  /**
   * Set only while a run that can park is running (an llm agent's loop or a bridge tool turn that
   * may suspend): `ask_user` hands its validated question here instead of answering, and
   * the run stops to wait for the answer. Absent (run-tool, background runs), `ask_user` refuses.
   */
  ask?: AskSlot;
  /**
   * Stops the run when it aborts (a stopped bridge turn): an agent run checks it before every model
   * call and tool call and passes it to its model and agent endpoint calls, so a stream ends
   * mid-answer; then the run throws TurnStopped (src/targets/agents/events.ts).
   */
  signal?: AbortSignal;
}

/**
 * The conversation a turn belongs to, as its target's person directory keys it: the one
 * conversation `get_pairing_code` may mint for inside the turn. `multichannel` is the target's
 * config as the turn read it.
 */
export interface TurnConversation {
  target: { kind: TargetKind; name: string };
  address: DoorAddress;
  multichannel: boolean;
}

/** Where `ask_user` hands its question (see `TargetContext.ask`). */
export interface AskSlot {
  park(request: AskUserInput): void;
}

/**
 * The execution key a dispatch or run acts as: re-read live at every call. `prefetched` is the
 * key as the turn read it moments before firing (batched with its route); it serves only the
 * first authorization of the turn, and later calls (an agent's tool calls) read again.
 */
export type ExecutionKeyRef = { user_id: string; fingerprint: string; prefetched?: KeyWithOwner | null };

/**
 * The key a dispatch is for when it does not run as an execution key: a door that authorized its
 * caller itself (run-tool, a sub-MCP app's tools/call). Never authorizes anything; it scopes what
 * the call may share with other calls of the same key (the `cache` extension).
 */
export type CallerRef = { user_id: string; fingerprint: string };

/**
 * Builds a production context. `fetch` defaults to the network edge, which calls the global
 * fetch unbound-safely and lets workerd tests swap in a fake network. `local` is the calling
 * ThreadObject's own memory (kv checkpoints without RPC); `signal` stops the runs made with it.
 */
export function createTargetContext(
  env: Env,
  settings: Settings,
  opts: { fetch?: typeof fetch; now?: () => Date; turn?: TargetContext["turn"]; local?: LocalThreadMemory; signal?: AbortSignal } = {},
): TargetContext {
  const now = opts.now ?? (() => new Date());
  return {
    env,
    db: env.DB,
    settings,
    fetch: opts.fetch ?? edgeFetch,
    now,
    turn: opts.turn,
    signal: opts.signal,
    checkpoints: checkpointStoreFor(env, settings, { local: opts.local, now }),
  };
}

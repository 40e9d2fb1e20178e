/**
 * What the thread's parts run with. The object hands each part only the members it needs; a test
 * can hand a part its own storage, settings, clock and network.
 */
import type { CounterDelta, FailedRow, RunRow } from "../../shards/rpc";
import type { Env } from "../../platform/env";
import type { Clock } from "../../platform/clock";
import { setJqBudget } from "../../platform/jq/engine";
import { isolateSettings } from "../../config/isolate-settings";
import { objectEnvNow } from "../../config/object-settings";
import type { Settings } from "../../platform/settings/settings";

/** The dependencies of a thread's parts. */
export interface ThreadDeps {
  /** The object's own SQLite-backed storage. */
  storage: DurableObjectStorage;
  /** The Worker env, read on each use (bindings and settings follow the object's env). */
  env: () => Env;
  /** The validated settings; throws on an invalid configuration, as every door does. */
  settings: () => Settings;
  /** The clock the parts read time from (the shell injects the system clock). */
  clock: Clock;
  /** The network edge every outbound request goes through (src/platform/net/edge-fetch.ts). */
  fetch: typeof fetch;
}

/** Re-arms the object's one alarm (ThreadAlarm.arm): the only way a part sets the alarm. */
export interface AlarmArm {
  arm(): Promise<void>;
  /** The agent memory was written here: its expiry is read again at the next arm. */
  memoryChanged?(): void;
}

/**
 * Notes a record transition for the admin listings (IndexOutbox.note): synchronous, in the
 * transition's own transaction; the push to the listing shard follows in the background.
 */
export interface IndexWriter {
  note(change?: IndexNote): void;
  /** Resolves once no push is in flight (and nothing noted is left unpushed, barring a failed push). */
  drained(): Promise<void>;
}

/** What a transition adds besides refreshing the thread's listing row. */
export interface IndexNote {
  /** A turn settled (or a preset record was accepted): the unit the shards' flush batch counts. */
  settled?: boolean;
  /** A record that just failed, for the admin failed listing. */
  failed?: FailedRow;
  /** Records just pruned: their message directory entries go. */
  dropped?: string[];
  /** A turn's run trace just kept: its summary row, for D1 `runs`. */
  run?: RunRow;
  /** Run traces just pruned with their records: their summary rows go. */
  runsDropped?: string[];
  /** Metrics counters (delivery attempts and failed attempts). */
  counters?: CounterDelta[];
}

/**
 * The settings for `env` with the runtime overlay on top (this isolate's cache, re-checked in the
 * background at most every SETTINGS_REFRESH_SECONDS; docs/runtime-settings.md), or a thrown
 * "invalid configuration". Synchronous: no D1 statement per turn. Also applies the jq budget, since
 * a thread object's isolate runs jq programs (payload and reply expressions) of its own.
 */
export function threadSettings(env: object): Settings {
  const r = isolateSettings.peek(env).result;
  if (!r.ok) throw new Error(`invalid configuration: ${r.errors.join("; ")}`);
  setJqBudget(r.settings.jq);
  return r.settings;
}

/**
 * Waits until this isolate holds the overlay (a no-op when it already does). For an object's
 * constructor, inside blockConcurrencyWhile: without it, an object that is the first user of a
 * fresh isolate runs the few milliseconds until the background load lands on the env alone.
 */
export async function warmThreadSettings(env: object): Promise<void> {
  try {
    await isolateSettings.ensure(env);
  } catch (err) {
    // D1 unreachable: never fail the object's start over it; `threadSettings` retries in the background.
    console.error(
      "thread settings: loading the settings overlay failed; running on the env until it loads",
      err instanceof Error ? err.message : "unknown error",
    );
  }
}

/** `env` with the runtime overlay on top: what a thread's channel sends read (`CHANNEL_*`). */
export function threadEnv(env: Env): Env {
  return objectEnvNow(env);
}

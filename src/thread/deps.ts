/**
 * What the thread's parts run with. The object hands each part only the members it needs; a test
 * can hand a part its own storage, settings, clock and network.
 */
import type { FailedRow } from "../contracts/shard-rpc";
import type { Env } from "../env";
import { setJqBudget } from "../jq/engine";
import { type Settings, settingsFor } from "../settings/settings";

/** The dependencies of a thread's parts. */
export interface ThreadDeps {
  /** The object's own SQLite-backed storage. */
  storage: DurableObjectStorage;
  /** The Worker env, read on each use (bindings and settings follow the object's env). */
  env: () => Env;
  /** The validated settings; throws on an invalid configuration, as every door does. */
  settings: () => Settings;
  /** The clock, epoch ms. */
  now: () => number;
  /** The network edge every outbound request goes through (src/net/edge-fetch.ts). */
  fetch: typeof fetch;
}

/** Re-arms the object's one alarm (ThreadAlarm.arm): the only way a part sets the alarm. */
export interface AlarmArm {
  arm(): Promise<void>;
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
}

/**
 * The settings for `env`, or a thrown "invalid configuration". Also applies the jq budget, since a
 * thread object's isolate runs jq programs (payload and reply expressions) of its own.
 */
export function threadSettings(env: object): Settings {
  const r = settingsFor(env);
  if (!r.ok) throw new Error(`invalid configuration: ${r.errors.join("; ")}`);
  setJqBudget(r.settings.jq);
  return r.settings;
}

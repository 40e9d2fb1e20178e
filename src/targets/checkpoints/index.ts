/** Picks the checkpoint provider named by `LLM_PROVIDER_CHECKPOINT` (decisions §3). */
import type { Env } from "../../platform/env";
import type { Settings } from "../../platform/settings/settings";
import { d1CheckpointStore } from "./d1";
import { type LocalThreadMemory, kvCheckpointStore } from "./kv";
import { memoryCheckpointStore } from "./memory";
import type { CheckpointStore } from "../../shared/agent-memory";

export type { CheckpointMessage, CheckpointStore } from "../../shared/agent-memory";
export type { LocalThreadMemory } from "./kv";

/**
 * The store for the configured provider. `local` is the calling thread object's own memory
 * (kv provider: no RPC for its own thread); `now` is the clock used for TTLs and `updated_at`.
 */
export function checkpointStoreFor(env: Env, settings: Settings, opts: { local?: LocalThreadMemory; now?: () => Date } = {}): CheckpointStore {
  const now = opts.now ?? (() => new Date());
  const { provider, ttlMinutes } = settings.checkpoint;
  switch (provider) {
    case "kv":
      return kvCheckpointStore(env, ttlMinutes, now, opts.local);
    case "d1":
      return d1CheckpointStore(env.DB, now);
    case "memory":
      return memoryCheckpointStore(ttlMinutes, now);
    default:
      // Settings validation refuses other providers; reaching here is a programming error.
      throw new Error("checkpoint provider is not available in this build");
  }
}

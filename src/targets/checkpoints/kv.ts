import type { ThreadObject } from "../../../durable-objects/thread-object";
import { appendCheckpoint, deleteCheckpoint, readCheckpoint } from "../../../durable-objects/thread-checkpoint";
import type { Env } from "../../env";
import type { CheckpointMessage, CheckpointStore } from "./types";

/** The storage of the thread object a caller already runs inside, tagged with its thread id. */
export type LocalThreadStorage = DurableObjectStorage & { threadId: string };

/**
 * The `kv` provider (default): each thread's memory lives in its own ThreadObject's storage,
 * reached over RPC, or directly when the caller already runs inside that object (`local`).
 */
export function kvCheckpointStore(
  env: Env,
  ttlMinutes: number | null,
  now: () => Date,
  local?: LocalThreadStorage,
): CheckpointStore {
  // Env types the binding loosely; the class is fixed by wrangler.toml.
  const ns = env.THREADS as unknown as DurableObjectNamespace<ThreadObject>;
  const stub = (threadId: string) => ns.get(ns.idFromName(threadId));
  const isLocal = (threadId: string) => local !== undefined && local.threadId === threadId;
  return {
    async read(threadId) {
      if (isLocal(threadId)) return readCheckpoint(local!, threadId, now().getTime());
      return (await stub(threadId).checkpointRead(threadId)) as CheckpointMessage[];
    },
    async append(threadId, messages) {
      if (isLocal(threadId)) return appendCheckpoint(local!, threadId, messages, { nowMs: now().getTime(), ttlMinutes });
      await stub(threadId).checkpointAppend(threadId, messages, ttlMinutes);
    },
    async delete(threadId) {
      if (isLocal(threadId)) return deleteCheckpoint(local!, threadId);
      await stub(threadId).checkpointDelete(threadId);
    },
  };
}

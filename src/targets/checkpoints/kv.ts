import { threadStub } from "../../conversations/model/thread-rpc";
import type { Env } from "../../platform/env";
import { type ThreadMemory, appendCheckpoint, deleteCheckpoint, readCheckpoint } from "./thread-memory";
import type { CheckpointStore } from "../../shared/agent-memory";

/**
 * The memory of the thread object a caller already runs inside. `armAlarm` is that object's alarm
 * re-arm: the object's one alarm expires memory, and only the object sets it.
 */
export interface LocalThreadMemory extends ThreadMemory {
  armAlarm(): Promise<void>;
}

/**
 * The `kv` provider (default): each thread's memory lives in its own ThreadObject's storage,
 * reached over RPC, or directly when the caller already runs inside that object (`local`).
 */
export function kvCheckpointStore(env: Env, ttlMinutes: number | null, now: () => Date, local?: LocalThreadMemory): CheckpointStore {
  const own = (threadId: string) => (local !== undefined && local.threadId === threadId ? local : undefined);
  return {
    async read(threadId) {
      const mine = own(threadId);
      if (mine) return readCheckpoint(mine, now().getTime());
      return threadStub(env, threadId).checkpointRead(threadId);
    },
    async append(threadId, messages) {
      const mine = own(threadId);
      if (mine) {
        appendCheckpoint(mine, messages, { nowMs: now().getTime(), ttlMinutes });
        return mine.armAlarm();
      }
      await threadStub(env, threadId).checkpointAppend(threadId, messages, ttlMinutes);
    },
    async delete(threadId) {
      const mine = own(threadId);
      if (mine) return deleteCheckpoint(mine);
      await threadStub(env, threadId).checkpointDelete(threadId);
    },
  };
}

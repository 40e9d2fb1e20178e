import { DurableObject } from "cloudflare:workers";
import type { Env } from "../src/env";
import type { CheckpointMessage } from "../src/targets/checkpoints/types";
import { appendCheckpoint, deleteCheckpoint, readCheckpoint } from "./thread-checkpoint";

/** One object per thread id: the single writer of that thread (filled in by the bridge). */
export class ThreadObject extends DurableObject<Env> {
  // ALARM CONTRACT (kv checkpoints): the object's single `alarm()` must call
  // `purgeExpiredCheckpoint(this.ctx.storage, Date.now())` and include
  // `checkpointAlarmDue(this.ctx.storage)` when it re-arms (both from ./thread-checkpoint).

  /** kv checkpoint provider: this thread's agent memory, oldest first (expired reads as []). */
  async checkpointRead(threadId: string): Promise<CheckpointMessage[]> {
    return readCheckpoint(this.ctx.storage, threadId, Date.now());
  }

  /** kv checkpoint provider: append and refresh the idle TTL (the caller's setting, minutes). */
  async checkpointAppend(threadId: string, messages: CheckpointMessage[], ttlMinutes: number | null): Promise<void> {
    await appendCheckpoint(this.ctx.storage, threadId, messages, { nowMs: Date.now(), ttlMinutes });
  }

  /** kv checkpoint provider: forget this thread's agent memory. */
  async checkpointDelete(threadId: string): Promise<void> {
    deleteCheckpoint(this.ctx.storage, threadId);
  }
}

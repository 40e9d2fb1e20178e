/**
 * The thread's agent memory when the checkpoint provider keeps it in the thread object (the kv
 * provider, src/targets/checkpoints/thread-memory.ts): read, append and delete in the object's
 * own storage, each append re-arming the one alarm for the memory's idle expiry.
 */
import { appendCheckpoint, deleteCheckpoint, readCheckpoint } from "../../targets/checkpoints/thread-memory";
import type { CheckpointMessage } from "../../shared/agent-memory";
import type { ThreadAlarm } from "./alarm";
import type { ThreadDeps } from "./deps";

export class AgentMemory {
  constructor(
    private readonly deps: Pick<ThreadDeps, "storage" | "clock">,
    private readonly alarm: ThreadAlarm,
  ) {}

  read(threadId: string): CheckpointMessage[] {
    return readCheckpoint({ storage: this.deps.storage, threadId }, this.deps.clock.now());
  }

  async append(threadId: string, messages: CheckpointMessage[], ttlMinutes: number | null): Promise<void> {
    appendCheckpoint({ storage: this.deps.storage, threadId }, messages, { nowMs: this.deps.clock.now(), ttlMinutes });
    // The new expiry may be the earliest work; only the alarm part sets the alarm.
    this.alarm.memoryChanged();
    await this.alarm.arm();
  }

  delete(threadId: string): void {
    deleteCheckpoint({ storage: this.deps.storage, threadId });
    this.alarm.memoryChanged();
  }
}

import { checkpointAlarmDue } from "../../targets/checkpoints/thread-memory";
import type { AlarmArm, ThreadDeps } from "./deps";
import { outboxDueAt } from "./index-outbox";
import { nextWake } from "./store";

/**
 * The object's one alarm. Every timer is a stored instant (a turn lease, a queued turn, a due
 * delivery or its claim lease, a receipt grace, a record or agent-memory expiry, outbox rows
 * left unpushed); the alarm is
 * armed at the earliest of them. `arm` is the only code that sets or deletes it.
 */
export class ThreadAlarm implements AlarmArm {
  /** When this instance last armed the alarm (null: unknown or none). */
  private armedAt: number | null = null;

  constructor(private readonly deps: Pick<ThreadDeps, "storage" | "settings" | "now">) {}

  /**
   * Arms the alarm at the earliest instant with work. An alarm that is already set earlier is left
   * alone: firing early is harmless (the alarm only acts on what is due, then re-arms), and skipping
   * the write saves a storage operation on every step of every turn.
   */
  async arm(): Promise<void> {
    const { storage } = this.deps;
    const s = this.deps.settings();
    const now = this.deps.now();
    const candidates = [nextWake(storage, s.conversations.intakeClaimLeaseSeconds * 1000, now), checkpointAlarmDue(storage), outboxDueAt(storage)].filter(
      (t): t is number => typeof t === "number",
    );
    if (!candidates.length) {
      if (this.armedAt !== null) await storage.deleteAlarm();
      this.armedAt = null;
      return;
    }
    const target = Math.max(Math.min(...candidates), now + 1);
    if (this.armedAt !== null && this.armedAt > now && this.armedAt <= target) return;
    await storage.setAlarm(target);
    this.armedAt = target;
  }

  /** The alarm fired: it is spent, so the next `arm` writes it again. */
  fired(): void {
    this.armedAt = null;
  }
}

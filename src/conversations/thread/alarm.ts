import { checkpointAlarmDue } from "../../targets/checkpoints/thread-memory";
import type { AlarmArm, ThreadDeps } from "./deps";
import { outboxDueAt, reloadOutbox } from "./index-outbox";
import { nextWake, reloadBook } from "./store";

/**
 * The object's one alarm. Every timer is a stored instant (a turn lease, a queued turn, a due
 * delivery or its claim lease, a receipt grace, a record, web transcript entry or agent-memory
 * expiry, outbox rows left unpushed, a web session's expiry); the alarm is armed at the earliest of
 * them. `arm` is the only code that sets or deletes it.
 *
 * Arming reads nothing: the instants are kept in memory by the code that changes them (the
 * records' book in store.ts, the outbox's instants in index-outbox.ts, the agent memory's expiry
 * here), each read from storage once per instance. Each firing reads them all again (`fired`), so
 * the alarm pass acts on what is stored, whatever this instance believed.
 */
export class ThreadAlarm implements AlarmArm {
  /** When this instance last armed the alarm (null: unknown or none). */
  private armedAt: number | null = null;
  /** The agent memory's earliest expiry (undefined: read it at the next arm). */
  private memoryDue: number | null | undefined = undefined;

  constructor(
    private readonly deps: Pick<ThreadDeps, "storage" | "settings" | "clock">,
    /** The web session's expiry, from memory (src/conversations/thread/web-visitor.ts). */
    private readonly webSessionDue: () => number | null = () => null,
    /** The web transcript's earliest entry expiry (WebVisitor.dueAt, kept in memory there). */
    private readonly transcriptDue: () => number | null = () => null,
    /** The inbox's earliest timer (ThreadInbox.dueAt: a waiting alert, a snooze's end, auto-resolve; ThreadNotes.dueAt: a note's expiry). */
    private readonly inboxDue: () => number | null = () => null,
  ) {}

  /**
   * Arms the alarm at the earliest instant with work. An alarm that is already set earlier is left
   * alone: firing early is harmless (the alarm only acts on what is due, then re-arms), and skipping
   * the write saves a storage operation on every step of every turn.
   */
  async arm(): Promise<void> {
    const { storage } = this.deps;
    const s = this.deps.settings();
    const now = this.deps.clock.now();
    // An expiry already past was purged or moved by whoever touched the memory: read it again.
    if (this.memoryDue === undefined || (this.memoryDue !== null && this.memoryDue <= now)) this.memoryDue = checkpointAlarmDue(storage);
    const candidates = [
      nextWake(storage, s.conversations.intakeClaimLeaseSeconds * 1000, now),
      this.memoryDue,
      outboxDueAt(storage),
      this.webSessionDue(),
      this.transcriptDue(),
      this.inboxDue(),
    ].filter((t): t is number => typeof t === "number");
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

  /** The agent memory was written or dropped here: its expiry is read again at the next arm. */
  memoryChanged(): void {
    this.memoryDue = undefined;
  }

  /**
   * The alarm fired: it is spent, so the next `arm` writes it again; the records' and the outbox's
   * instants are read again (the agent memory's are when its purge removes any, see `arm`).
   */
  fired(): void {
    this.armedAt = null;
    reloadBook(this.deps.storage);
    reloadOutbox(this.deps.storage);
  }
}

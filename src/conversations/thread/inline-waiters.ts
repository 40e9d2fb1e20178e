import type { AnswerRecord } from "../model/record";

type Waiter = { resolve: (r: AnswerRecord | null) => void };

/**
 * Callers waiting inline for their answer (`wait_seconds`), by message id. A waiter is answered
 * exactly once: by the turn's settle with the record, or by its own timeout with null. Both run
 * on the object's one thread, and settle checks and answers without yielding in between, so the
 * record a waiter receives is the one stored as delivered inline.
 *
 * Bound: one entry per caller still waiting, each for a message the thread accepted into its
 * queue (so at most `thread_queue_depth`), and none for longer than its `wait_seconds`.
 * Eviction: the answer or the timeout, whichever comes first, removes the entry.
 */
export class InlineWaiters {
  private readonly waiting = new Map<string, Waiter>();

  /** Callers waiting now (tests, and the bound above). */
  get size(): number {
    return this.waiting.size;
  }

  /** Waits up to `ms` for the answer of `messageId`; null when the time runs out first. */
  wait(messageId: string, ms: number): Promise<AnswerRecord | null> {
    return new Promise<AnswerRecord | null>((resolve) => {
      const entry: Waiter = { resolve };
      this.waiting.set(messageId, entry);
      setTimeout(() => {
        if (this.waiting.get(messageId) === entry) {
          this.waiting.delete(messageId);
          resolve(null);
        }
      }, ms);
    });
  }

  /** True while a caller still waits for `messageId`. */
  isWaiting(messageId: string): boolean {
    return this.waiting.has(messageId);
  }

  /** Hands `record` to the caller waiting for it, if one still is. */
  answer(messageId: string, record: AnswerRecord): void {
    const waiter = this.waiting.get(messageId);
    if (!waiter) return;
    this.waiting.delete(messageId);
    waiter.resolve(record);
  }
}

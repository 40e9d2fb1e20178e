/**
 * The catch-up rule (pure; docs/schedules.md "Missed fires"). A schedule's object keeps its next
 * slot as its alarm. When the alarm runs at `now` for the armed slot S:
 *
 * 1. now < S (an early or stray alarm): no fire; stay armed for S.
 * 2. S is the only slot due and the alarm is on time (now − S ≤ ON_TIME_MS): the regular fire, for S.
 * 3. Otherwise slots were missed (the deployment was down, or the alarm ran late): AT MOST ONE
 *    catch-up fire, for the latest due slot, and only when that slot is within the catch-up window
 *    (SCHEDULES_CATCH_UP_WINDOW_SECONDS; 0 never catches up). Every other due slot is skipped and
 *    counted, never run.
 * Then the schedule re-arms for its first slot after `now`: the next regular slot.
 */
import type { SlotSource } from "./cron";

/** An alarm this close after its slot is on time (alarms usually run within milliseconds). */
export const ON_TIME_MS = 60_000;

/** Due slots counted one by one up to this many; past it the count is a lower bound. */
export const COUNT_CAP = 1000;

export interface FirePlan {
  /** The fire to make now, if any. */
  fire: { slot_at: number; catch_up: boolean } | null;
  /** Due slots not fired (at least this many when `skipped_capped`). */
  skipped: number;
  skipped_capped: boolean;
  /** The slot to arm next (null: the expression has no later slot). */
  next_at: number | null;
}

export function planAlarm(slots: SlotSource, armedAt: number, nowMs: number, catchUpWindowMs: number): FirePlan {
  if (nowMs < armedAt) return { fire: null, skipped: 0, skipped_capped: false, next_at: armedAt };
  let due = 0;
  let latest = armedAt;
  let t: number | null = armedAt;
  while (t !== null && t <= nowMs && due < COUNT_CAP) {
    latest = t;
    due += 1;
    t = slots.nextAfter(t);
  }
  const capped = t !== null && t <= nowMs;
  if (capped) latest = slots.latestAtOrBefore(nowMs) ?? latest;
  const next_at = slots.nextAfter(nowMs);
  if (due === 1 && nowMs - armedAt <= ON_TIME_MS) return { fire: { slot_at: armedAt, catch_up: false }, skipped: 0, skipped_capped: false, next_at };
  if (nowMs - latest <= catchUpWindowMs) return { fire: { slot_at: latest, catch_up: true }, skipped: due - 1, skipped_capped: capped, next_at };
  return { fire: null, skipped: due, skipped_capped: capped, next_at };
}

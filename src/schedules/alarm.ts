/**
 * The Schedule object's one alarm, its next slot: fires come from Durable Object alarms, not from
 * the Worker's static cron. A pass submits the runs still owed, applies the catch-up rule
 * (src/schedules/catch-up.ts, pure) to the slots due, records the fire and re-arms. Each fire is a
 * background tool run (src/tool-runs/submit.ts).
 */
import { loadObjectSettings } from "../config/object-settings";
import { SCHEDULES_CATCH_UP_WINDOW_SECONDS } from "../platform/settings/schedule-settings";
import { planAlarm } from "./catch-up";
import { compileCron } from "./cron";
import { mirrorStatement } from "./listing";
import type { ScheduleKit } from "./object-kit";
import type { ScheduleFire } from "./record";
import { readSchedule, recordAlarm } from "./schedule-store";

export interface ScheduleAlarm {
  /** One alarm pass as of the kit's clock. */
  run(): Promise<void>;
  /** One alarm pass as of `nowMs`: the slots due are decided at that instant (tests pass a fake one). */
  runAt(nowMs: number): Promise<void>;
}

export function scheduleAlarm(kit: ScheduleKit): ScheduleAlarm {
  const { sql, clock } = kit;

  async function runAt(nowMs: number): Promise<void> {
    const settings = (await loadObjectSettings(kit.env(), { name: "schedule", whenInvalid: null }))?.settings ?? null;
    const pendingLeft = await kit.submitPending();
    // Read after the awaits: a delete may have come in meanwhile.
    const s = readSchedule(sql);
    if (!s || s.next_fire_at === null) return;
    const slots = compileCron(s.cron, s.timezone);
    if (!slots) throw new Error("schedule: the stored expression does not compile");
    const windowMs = (settings?.schedules.catchUpWindowSeconds ?? SCHEDULES_CATCH_UP_WINDOW_SECONDS.default) * 1000;
    const plan = planAlarm(slots, s.next_fire_at, nowMs, windowMs);
    // Without the tool-runs store (or with an invalid configuration) schedules pause: due slots are skipped.
    if (plan.fire && !settings?.toolRuns.storeUrl) {
      plan.skipped += 1;
      plan.fire = null;
    }
    let fire: ScheduleFire | null = null;
    if (plan.fire) fire = { run_id: crypto.randomUUID(), slot_at: plan.fire.slot_at, fired_at: nowMs, catch_up: plan.fire.catch_up, skipped: plan.skipped };
    else if (plan.skipped > 0) fire = { run_id: null, slot_at: null, fired_at: nowMs, catch_up: false, skipped: plan.skipped };
    recordAlarm(sql, fire, plan.next_at);
    await kit.arm(plan.next_at, pendingLeft);
    if (!fire) return;
    // A run that could not be submitted now is retried shortly (the fire is recorded, not lost).
    if (fire.run_id && (await kit.submitPending())) await kit.arm(plan.next_at, true);
    const state = readSchedule(sql);
    // Removed meanwhile (the submit awaited): leave no listing row behind.
    if (!state) return;
    try {
      await mirrorStatement(kit.env().DB, state).run();
    } catch (err) {
      console.error("schedule: mirroring the listing row failed (the next fire writes it again)", err instanceof Error ? err.message : "unknown error");
    }
  }

  return {
    run: () => runAt(clock.now()),
    runAt,
  };
}

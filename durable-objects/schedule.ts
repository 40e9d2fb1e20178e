/**
 * Schedule: one per schedule name (docs/schedules.md). A thin shell over the schedule's
 * SQLite (src/schedules/schedule-store.ts), the cron library wrapper (src/schedules/cron.ts) and
 * the catch-up rule (src/schedules/catch-up.ts, pure). The contract is src/schedules/rpc.ts.
 *
 * The next slot is the object's one alarm: fires come from Durable Object alarms, not from the
 * Worker's static cron. Each fire is a background tool run (src/tool-runs/submit.ts) that runs as
 * the schedule's bound execution key, re-checked live when the run starts, and records a trace.
 */
import { DurableObject } from "cloudflare:workers";
import type { ScheduleRpc, ScheduleSpec, ScheduleState } from "../src/schedules/rpc";
import { isolateSettings } from "../src/config/isolate-settings";
import type { Env } from "../src/platform/env";
import { planAlarm } from "../src/schedules/catch-up";
import { compileCron } from "../src/schedules/cron";
import { mirrorStatement } from "../src/schedules/listing";
import type { ScheduleFire } from "../src/schedules/record";
import { markSubmitted, readSchedule, recordAlarm, unsubmittedFires, upgradeScheduleTables, writeSpec } from "../src/schedules/schedule-store";
import { SCHEDULES_DEFAULTS } from "../src/platform/settings/schedule-settings";
import type { Settings } from "../src/platform/settings/settings";
import { submitToolRun } from "../src/tool-runs/submit";

/** A fire whose run could not be submitted (D1 or the run's object unreachable) is retried this much later. */
const RETRY_MS = 5_000;

export class Schedule extends DurableObject<Env> implements ScheduleRpc {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    // A schedule stored in an older shape lacks the state binding column: added before any read.
    void ctx.blockConcurrencyWhile(async () => upgradeScheduleTables(ctx.storage.sql));
  }

  private get sql(): SqlStorage {
    return this.ctx.storage.sql;
  }

  async put(spec: ScheduleSpec): Promise<{ created: boolean; state: ScheduleState }> {
    const slots = compileCron(spec.cron, spec.timezone);
    // The door compiled it already; a spec that does not compile here is a fault, not input.
    if (!slots) throw new Error("schedule: the expression does not compile");
    const now = Date.now();
    const next = slots.nextAfter(now);
    const created = writeSpec(this.sql, spec, next, now);
    await this.arm(next);
    const state = readSchedule(this.sql)!;
    await mirrorStatement(this.env.DB, state).run();
    return { created, state };
  }

  async read(): Promise<ScheduleState | null> {
    return readSchedule(this.sql);
  }

  async remove(): Promise<boolean> {
    const had = readSchedule(this.sql) !== null;
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
    return had;
  }

  override async alarm(): Promise<void> {
    await this.tick(Date.now());
  }

  /**
   * The alarm's work as of `nowMs`: public so tests drive missed slots with a fake clock
   * (runInDurableObject); the alarm passes the real one.
   */
  async tick(nowMs: number): Promise<void> {
    const settings = await this.settings();
    const pendingLeft = await this.submitPending();
    // Read after the awaits: a delete may have come in meanwhile.
    const s = readSchedule(this.sql);
    if (!s || s.next_fire_at === null) return;
    const slots = compileCron(s.cron, s.timezone);
    if (!slots) throw new Error("schedule: the stored expression does not compile");
    const windowMs = (settings?.schedules.catchUpWindowSeconds ?? SCHEDULES_DEFAULTS.catchUpWindowSeconds) * 1000;
    const plan = planAlarm(slots, s.next_fire_at, nowMs, windowMs);
    // Without the tool-runs store (or with an invalid configuration) schedules pause: due slots are skipped.
    if (plan.fire && !settings?.toolRuns.storeUrl) {
      plan.skipped += 1;
      plan.fire = null;
    }
    let fire: ScheduleFire | null = null;
    if (plan.fire) fire = { run_id: crypto.randomUUID(), slot_at: plan.fire.slot_at, fired_at: nowMs, catch_up: plan.fire.catch_up, skipped: plan.skipped };
    else if (plan.skipped > 0) fire = { run_id: null, slot_at: null, fired_at: nowMs, catch_up: false, skipped: plan.skipped };
    recordAlarm(this.sql, fire, plan.next_at);
    await this.arm(plan.next_at, pendingLeft);
    if (!fire) return;
    // A run that could not be submitted now is retried shortly (the fire is recorded, not lost).
    if (fire.run_id && (await this.submitPending())) await this.arm(plan.next_at, true);
    const state = readSchedule(this.sql);
    // Removed meanwhile (the submit awaited): leave no listing row behind.
    if (!state) return;
    try {
      await mirrorStatement(this.env.DB, state).run();
    } catch (err) {
      console.error("schedule: mirroring the listing row failed (the next fire writes it again)", err instanceof Error ? err.message : "unknown error");
    }
  }

  /** The settings with the runtime overlay; null while the configuration is invalid. */
  private async settings(): Promise<Settings | null> {
    let eff;
    try {
      eff = await isolateSettings.ensure(this.env);
    } catch (err) {
      // D1 unreachable for the overlay: decide on what this isolate holds (the env alone when cold).
      console.error("schedule: loading the settings overlay failed; using the cached settings", err instanceof Error ? err.message : "unknown error");
      eff = isolateSettings.peek(this.env);
    }
    return eff.result.ok ? eff.result.settings : null;
  }

  /** Submits every recorded fire whose run was not submitted yet; answers whether any is left. */
  private async submitPending(): Promise<boolean> {
    for (const f of unsubmittedFires(this.sql)) {
      const s = readSchedule(this.sql);
      if (!s) return false;
      try {
        await submitToolRun(this.env, {
          run_id: f.run_id,
          tool_name: s.tool_name,
          arguments: s.tool_kwargs,
          caller: { user_id: s.execution_key, fingerprint: s.execution_key_fingerprint },
          origin: "schedule",
          schedule_name: s.name,
          slot_at: f.slot_at,
          state_binding: s.state_binding,
          binding_by: s.created_by,
        });
      } catch (err) {
        console.error(`schedule: submitting a fire's run failed; retrying in ${RETRY_MS} ms`, err instanceof Error ? err.message : "unknown error");
        return true;
      }
      // Removed while the submit awaited: its tables are gone with it.
      if (readSchedule(this.sql)) markSubmitted(this.sql, f.seq);
    }
    return false;
  }

  /** Arms the one alarm for the next slot, or sooner when a fire's run is still to be submitted. */
  private async arm(next: number | null, retrySoon = false): Promise<void> {
    const at = retrySoon ? Math.min(next ?? Number.POSITIVE_INFINITY, Date.now() + RETRY_MS) : next;
    if (at === null || !Number.isFinite(at)) await this.ctx.storage.deleteAlarm();
    else await this.ctx.storage.setAlarm(at);
  }
}

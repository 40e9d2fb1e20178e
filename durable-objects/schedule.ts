/**
 * Schedule: one per schedule name (docs/schedules.md). A shell over the schedule's parts
 * (src/schedules/compose.ts): the verbs of its contract (src/schedules/rpc.ts) over the
 * schedule's SQLite (src/schedules/schedule-store.ts), and the one alarm, its next slot, which
 * applies the catch-up rule (src/schedules/catch-up.ts, pure). Each fire is a background tool run
 * (src/tool-runs/submit.ts) that runs as the schedule's bound execution key, re-checked live when
 * the run starts, and records a trace.
 */
import { DurableObject } from "cloudflare:workers";
import type { ScheduleRpc, ScheduleSpec, ScheduleState } from "../src/schedules/rpc";
import type { Env } from "../src/platform/env";
import { startObject } from "../src/platform/persistence/object-start";
import { systemClock } from "../src/platform/clock";
import { type ScheduleParts, composeSchedule } from "../src/schedules/compose";
import { upgradeScheduleTables } from "../src/schedules/schedule-store";

export class Schedule extends DurableObject<Env> implements ScheduleRpc {
  /** The composed parts. An instance field, so not reachable over RPC; tests reach it in runInDurableObject. */
  readonly parts: ScheduleParts;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    // A schedule stored in an older shape lacks the state binding column: added before any read.
    startObject(ctx, { migrate: (storage) => upgradeScheduleTables(storage.sql) });
    this.parts = composeSchedule({ storage: ctx.storage, env: () => this.env, clock: systemClock });
  }

  async put(spec: ScheduleSpec): Promise<{ created: boolean; state: ScheduleState }> {
    return this.parts.verbs.put(spec);
  }

  async read(): Promise<ScheduleState | null> {
    return this.parts.verbs.read();
  }

  async remove(): Promise<boolean> {
    return this.parts.verbs.remove();
  }

  /** The one alarm: the runs still owed and the slots due, as of now. */
  override async alarm(): Promise<void> {
    await this.parts.alarm.run();
  }
}

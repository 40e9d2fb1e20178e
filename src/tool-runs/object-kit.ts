/**
 * What the ToolRun object's parts share: its storage, the env, the injected clock, the settings
 * loader, the in-flight lease, and the two steps every end takes (record it, then publish it).
 * The parts (src/tool-runs/verbs.ts, src/tool-runs/alarm.ts) are composed over one kit by
 * src/tool-runs/compose.ts.
 */
import { type ObjectSettings, loadObjectSettings } from "../config/object-settings";
import type { Env } from "../platform/env";
import type { Clock } from "../platform/clock";
import { recordRun } from "../observability/runs/recorder";
import { RETRY_MS } from "./alarm-policy";
import { upsertRunRow } from "./index-store";
import { run } from "../platform/persistence/d1";
import { type RunEnd, type RunSteps, markFinished, markPublished, readRun, readSteps } from "./run-store";
import { toolRunTrace } from "./trace";

export interface ToolRunDeps {
  storage: DurableObjectStorage;
  /** The object's env, read through a function so it follows the object's. */
  env: () => Env;
  clock: Clock;
}

export interface ToolRunKit extends ToolRunDeps {
  sql: SqlStorage;
  /** An attempt of this instance is running (a restart clears it: that is how an interruption shows). */
  lease: { inFlight: boolean };
  /** The settings with the runtime overlay (null while the configuration is invalid: try again later). */
  settings(): Promise<ObjectSettings | null>;
  /** Records the run's end and when its retention ends. */
  finish(end: RunEnd, steps: RunSteps, retentionSeconds: number): void;
  /** Lists the end in D1 and records the trace; on failure the alarm tries again shortly. */
  publish(): Promise<void>;
}

export function toolRunKit(deps: ToolRunDeps): ToolRunKit {
  const { storage, clock } = deps;
  const sql = storage.sql;
  return {
    ...deps,
    sql,
    lease: { inFlight: false },
    settings: () => loadObjectSettings(deps.env(), { name: "tool run", whenInvalid: "the run waits a minute" }),
    finish(end, steps, retentionSeconds) {
      const now = clock.now();
      markFinished(sql, end, steps, now, now + retentionSeconds * 1000);
    },
    async publish() {
      const row = readRun(sql);
      if (!row) return;
      const env = deps.env();
      try {
        await run(upsertRunRow(env.DB, row));
        await recordRun(env, toolRunTrace(row, readSteps(sql)));
      } catch (err) {
        console.error(`tool run: publishing the end failed; retrying in ${RETRY_MS} ms`, err instanceof Error ? err.message : "unknown error");
        return void (await storage.setAlarm(clock.now() + RETRY_MS));
      }
      markPublished(sql);
      await storage.setAlarm(row.expires_at ?? clock.now());
    },
  };
}

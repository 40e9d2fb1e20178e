/**
 * The ToolRun object's one alarm, which does everything after the submit: starts the run (armed
 * for "now" by the submit), re-drives a run whose object restarted mid-attempt (each start re-arms
 * it a lease ahead, so a dead attempt is noticed), publishes the end (the D1 listing row and the
 * trace; retried until it lands) and finally deletes the run when its retention ends. What to do
 * is decided by the pure policy (src/tool-runs/alarm-policy.ts).
 *
 * A run whose tool asks a question (ask_user) waits: the attempt stores the interaction, the run
 * is `waiting`, and the interaction's object hands the outcome over through `resume` once it ends.
 * The alarm stays armed at the wait's deadline, so a hand-over that never comes ends the run too.
 */
import type { ObjectSettings } from "../config/object-settings";
import type { ToolRunRecord } from "./rpc";
import type { AskUserInput } from "../interactions/ask";
import { createInteraction } from "../interactions/create";
import { setJqBudget } from "../platform/jq/engine";
import { traceSteps, untraceSteps } from "../shared/run-steps";
import { createTargetContext } from "../targets/dispatch";
import { ATTEMPT_LEASE_MS, RETRY_MS, alarmStep, interruptedEnd, waitLostEnd } from "./alarm-policy";
import { type AttemptEnd, executeToolRun } from "./execute";
import { deleteRunRow, upsertRunRow } from "./index-store";
import { run } from "../platform/persistence/d1";
import type { ToolRunKit } from "./object-kit";
import { type RunSteps, markStarted, markWaiting, readRun, readSteps } from "./run-store";

/**
 * How long past its question's expiry a waiting run gives the interaction's object to hand the
 * outcome over before it ends the run itself (`timeout`): the object's own retries fit well within.
 */
const WAIT_MARGIN_MS = 10 * 60_000;

export interface ToolRunAlarm {
  /** One alarm pass as of the kit's clock. */
  run(): Promise<void>;
  /** One alarm pass as of `nowMs`: the policy decides at that instant (tests pass a fake one). */
  runAt(nowMs: number): Promise<void>;
}

export function toolRunAlarm(kit: ToolRunKit): ToolRunAlarm {
  const { sql, storage, clock } = kit;

  async function attempt(row: ToolRunRecord, s: ObjectSettings): Promise<void> {
    markStarted(sql, clock.now());
    // The lease: if this object dies mid-attempt, this alarm finds the run still running.
    await storage.setAlarm(clock.now() + ATTEMPT_LEASE_MS);
    kit.lease.inFlight = true;
    let end: AttemptEnd;
    let steps: RunSteps;
    try {
      const ctx = createTargetContext(s.env, s.settings);
      // A bound run's state expressions are jq: under the deployment's budget, as at the doors.
      setJqBudget(s.settings.jq);
      // The attempt's steps (the dispatch, with its timing) and the preset version it ran, for the trace.
      const log = traceSteps(ctx);
      try {
        end = await executeToolRun(ctx, row, { user_id: row.caller_user_id, fingerprint: row.caller_fingerprint });
      } finally {
        untraceSteps(ctx);
      }
      steps = { steps: log.steps, dropped: log.dropped, version: log.versions.get(row.tool_name) ?? null };
    } catch (err) {
      // Only a fault of ours lands here (a tool's failure is an end, not a throw).
      console.error("tool run: the attempt failed unexpectedly", err instanceof Error ? err.message : "unknown error");
      end = { status: "failed", result: null, error: "the run failed unexpectedly", error_kind: "tool_error" };
      steps = { steps: [], dropped: 0, version: null };
    } finally {
      kit.lease.inFlight = false;
    }
    if (end.status === "asked") return wait(row, end.ask, steps, s);
    kit.finish(end, steps, s.settings.toolRuns.retentionSeconds);
    await kit.publish();
  }

  /**
   * The attempt's tool asked: stores the interaction (origin this run; its object calls `resume`
   * when it ends), then waits for it until its expiry plus a margin. The listing shows `waiting`.
   */
  async function wait(row: ToolRunRecord, ask: AskUserInput, steps: RunSteps, s: ObjectSettings): Promise<void> {
    let interaction;
    try {
      interaction = await createInteraction(s.env, s.settings, {
        ask,
        origin: { kind: "tool_run", run_id: row.run_id, caller: row.caller_user_id },
        target: { kind: "tool", name: row.tool_name },
        parked: { kind: "tool_run", run_id: row.run_id },
      });
    } catch (err) {
      console.error("tool run: storing its question failed", err instanceof Error ? err.message : "unknown error");
      kit.finish(
        { status: "failed", result: null, error: "the run's question could not be stored", error_kind: "tool_error" },
        steps,
        s.settings.toolRuns.retentionSeconds,
      );
      return kit.publish();
    }
    const until = Date.parse(interaction.expires_at) + WAIT_MARGIN_MS;
    markWaiting(sql, interaction.interaction_id, steps, until);
    await storage.setAlarm(until);
    const waiting = readRun(sql);
    if (!waiting) return;
    try {
      // The listing row says waiting; it expires with the run's end, not with the wait.
      await run(upsertRunRow(kit.env().DB, { ...waiting, expires_at: null }));
    } catch (err) {
      // The end rewrites the row anyway; until then the listing may still say running.
      console.error("tool run: listing the wait failed", err instanceof Error ? err.message : "unknown error");
    }
  }

  /** Retention is over: the listing row goes, then the run. */
  async function expire(row: ToolRunRecord): Promise<void> {
    try {
      await run(deleteRunRow(kit.env().DB, row.run_id));
    } catch (err) {
      console.error(`tool run: deleting the listing row failed; retrying in ${RETRY_MS} ms`, err instanceof Error ? err.message : "unknown error");
      return void (await storage.setAlarm(clock.now() + RETRY_MS));
    }
    await storage.deleteAlarm();
    await storage.deleteAll();
  }

  async function runAt(nowMs: number): Promise<void> {
    const cfg = await kit.settings();
    if (!cfg) return void (await storage.setAlarm(clock.now() + 60_000));
    const row = readRun(sql);
    const next = alarmStep(row, nowMs, cfg.settings.toolRuns.maxAttempts, kit.lease.inFlight);
    // The policy answers "none" for a missing run; every other step acts on the row.
    if (!row || next.kind === "none") return;
    switch (next.kind) {
      case "sleep":
        return void (await storage.setAlarm(next.until));
      case "start":
        return attempt(row, cfg);
      case "give_up":
        kit.finish(interruptedEnd(row.attempts), { steps: [], dropped: 0, version: null }, cfg.settings.toolRuns.retentionSeconds);
        return kit.publish();
      case "stop_waiting":
        kit.finish(waitLostEnd(), readSteps(sql), cfg.settings.toolRuns.retentionSeconds);
        return kit.publish();
      case "publish":
        return kit.publish();
      case "expire":
        return expire(row);
    }
  }

  return {
    run: () => runAt(clock.now()),
    runAt,
  };
}

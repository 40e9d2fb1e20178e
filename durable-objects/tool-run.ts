/**
 * ToolRun: one per background tool run (docs/tool-runs.md). A thin shell over the run's
 * SQLite row (src/tool-runs/run-store.ts), the alarm policy (src/tool-runs/alarm-policy.ts, pure)
 * and one attempt's execution (src/tool-runs/execute.ts). The contract is
 * src/tool-runs/rpc.ts.
 *
 * The one alarm does everything after the submit: starts the run (armed for "now" by the submit),
 * re-drives a run whose object restarted mid-attempt (each start re-arms it a lease ahead, so a
 * dead attempt is noticed), publishes the end (the D1 listing row and the trace; retried until it
 * lands) and finally deletes the run when its retention ends. A restart therefore loses nothing:
 * whatever the row says is left to do, the next alarm does.
 *
 * A run whose tool asks a question (ask_user) waits: the attempt stores the interaction, the run
 * is `waiting`, and the interaction's object hands the outcome over through `resume` once it ends.
 * The alarm stays armed at the wait's deadline, so a hand-over that never comes ends the run too.
 */
import { DurableObject } from "cloudflare:workers";
import { type ToolRunRequest, type ToolRunRecord, type ToolRunRpc } from "../src/tool-runs/rpc";
import type { JsonObject } from "../src/platform/http/bounded-json";
import type { AskUserInput } from "../src/interactions/ask";
import { createInteraction } from "../src/interactions/create";
import type { InteractionStatus } from "../src/interactions/record";
import { isolateSettings } from "../src/config/isolate-settings";
import type { Env } from "../src/platform/env";
import type { Settings } from "../src/platform/settings/settings";
import { setJqBudget } from "../src/platform/jq/engine";
import { traceSteps, untraceSteps } from "../src/observability/runs/steps";
import { recordRun } from "../src/observability/runs/recorder";
import { createTargetContext } from "../src/targets/dispatch";
import { ATTEMPT_LEASE_MS, RETRY_MS, alarmStep, interruptedEnd, waitLostEnd } from "../src/tool-runs/alarm-policy";
import { type AttemptEnd, askedRunEnd, executeToolRun } from "../src/tool-runs/execute";
import { deleteRunRow, upsertRunRow } from "../src/tool-runs/index-store";
import {
  insertQueued,
  markFinished,
  markPublished,
  markStarted,
  markWaiting,
  readRun,
  readSteps,
  type RunEnd,
  type RunSteps,
  upgradeRunTable,
} from "../src/tool-runs/run-store";
import { toolRunTrace } from "../src/tool-runs/trace";

/**
 * How long past its question's expiry a waiting run gives the interaction's object to hand the
 * outcome over before it ends the run itself (`timeout`): the object's own retries fit well within.
 */
const WAIT_MARGIN_MS = 10 * 60_000;

/** What a run executes with: the env with the runtime overlay on top, and its parsed settings. */
interface RunSettings {
  env: Env;
  settings: Settings;
}

export class ToolRun extends DurableObject<Env> implements ToolRunRpc {
  /** An attempt of this instance is running (a restart clears it: that is how an interruption shows). */
  private inFlight = false;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    // A run stored in an older shape lacks the hook and binding columns: added before any read.
    void ctx.blockConcurrencyWhile(async () => upgradeRunTable(ctx.storage.sql));
  }

  private get sql(): SqlStorage {
    return this.ctx.storage.sql;
  }

  async submit(request: ToolRunRequest): Promise<ToolRunRecord> {
    const existing = readRun(this.sql);
    if (existing) return existing;
    insertQueued(this.sql, request, Date.now());
    await this.ctx.storage.setAlarm(Date.now());
    return readRun(this.sql)!;
  }

  async read(): Promise<ToolRunRecord | null> {
    return readRun(this.sql);
  }

  async resume(interactionId: string, outcome: JsonObject, status: Exclude<InteractionStatus, "pending">): Promise<"resumed" | "retry" | "not_waiting"> {
    const row = readRun(this.sql);
    if (!row) return "not_waiting";
    // Answered while the attempt is still storing its question, or before a restarted attempt got
    // there: not waiting yet. The run ends or waits (for this or a newer question) soon enough.
    if (row.status === "queued" || row.status === "running") return "retry";
    if (row.status !== "waiting" || row.interaction_id !== interactionId) return "not_waiting";
    const cfg = await this.settings();
    if (!cfg) return "retry";
    this.finish(askedRunEnd(outcome, status), readSteps(this.sql), cfg.settings.toolRuns.retentionSeconds);
    await this.publish();
    return "resumed";
  }

  override async alarm(): Promise<void> {
    await this.step(Date.now());
  }

  /**
   * The alarm's work as of `nowMs`: public so tests drive the retention with a fake clock
   * (runInDurableObject); the alarm passes the real one.
   */
  async step(nowMs: number): Promise<void> {
    const cfg = await this.settings();
    if (!cfg) return void (await this.ctx.storage.setAlarm(Date.now() + 60_000));
    const row = readRun(this.sql);
    const next = alarmStep(row, nowMs, cfg.settings.toolRuns.maxAttempts, this.inFlight);
    switch (next.kind) {
      case "none":
        return;
      case "sleep":
        return void (await this.ctx.storage.setAlarm(next.until));
      case "start":
        return this.attempt(row!, cfg);
      case "give_up":
        this.finish(interruptedEnd(row!.attempts), { steps: [], dropped: 0, version: null }, cfg.settings.toolRuns.retentionSeconds);
        return this.publish();
      case "stop_waiting":
        this.finish(waitLostEnd(), readSteps(this.sql), cfg.settings.toolRuns.retentionSeconds);
        return this.publish();
      case "publish":
        return this.publish();
      case "expire":
        return this.expire(row!);
    }
  }

  /** The settings with the runtime overlay (null while the configuration is invalid: try again later). */
  private async settings(): Promise<RunSettings | null> {
    let eff;
    try {
      eff = await isolateSettings.ensure(this.env);
    } catch (err) {
      // D1 unreachable for the overlay: run on what this isolate holds (the env alone when cold).
      console.error("tool run: loading the settings overlay failed; using the cached settings", err instanceof Error ? err.message : "unknown error");
      eff = isolateSettings.peek(this.env);
    }
    if (!eff.result.ok) {
      console.error("tool run: the configuration is invalid; the run waits a minute");
      return null;
    }
    return { env: eff.env as unknown as Env, settings: eff.result.settings };
  }

  private async attempt(row: ToolRunRecord, s: RunSettings): Promise<void> {
    markStarted(this.sql, Date.now());
    // The lease: if this object dies mid-attempt, this alarm finds the run still running.
    await this.ctx.storage.setAlarm(Date.now() + ATTEMPT_LEASE_MS);
    this.inFlight = true;
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
      this.inFlight = false;
    }
    if (end.status === "asked") return this.wait(row, end.ask, steps, s);
    this.finish(end, steps, s.settings.toolRuns.retentionSeconds);
    await this.publish();
  }

  /**
   * The attempt's tool asked: stores the interaction (origin this run; its object calls `resume`
   * when it ends), then waits for it until its expiry plus a margin. The listing shows `waiting`.
   */
  private async wait(row: ToolRunRecord, ask: AskUserInput, steps: RunSteps, s: RunSettings): Promise<void> {
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
      this.finish(
        { status: "failed", result: null, error: "the run's question could not be stored", error_kind: "tool_error" },
        steps,
        s.settings.toolRuns.retentionSeconds,
      );
      return this.publish();
    }
    const until = Date.parse(interaction.expires_at) + WAIT_MARGIN_MS;
    markWaiting(this.sql, interaction.interaction_id, steps, until);
    await this.ctx.storage.setAlarm(until);
    try {
      // The listing row says waiting; it expires with the run's end, not with the wait.
      await upsertRunRow(this.env.DB, { ...readRun(this.sql)!, expires_at: null }).run();
    } catch (err) {
      // The end rewrites the row anyway; until then the listing may still say running.
      console.error("tool run: listing the wait failed", err instanceof Error ? err.message : "unknown error");
    }
  }

  private finish(end: RunEnd, steps: RunSteps, retentionSeconds: number): void {
    const now = Date.now();
    markFinished(this.sql, end, steps, now, now + retentionSeconds * 1000);
  }

  /** Lists the end in D1 and records the trace; on failure the alarm tries again shortly. */
  private async publish(): Promise<void> {
    const row = readRun(this.sql);
    if (!row) return;
    try {
      await upsertRunRow(this.env.DB, row).run();
      await recordRun(this.env, toolRunTrace(row, readSteps(this.sql)));
    } catch (err) {
      console.error(`tool run: publishing the end failed; retrying in ${RETRY_MS} ms`, err instanceof Error ? err.message : "unknown error");
      return void (await this.ctx.storage.setAlarm(Date.now() + RETRY_MS));
    }
    markPublished(this.sql);
    await this.ctx.storage.setAlarm(row.expires_at ?? Date.now());
  }

  /** Retention is over: the listing row goes, then the run. */
  private async expire(row: ToolRunRecord): Promise<void> {
    try {
      await deleteRunRow(this.env.DB, row.run_id).run();
    } catch (err) {
      console.error(`tool run: deleting the listing row failed; retrying in ${RETRY_MS} ms`, err instanceof Error ? err.message : "unknown error");
      return void (await this.ctx.storage.setAlarm(Date.now() + RETRY_MS));
    }
    await this.ctx.storage.deleteAlarm();
    await this.ctx.storage.deleteAll();
  }
}

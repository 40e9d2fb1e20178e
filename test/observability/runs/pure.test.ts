/**
 * The pure parts of run traces: a turn's outcome, the trace bounds, the caller's
 * filter, the WHERE clause, the trace door's redaction and file name, the step log.
 */
import { describe, expect, it } from "vitest";
import { MAX_ERROR_CHARS, MAX_TRACE_STEPS, RunTrace, type RunStep, type RunTraceInput } from "../../../src/shared/run-trace";
import { MAX_TRACE_JSON_BYTES, boundTrace, boundTraceJson } from "../../../src/observability/runs/recorder";
import { callerFilter } from "../../../src/observability/runs/caller";
import { runFilterQuery, whereOf } from "../../../src/observability/runs/query";
import { StepLog, collectRunSteps, timedStep } from "../../../src/shared/run-steps";
import { summaryOf } from "../../../src/shards/run-summary";
import { mayRead, traceFileName, traceFor } from "../../../src/conversations/run-traces";
import { turnRunOutcome } from "../../../src/conversations/thread/turn-trace";
import { dispatchStepVerdict } from "../../../src/targets/dispatch";
import { must } from "../../../src/platform/must";

const step = (outcome: RunStep["outcome"], error: string | null = null): RunStep => ({
  kind: "tool",
  name: "t",
  started_at: new Date(0).toISOString(),
  duration_ms: 3,
  outcome,
  error,
});

function trace(over: Partial<RunTraceInput> = {}): RunTraceInput {
  return {
    trace_id: "tr-1",
    kind: "tool_run",
    trigger: "background",
    target: { kind: "tool", name: "echo", version: null },
    route_name: null,
    thread_id: null,
    interaction_id: "run-1",
    user_id: "alice",
    principal: "alice",
    started_at: "2026-01-01T00:00:00.000Z",
    duration_ms: 12,
    outcome: "ok",
    error: null,
    steps: [],
    input: { a: 1 },
    output: "done",
    ...over,
  };
}

describe("a settled turn's run outcome", () => {
  it("reads the answer, the denial and timeout details, and a last timed-out step", () => {
    expect(turnRunOutcome({ answer_status: "answered", error: null }, [])).toBe("ok");
    expect(turnRunOutcome({ answer_status: "silent", error: null }, [])).toBe("silent");
    expect(turnRunOutcome({ answer_status: "error", error: "tool dispatch denied: key lacks tool:x" }, [])).toBe("denied");
    expect(turnRunOutcome({ answer_status: "error", error: "agent denied: disabled" }, [])).toBe("denied");
    expect(turnRunOutcome({ answer_status: "error", error: "tool dispatch timeout: tool endpoint did not answer within 0.05s" }, [])).toBe("timeout");
    expect(turnRunOutcome({ answer_status: "error", error: "agent agent_error: LLM endpoint did not answer within 1s" }, [step("ok"), step("timeout")])).toBe(
      "timeout",
    );
    expect(turnRunOutcome({ answer_status: "error", error: "reply_expr must be a string or null; it was object" }, [step("ok")])).toBe("error");
    // A denial fed back to a model that then failed otherwise is the model's failure, not a denial.
    expect(turnRunOutcome({ answer_status: "error", error: "agent agent_error: LLM endpoint answered HTTP 500" }, [step("denied"), step("error")])).toBe(
      "error",
    );
  });
});

describe("a dispatch as a step", () => {
  it("maps denied and timeout, keeps the kind and message as admin detail", () => {
    expect(dispatchStepVerdict({ ok: true, value: 1 })).toEqual({ outcome: "ok", error: null });
    expect(dispatchStepVerdict({ ok: false, kind: "denied", message: "no grant" })).toEqual({ outcome: "denied", error: "denied: no grant" });
    expect(dispatchStepVerdict({ ok: false, kind: "timeout", message: "slow" })).toEqual({ outcome: "timeout", error: "timeout: slow" });
    expect(dispatchStepVerdict({ ok: false, kind: "http_status", message: "HTTP 500" })).toEqual({ outcome: "error", error: "http_status: HTTP 500" });
  });
});

describe("the step log", () => {
  it("records a traced context's steps in order, with outcomes; an untraced one records nothing", async () => {
    const ctx = {};
    const { value, steps } = await collectRunSteps(ctx, async () => {
      await timedStep(
        ctx,
        "tool",
        "a",
        async () => 1,
        () => ({ outcome: "ok", error: null }),
      );
      await timedStep(
        ctx,
        "llm",
        "m",
        async () => 2,
        () => ({ outcome: "timeout", error: "slow" }),
      );
      await expect(
        timedStep(
          ctx,
          "tool",
          "boom",
          async () => Promise.reject(new Error("x")),
          () => ({ outcome: "ok", error: null }),
        ),
      ).rejects.toThrow("x");
      return "v";
    });
    expect(value).toBe("v");
    expect(steps.map((s) => [s.kind, s.name, s.outcome, s.error])).toEqual([
      ["tool", "a", "ok", null],
      ["llm", "m", "timeout", "slow"],
      ["tool", "boom", "error", "the step failed unexpectedly"],
    ]);
    for (const s of steps) expect(s.duration_ms).toBeGreaterThanOrEqual(0);
    // Done: the context is no longer traced, so a later step is not recorded anywhere.
    await timedStep(
      ctx,
      "tool",
      "after",
      async () => 3,
      () => ({ outcome: "ok", error: null }),
    );
    expect(steps).toHaveLength(3);
    expect(new StepLog().steps).toEqual([]);
  });

  it("keeps MAX_TRACE_STEPS steps and counts the rest", async () => {
    const ctx = {};
    const { steps, steps_dropped } = await collectRunSteps(ctx, async () => {
      for (let i = 0; i < MAX_TRACE_STEPS + 5; i++)
        await timedStep(
          ctx,
          "tool",
          `t${i}`,
          async () => i,
          () => ({ outcome: "ok", error: null }),
        );
    });
    expect(steps).toHaveLength(MAX_TRACE_STEPS);
    expect(steps_dropped).toBe(5);
  });
});

describe("the trace bounds", () => {
  it("keeps small JSON, replaces a large value by a marker, cuts error text, caps steps", () => {
    expect(boundTraceJson({ a: [1, 2] })).toEqual({ a: [1, 2] });
    expect(boundTraceJson(undefined)).toBeNull();
    const big = "x".repeat(MAX_TRACE_JSON_BYTES + 10);
    expect(boundTraceJson(big)).toEqual({ truncated: true, bytes: MAX_TRACE_JSON_BYTES + 12 });
    const long = "e".repeat(MAX_ERROR_CHARS + 50);
    const b = boundTrace(trace({ error: long, steps: Array.from({ length: MAX_TRACE_STEPS + 2 }, () => step("error", long)), input: big }));
    expect(b.error).toHaveLength(MAX_ERROR_CHARS);
    expect(b.steps).toHaveLength(MAX_TRACE_STEPS);
    expect(b.steps_dropped).toBe(2);
    expect(must(b.steps, "b.steps")[0].error).toHaveLength(MAX_ERROR_CHARS);
    expect(b.input).toEqual({ truncated: true, bytes: MAX_TRACE_JSON_BYTES + 12 });
    expect(RunTrace.safeParse(b).success).toBe(true);
  });

  it("refuses what the shape refuses (unknown fields, unknown outcomes)", () => {
    expect(RunTrace.safeParse({ ...trace(), extra: 1 }).success).toBe(false);
    expect(RunTrace.safeParse({ ...trace(), outcome: "maybe" }).success).toBe(false);
    expect(RunTrace.safeParse({ ...trace(), started_at: "yesterday" }).success).toBe(false);
  });
});

describe("the summary row", () => {
  it("flattens the target, counts steps (kept and dropped) and flags error detail", () => {
    const t = RunTrace.parse(trace({ steps: [step("ok"), step("error", "boom")], steps_dropped: 3 }));
    expect(summaryOf(t, "shard")).toEqual({
      trace_id: "tr-1",
      kind: "tool_run",
      trigger: "background",
      target_kind: "tool",
      target_name: "echo",
      target_version: null,
      route_name: null,
      thread_id: null,
      interaction_id: "run-1",
      user_id: "alice",
      principal: "alice",
      started_at: Date.parse("2026-01-01T00:00:00.000Z"),
      duration_ms: 12,
      outcome: "ok",
      step_count: 5,
      has_error: true,
      home: "shard",
    });
    expect(summaryOf(RunTrace.parse(trace()), "thread").has_error).toBe(false);
  });
});

describe("who reads which runs", () => {
  it("narrows a restricted caller to its own principal, whatever it asks; others pass", () => {
    const q = runFilterQuery.parse({ user: "bob", outcome: "ok" });
    const minted = "2026-01-01T00:00:00.000Z";
    // A restricted caller's own runs are those of its key's lineage: started since the key was minted.
    expect(callerFilter(q, { restricted: true, admin: false, key: { user_id: "svc-a", created_at: minted } })).toEqual({
      user: "bob",
      outcome: "ok",
      principal: "svc-a",
      principal_since: Date.parse(minted),
    });
    expect(callerFilter(q, { restricted: false, admin: false, key: { user_id: "svc-b", created_at: minted } })).toEqual({ user: "bob", outcome: "ok" });
    expect(() => callerFilter(runFilterQuery.parse({ from: "2026-02-01T00:00:00Z", to: "2026-01-01T00:00:00Z" }), null)).toThrow(/from/);
  });

  it("builds the WHERE clause from the filters, binding every value", () => {
    const f = runFilterQuery.parse({
      preset: "p",
      version: "3",
      user: "u",
      session: "s",
      interaction: "i",
      outcome: "denied",
      kind: "turn",
      from: "2026-01-01T00:00:00Z",
      to: "2026-01-02T00:00:00Z",
    });
    const w = whereOf({ ...f, principal: "me" });
    expect(w.sql).toBe(
      "WHERE target_name = ? AND target_version = ? AND user_id = ? AND thread_id = ? AND interaction_id = ? AND outcome = ? AND kind = ? AND principal = ? AND started_at >= ? AND started_at < ?",
    );
    expect(w.args).toEqual(["p", "3", "u", "s", "i", "denied", "turn", "me", Date.parse("2026-01-01T00:00:00Z"), Date.parse("2026-01-02T00:00:00Z")]);
    expect(whereOf({})).toEqual({ sql: "", args: [] });
  });

  it("refuses malformed filters by field", () => {
    expect(runFilterQuery.safeParse({ outcome: "fine" }).success).toBe(false);
    expect(runFilterQuery.safeParse({ from: "last week" }).success).toBe(false);
    expect(runFilterQuery.safeParse({ user: "" }).success).toBe(false);
  });

  it("lets a restricted caller read only its own trace; error text only for admins", () => {
    const at = "2026-01-02T00:00:00.000Z";
    const since = "2026-01-01T00:00:00.000Z";
    expect(mayRead({ principal: "a", started_at: at }, { restricted: true, user_id: "a", since })).toBe(true);
    expect(mayRead({ principal: "b", started_at: at }, { restricted: true, user_id: "a", since })).toBe(false);
    expect(mayRead({ principal: null, started_at: at }, { restricted: true, user_id: "a", since })).toBe(false);
    expect(mayRead({ principal: "b", started_at: at }, { restricted: false, user_id: "a", since })).toBe(true);
    // A run of the same user_id from before the caller's key lineage began was another holder's.
    expect(mayRead({ principal: "a", started_at: "2025-12-31T00:00:00.000Z" }, { restricted: true, user_id: "a", since })).toBe(false);
    const t = RunTrace.parse(trace({ outcome: "error", error: "secret detail", steps: [step("error", "step detail")] }));
    expect(traceFor(t, true)).toBe(t);
    const shown = traceFor(t, false);
    expect(shown.error).toBeNull();
    expect(shown.steps.map((s) => s.error)).toEqual([null]);
    expect(JSON.stringify(shown)).not.toContain("detail");
  });

  it("names the export file safely", () => {
    expect(traceFileName("0b7c-uuid")).toBe("trace-0b7c-uuid.json");
    expect(traceFileName('a"b/c\r\nd')).toBe("trace-a_b_c__d.json");
  });
});

/** The ToolRun alarm policy (pure; src/tool-runs/alarm-policy.ts): one step per state. */
import { describe, expect, it } from "vitest";
import { ATTEMPT_LEASE_MS, alarmStep, interruptedEnd } from "../../src/tool-runs/alarm-policy";
import { askedRunEnd } from "../../src/tool-runs/execute";

const NOW = 1_800_000_000_000;
const row = (over: Partial<Parameters<typeof alarmStep>[0] & object>) => ({
  status: "queued" as const,
  attempts: 0,
  published: false,
  expires_at: null,
  started_at: null,
  ...over,
});

describe("alarmStep", () => {
  it("no run: nothing", () => expect(alarmStep(null, NOW, 3, false)).toEqual({ kind: "none" }));
  it("queued: start", () => expect(alarmStep(row({}), NOW, 3, false)).toEqual({ kind: "start" }));
  it("running with nothing in flight here: interrupted; start again below the cap, give up at it", () => {
    expect(alarmStep(row({ status: "running", attempts: 1 }), NOW, 3, false)).toEqual({ kind: "start" });
    expect(alarmStep(row({ status: "running", attempts: 2 }), NOW, 3, false)).toEqual({ kind: "start" });
    expect(alarmStep(row({ status: "running", attempts: 3 }), NOW, 3, false)).toEqual({ kind: "give_up" });
    expect(alarmStep(row({ status: "running", attempts: 1 }), NOW, 1, false)).toEqual({ kind: "give_up" });
  });
  it("an attempt in flight in this instance: look again a lease later", () => {
    expect(alarmStep(row({ status: "running", attempts: 1 }), NOW, 3, true)).toEqual({ kind: "sleep", until: NOW + ATTEMPT_LEASE_MS });
    expect(alarmStep(row({ status: "queued" }), NOW, 3, true)).toEqual({ kind: "sleep", until: NOW + ATTEMPT_LEASE_MS });
  });
  it("ended: publish first, then sleep until the expiry, then expire", () => {
    for (const status of ["succeeded", "failed"] as const) {
      expect(alarmStep(row({ status, published: false, expires_at: NOW + 10 }), NOW, 3, false)).toEqual({ kind: "publish" });
      expect(alarmStep(row({ status, published: true, expires_at: NOW + 10 }), NOW, 3, false)).toEqual({ kind: "sleep", until: NOW + 10 });
      expect(alarmStep(row({ status, published: true, expires_at: NOW }), NOW, 3, false)).toEqual({ kind: "expire" });
    }
  });
  it("waiting on a question: sleep until the wait's deadline, then stop waiting (whatever is in flight)", () => {
    expect(alarmStep(row({ status: "waiting", attempts: 1, expires_at: NOW + 10 }), NOW, 3, false)).toEqual({ kind: "sleep", until: NOW + 10 });
    expect(alarmStep(row({ status: "waiting", attempts: 1, expires_at: NOW }), NOW, 3, false)).toEqual({ kind: "stop_waiting" });
    expect(alarmStep(row({ status: "waiting", attempts: 1, expires_at: null }), NOW, 3, true)).toEqual({ kind: "stop_waiting" });
  });
  it("askedRunEnd: answered and cancelled succeed with what ask_user answers; expired fails timeout", () => {
    const outcome = { interaction_id: "i", outcome: "cancelled", cancelled: true };
    expect(askedRunEnd(outcome, "cancelled")).toEqual({ status: "succeeded", result: outcome, error: null, error_kind: null });
    expect(askedRunEnd({ outcome: "answered" }, "answered").status).toBe("succeeded");
    expect(askedRunEnd({ outcome: "expired", timeout: true }, "expired")).toEqual({
      status: "failed",
      result: null,
      error: "the question expired unanswered",
      error_kind: "timeout",
    });
  });
  it("the interrupted end names the count, never a value", () => {
    expect(interruptedEnd(1)).toEqual({
      status: "failed",
      result: null,
      error_kind: "interrupted",
      error: "the run was interrupted 1 time (its object restarted mid-run); not started again",
    });
  });
});

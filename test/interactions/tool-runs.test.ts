/**
 * Questions from background tool runs (docs/interactions.md "Questions from tool runs"):
 * a run whose tool is `ask_user` (or a preset over it) waits in its ToolRun object; the
 * interaction's end hands the outcome over, and the run ends with what `ask_user` answers: the
 * answer, or the cancellation; an expiry fails it `timeout`. The wait survives (it is a row and an
 * alarm), a lost hand-over ends the run at its deadline, and a schedule's or hook's fire asks too.
 */
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { admin, call, mintKey, uniq } from "../helpers/http";
import { eventually } from "../helpers/threads";
import { deliver, hook } from "../hooks/helpers";
import { endedRun, runObject, traceOf } from "../tool-runs/helpers";
import { listedAs, stepAt } from "./helpers";

/** Submits `arguments` to ask_user (or `tool`) as a fresh key; waits until the run waits; answers the run and its interaction id. */
async function askingRun(args: Record<string, unknown>, tool = "ask_user") {
  const k = await mintKey({ scopes: ["tools:read", `tool:${tool}`] });
  const submit = await call("POST", "/api/tool-runs", { key: k.key, body: { tool_name: tool, arguments: args } });
  expect(submit.status, JSON.stringify(submit.body)).toBe(202);
  const runId: string = submit.body.data.run_id;
  const waiting = await eventually(
    () => call("GET", `/api/tool-runs/${runId}`, { key: k.key }),
    (r) => r.body?.data?.status === "waiting",
  );
  expect(waiting.body.data).toMatchObject({ status: "waiting", interaction_id: expect.any(String), result: null, error: null });
  return { key: k, runId, interactionId: waiting.body.data.interaction_id as string };
}

/** The interaction as listed once its result is recorded. */
async function resultOf(id: string, status: string): Promise<any> {
  return eventually(
    async () =>
      (await call("GET", `/api/interactions?status=${status}&pageSize=200`, { key: await admin() })).body.data.items.find((i: any) => i.interaction_id === id),
    (i) => Boolean(i?.result),
  );
}

describe("a background tool run that asks", () => {
  it("waits; an operator's answer ends it with the answer as its result, traced", async () => {
    const { key, runId, interactionId } = await askingRun({
      question: "Ship release 42?",
      options: [
        { text: "Yes", id: "yes" },
        { text: "No", id: "no" },
      ],
    });
    const pending = await listedAs(interactionId, "pending");
    expect(pending).toMatchObject({
      origin: { kind: "tool_run", run_id: runId, caller: key.user_id },
      target: { kind: "tool", name: "ask_user" },
      question: "Ship release 42?",
    });
    const adminKey = await admin();
    const listed = await eventually(
      () => call("GET", "/api/tool-runs?tool_name=ask_user&pageSize=200", { key: adminKey }),
      (r) => r.body?.data?.items?.some((i: any) => i.run_id === runId && i.status === "waiting"),
    );
    expect(listed.body.data.items.find((i: any) => i.run_id === runId).status).toBe("waiting");

    const answered = await call("POST", `/api/interactions/${interactionId}/answer`, { key: await admin(), body: { option_id: "yes" } });
    expect(answered.status, JSON.stringify(answered.body)).toBe(200);
    const run = await endedRun(runId, key.key);
    expect(run).toMatchObject({
      status: "succeeded",
      interaction_id: interactionId,
      result: {
        interaction_id: interactionId,
        outcome: "answered",
        answer: { text: "Yes", option: { id: "yes", text: "Yes" }, answered_by: { kind: "operator", user_id: "root" } },
      },
    });
    expect((await resultOf(interactionId, "answered")).result).toMatchObject({ outcome: "ok", error: null, trace_id: runId });
    const { listed: traced } = await traceOf(runId);
    expect(traced).toMatchObject({ trace_id: runId, kind: "tool_run", outcome: "ok" });
  });

  it("a cancellation ends it with the cancellation the tool sees; an expiry fails it timeout", async () => {
    const cancelled = await askingRun({ question: "Rotate the keys?" });
    const c = await call("POST", `/api/interactions/${cancelled.interactionId}/cancel`, { key: await admin(), body: { reason: "not today" } });
    expect(c.status).toBe(200);
    expect(await endedRun(cancelled.runId)).toMatchObject({
      status: "succeeded",
      result: { interaction_id: cancelled.interactionId, outcome: "cancelled", cancelled: true, reason: "not today" },
    });

    const expiring = await askingRun({ question: "Anyone there?" });
    await stepAt(expiring.interactionId, Date.now() + 10 * 24 * 3600_000);
    expect(await endedRun(expiring.runId)).toMatchObject({ status: "failed", error_kind: "timeout", error: "the question expired unanswered", result: null });
    expect((await resultOf(expiring.interactionId, "expired")).result).toMatchObject({ outcome: "timeout", trace_id: expiring.runId });
  });

  it("a preset over ask_user asks with its fixed kwargs", async () => {
    const preset = uniq("approve").replace(/-/g, "_");
    const made = await call("POST", "/api/presets", {
      key: await admin(),
      body: { name: preset, base_tool: "ask_user", fixed_kwargs: { question: "Approve the deploy?" } },
    });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const { runId, interactionId } = await askingRun({}, preset);
    expect(await listedAs(interactionId, "pending")).toMatchObject({ question: "Approve the deploy?", target: { kind: "tool", name: preset } });
    await call("POST", `/api/interactions/${interactionId}/answer`, { key: await admin(), body: { text: "go" } });
    expect(await endedRun(runId)).toMatchObject({ status: "succeeded", result: { outcome: "answered", answer: { text: "go" } } });
  });

  it("a hand-over that never comes ends the run at its deadline; a late one finds it no longer waiting", async () => {
    const { runId, interactionId } = await askingRun({ question: "Lost?" });
    // The run's own alarm, far past the question's expiry plus the margin, before the interaction ended.
    await runInDurableObject(runObject(runId), async (obj) => {
      await obj.parts.alarm.runAt(Date.now() + 30 * 24 * 3600_000);
    });
    expect(await endedRun(runId)).toMatchObject({ status: "failed", error_kind: "timeout", error: expect.stringContaining("got no outcome in time") });
    await call("POST", `/api/interactions/${interactionId}/answer`, { key: await admin(), body: { text: "too late" } });
    expect((await resultOf(interactionId, "answered")).result).toMatchObject({ outcome: "error", error: "the tool run no longer waits for this interaction" });
  });

  it("a hook's fire asks too, with the payload as the question", async () => {
    const runner = await mintKey({ scopes: ["tool:ask_user"] });
    const topic = uniq("ask-topic").toLowerCase();
    await hook({ name: uniq("ask-hook").toLowerCase(), topic, tool: "ask_user", execution_key: runner.user_id, expr: '{question: ("Merge " + .pr + "?")}' });
    const fired = await deliver(topic, JSON.stringify({ pr: "#7" }));
    expect(fired.status, JSON.stringify(fired.body)).toBe(202);
    const runId = fired.body.data.fired[0].run_id;
    const adminKey = await admin();
    const waiting = await eventually(
      () => call("GET", `/api/tool-runs/${runId}`, { key: adminKey }),
      (r) => r.body?.data?.status === "waiting",
    );
    const id = waiting.body.data.interaction_id;
    expect(await listedAs(id, "pending")).toMatchObject({ question: "Merge #7?", origin: { kind: "tool_run", run_id: runId, caller: runner.user_id } });
    await call("POST", `/api/interactions/${id}/answer`, { key: await admin(), body: { text: "merged" } });
    expect(await endedRun(runId)).toMatchObject({ status: "succeeded", origin: "hook", result: { outcome: "answered", answer: { text: "merged" } } });
  });
});

/**
 * A trace for every bridge turn: each outcome (ok, silent, error, denied,
 * timeout) is recorded with its steps and timings, listed by GET /api/runs and readable by the
 * trace door; error detail is admin-only; a restricted caller sees only the runs it called.
 */
import { describe, expect, it } from "vitest";
import { TURN_ERROR_TEXT } from "../../../src/conversations/model/record";
import { send } from "../../helpers/bridge";
import { answerOnly, fakeNetwork } from "../../helpers/network";
import { admin, call, mintKey, uniq } from "../../helpers/http";
import { declareHttpTool, read, runsCaughtUp, toolRoute, turn } from "./helpers";

const enc = encodeURIComponent;

describe("every turn outcome is traced", () => {
  it("ok, silent, error, denied and timeout: listed with their outcome, kind, route, thread, user and principal", async () => {
    const hang = "https://tools.example/hangs";
    fakeNetwork(answerOnly({ [`POST ${hang}`]: () => new Promise<Response>(() => undefined) }));
    const echo = await toolRoute("echo", { reply_expr: 'if . == "boom" then {a: .} else . end' });
    const ok = await turn(echo.name, "hello", { user: "ann" });
    const silent = await turn(echo.name, "   ", { user: "ann" });
    const error = await turn(echo.name, "boom", { user: "ann" });
    expect([ok.status, silent.status, error.status]).toEqual(["answered", "silent", "error"]);

    const slow = await declareHttpTool(hang, { timeout_seconds: 0.05 });
    const slowRoute = await toolRoute(slow);
    const timeout = await turn(slowRoute.name, "wait", { user: "bob" });
    expect(timeout.status).toBe("error");

    // Denied: the bound key is re-minted under a new fingerprint (decisions §2).
    const denyRoute = await toolRoute("echo");
    await call("DELETE", `/api/auth/api-keys/${denyRoute.key.user_id}`, { key: await admin() });
    await mintKey({ user_id: denyRoute.key.user_id, scopes: ["tool:echo"] });
    const denied = await turn(denyRoute.name, "no", { user: "cy" });
    expect(denied).toMatchObject({ status: "error", answer: TURN_ERROR_TEXT });

    await runsCaughtUp(ok.thread_id, timeout.thread_id, denied.thread_id);
    const byId = async (id: string) => (await read(`/api/runs?interaction=${enc(id)}`)).items[0];
    expect(await byId(ok.message_id)).toMatchObject({
      trace_id: ok.message_id,
      kind: "turn",
      trigger: "api",
      target: { kind: "tool", name: "echo", version: null },
      route_name: echo.name,
      thread_id: ok.thread_id,
      interaction_id: ok.message_id,
      user_id: "ann",
      principal: "root",
      outcome: "ok",
      step_count: 1,
      has_error: false,
    });
    expect((await byId(silent.message_id)).outcome).toBe("silent");
    expect(await byId(error.message_id)).toMatchObject({ outcome: "error", has_error: true });
    expect(await byId(timeout.message_id)).toMatchObject({ outcome: "timeout", target: { name: slow }, user_id: "bob" });
    expect(await byId(denied.message_id)).toMatchObject({ outcome: "denied", user_id: "cy" });

    // The route's runs, newest first, exactly the three turns it ran.
    const listed = await read(`/api/runs?session=${enc(ok.thread_id)}`);
    expect(listed.items.map((r: { trace_id: string }) => r.trace_id)).toEqual([error.message_id, silent.message_id, ok.message_id]);
    expect(listed).toMatchObject({ total: 3, page: 1, page_size: 50, next_page: null, truncated: false });
  });
});

describe("a turn's trace", () => {
  it("carries its steps with timings, its input and output, and error detail for admins only", async () => {
    const url = "https://tools.example/trace-ok";
    fakeNetwork(answerOnly({ [`POST ${url}`]: async (_req, body) => Response.json(`tool saw ${JSON.parse(body).message}`) }));
    const tool = await declareHttpTool(url);
    const r = await toolRoute(tool, { reply_expr: 'if test("fail") then 42 else . end' });
    const ok = await turn(r.name, "hi", { user: "dee" });
    const bad = await turn(r.name, "fail please", { user: "dee" });

    // Readable at once (the index trails by about a second; the door finds a fresh trace at home).
    const trace = await read(`/api/observability/runs/${enc(ok.message_id)}/trace`);
    expect(trace).toMatchObject({
      trace_id: ok.message_id,
      kind: "turn",
      outcome: "ok",
      error: null,
      input: { kind: "message", text: "hi" },
      output: { answer_status: "answered", answer: "tool saw hi" },
      steps: [{ kind: "tool", name: tool, outcome: "ok", error: null }],
    });
    expect(trace.steps[0].duration_ms).toBeGreaterThanOrEqual(0);
    expect(Date.parse(trace.steps[0].started_at)).toBeGreaterThanOrEqual(Date.parse(trace.started_at));
    expect(trace.duration_ms).toBeGreaterThanOrEqual(trace.steps[0].duration_ms);

    const adminView = await read(`/api/observability/runs/${enc(bad.message_id)}/trace`);
    expect(adminView.outcome).toBe("error");
    expect(adminView.error).toContain("reply_expr must be a string or null");

    // A reader without admin: the same trace, without any error text.
    const reader = await mintKey({ scopes: ["observability:read", "runs:read"] });
    const readerView = await read(`/api/observability/runs/${enc(bad.message_id)}/trace`, reader.key);
    expect(readerView).toMatchObject({ trace_id: bad.message_id, outcome: "error", error: null });
    expect(JSON.stringify(readerView)).not.toContain("reply_expr");

    // The export: the bare trace as a download named after it.
    const dl = await call("GET", `/api/observability/runs/${enc(ok.message_id)}/trace/export`, { key: await admin() });
    expect(dl.status).toBe(200);
    expect(dl.headers.get("content-disposition")).toBe(`attachment; filename="trace-${ok.message_id}.json"`);
    expect(dl.headers.get("content-type")).toMatch(/^application\/json/);
    expect(dl.body).toMatchObject({ trace_id: ok.message_id, steps: [{ kind: "tool", name: tool }] });
    const dlReader = await call("GET", `/api/observability/runs/${enc(bad.message_id)}/trace/export`, { key: reader.key });
    expect(dlReader.body.error).toBeNull();

    await runsCaughtUp(ok.thread_id);
    expect((await read(`/api/observability/runs/${enc(ok.message_id)}/trace`)).trace_id).toBe(ok.message_id);
    expect((await call("GET", `/api/observability/runs/${enc(crypto.randomUUID())}/trace`, { key: await admin() })).status).toBe(404);
  });

  it("an llm agent's turn records its model calls and tool calls as steps", async () => {
    const agent = uniq("llm-agent");
    const decl = await call("POST", "/api/agents-config/entries", {
      key: await admin(),
      body: { title: agent, kind: "llm", config: { base_url: "https://llm.example/v1", model: "m-1", tool_names: ["echo"] } },
    });
    expect(decl.status, JSON.stringify(decl.body)).toBe(200);
    let calls = 0;
    fakeNetwork(
      answerOnly({
        "POST https://llm.example/v1/chat/completions": () => {
          calls += 1;
          if (calls === 1) {
            return Response.json({
              choices: [
                {
                  message: {
                    role: "assistant",
                    content: null,
                    tool_calls: [{ id: "c1", type: "function", function: { name: "echo", arguments: '{"message":"pong"}' } }],
                  },
                },
              ],
            });
          }
          return Response.json({ choices: [{ message: { role: "assistant", content: "done" } }] });
        },
      }),
    );
    const k = await mintKey({ scopes: [`agent:${agent}`, "tool:echo"] });
    const { createRoute } = await import("../../helpers/bridge");
    const r = await createRoute({ door: "api", target_kind: "agent", target_name: agent, execution_key: k.user_id });
    const res = await turn(r.name, "think");
    expect(res).toMatchObject({ status: "answered", answer: "done" });
    const trace = await read(`/api/observability/runs/${enc(res.message_id)}/trace`);
    expect(trace.target).toEqual({ kind: "agent", name: agent, version: null });
    expect(trace.steps.map((s: { kind: string; name: string; outcome: string }) => [s.kind, s.name, s.outcome])).toEqual([
      ["llm", "m-1", "ok"],
      ["tool", "echo", "ok"],
      ["llm", "m-1", "ok"],
    ]);
  });
});

describe("restricted callers", () => {
  it("see only the runs they called, in the listings, the export and the trace door", async () => {
    const route = await toolRoute("echo");
    const owner = await mintKey({ scopes: ["conversations", "runs:read", "observability:read"] });
    const mine = await mintKey({ scopes: ["conversations", "runs:read", "observability:read"], owner_user_id: owner.user_id });
    const own = await turn(route.name, "from the owned key", { key: mine.key, user: "x" });
    const other = await turn(route.name, "from the owner", { key: owner.key, user: "x" });
    await runsCaughtUp(own.thread_id, other.thread_id);

    const restricted = await read(`/api/runs?preset=echo`, mine.key);
    expect(restricted.items.map((r: { trace_id: string }) => r.trace_id)).toEqual([own.message_id]);
    expect(restricted.total).toBe(1);
    // Asking for another principal's user filter does not widen it.
    expect((await read(`/api/observability/runs?session=${enc(other.thread_id)}`, mine.key)).items).toEqual([]);
    const csv = await call("GET", "/api/observability/runs/export", { key: mine.key });
    expect(csv.body as string).toContain(own.message_id);
    expect(csv.body as string).not.toContain(other.message_id);
    expect((await call("GET", `/api/observability/runs/${enc(other.message_id)}/trace`, { key: mine.key })).status).toBe(404);
    expect((await call("GET", `/api/observability/runs/${enc(other.message_id)}/trace/export`, { key: mine.key })).status).toBe(404);
    expect((await read(`/api/observability/runs/${enc(own.message_id)}/trace`, mine.key)).principal).toBe(mine.user_id);

    // The owner (not restricted) sees both.
    const all = await read(`/api/runs?preset=echo&session=${enc(other.thread_id)}`, owner.key);
    expect(all.items.map((r: { trace_id: string }) => r.trace_id)).toEqual([other.message_id]);
    expect((await read(`/api/runs?preset=echo&session=${enc(own.thread_id)}`, owner.key)).total).toBe(1);
  });

  it("a key without the runs or observability grant is refused (403)", async () => {
    const k = await mintKey({ scopes: ["conversations:read"] });
    expect((await call("GET", "/api/runs", { key: k.key })).status).toBe(403);
    expect((await call("GET", "/api/observability/runs", { key: k.key })).status).toBe(403);
    expect((await call("GET", "/api/observability/metrics", { key: k.key })).status).toBe(403);
    const reader = await mintKey({ scopes: ["runs:read"] });
    expect((await call("POST", "/api/runs/prune", { key: reader.key, body: { older_than_seconds: 60 } })).status).toBe(403);
    void send;
  });
});

/**
 * One jq program must never take the service down. Every evaluation runs
 * under the metered budget (steps, stack, memory); compiling never evaluates.
 */
import { afterEach, describe, expect, it } from "vitest";
import { DEFAULT_JQ_BUDGET } from "../../../src/platform/jq/budget";
import { JqError, currentJqBudget, jqCompile, jqRun, setJqBudget } from "../../../src/platform/jq/engine";
import { echoRoute, readRecord, send } from "../../helpers/bridge";
import { admin, call, mintKey } from "../../helpers/http";

/** Programs that would exhaust an unmetered evaluator: endless recursion, huge and endless ranges, a memory bomb. */
const BOMBS = ["def f: f; f", "[range(1e9)]", "last(range(1e12))", "repeat(.)", "[range(1e8)] | tostring"];

async function failure(program: string, input: unknown = null): Promise<JqError> {
  const err = await jqRun(program, input).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(JqError);
  return err as JqError;
}

afterEach(() => setJqBudget(DEFAULT_JQ_BUDGET));

describe("jq budget: the engine", () => {
  it.each(BOMBS)("stops %s with a budget error, and the next run works", async (program) => {
    const err = await failure(program);
    expect(err.kind).toBe("budget");
    expect(err.message).toMatch(/^jq budget exceeded: /);
    expect(await jqRun(".a + 1", { a: 1 })).toEqual([2]);
  });

  it("stops deep C recursion (printing a value nested 100,000 levels) before it leaves jq's stack", async () => {
    const err = await failure("reduce range(100000) as $i (null; [.]) | tostring");
    expect(err).toMatchObject({ kind: "budget", message: "jq budget exceeded: nesting too deep for jq's stack" });
    expect(await jqRun("[.[] * 2]", [1, 2])).toEqual([[2, 4]]);
  });

  it("stops a single huge allocation at the memory budget", async () => {
    const err = await failure('"x" * 200000000 | length');
    expect(err).toMatchObject({ kind: "budget", message: `jq budget exceeded: more than ${DEFAULT_JQ_BUDGET.memoryMb} MiB of memory` });
    expect(await jqRun("length", "abc")).toEqual([3]);
  });

  it("names the step budget in force, which the setting changes", async () => {
    setJqBudget({ steps: 3_000_000, memoryMb: 32 });
    expect(currentJqBudget()).toEqual({ steps: 3_000_000, memoryMb: 32 });
    const err = await failure("[range(1e6)] | length");
    expect(err.message).toBe("jq budget exceeded: more than 3000000 steps");
    setJqBudget(DEFAULT_JQ_BUDGET);
    expect(await jqRun("[range(1e5)] | length", null)).toEqual([100000]);
  });

  it("gives each queued run its own fuel: concurrent runs do not share one budget", async () => {
    setJqBudget({ steps: 3_000_000, memoryMb: 32 });
    // Each run alone fits the budget (a few hundred thousand steps); together they would not.
    const runs = await Promise.all(Array.from({ length: 12 }, (_, i) => jqRun(`[range(20000)] | length + ${i}`, null)));
    expect(runs.map((r) => r[0])).toEqual(Array.from({ length: 12 }, (_, i) => 20000 + i));
  });

  it("keeps the C stack level across runs: 300 runs of a 400-byte program (more than jq's whole stack) all succeed", async () => {
    // jq-wasm's callMain leaves each run's argv on the stack; unrestored, these runs would walk
    // the stack pointer 120 KB down, past jq's 64 KB stack and into its static data.
    const program = `.n + 1 # ${"x".repeat(400)}`;
    for (let i = 0; i < 300; i++) expect(await jqRun(program, { n: i })).toEqual([i + 1]);
  });

  it("compiles without evaluating: a program that could never finish compiles under a tiny budget", async () => {
    setJqBudget({ steps: 2_000_000, memoryMb: 16 });
    for (const program of BOMBS) await expect(jqCompile(program)).resolves.toBeUndefined();
    await expect(jqCompile('error("only at run time")')).resolves.toBeUndefined();
    await expect(jqCompile("{")).rejects.toMatchObject({ kind: "compile" });
  });

  it("bounds a declaration-time check too, if a program's text escapes the compile-only branch", async () => {
    const escaping = "1) else (def f: f; f) end | if true then (1";
    await expect(jqCompile(escaping)).rejects.toMatchObject({ kind: "budget" });
  });
});

describe("jq budget: doors and turns", () => {
  it.each(BOMBS)("accepts %s at route create (compiling never evaluates) and the turn ends with 'jq budget exceeded' while health answers", async (program) => {
    const route = await echoRoute({ payload_expr: program });
    const [res, health] = await Promise.all([send(route.name, { external_user_id: "u", text: "hi", wait_seconds: 30 }), call("GET", "/api/health")]);
    expect(health.status).toBe(200);
    expect(res.status).toBe(200);
    expect(res.body.data.status).toBe("error");
    const rec = await readRecord(route.name, res.body.data.message_id);
    expect(rec.body.data.answer_status).toBe("error");
    expect(rec.body.data.error).toContain("jq budget exceeded");
    expect((await call("GET", "/api/health")).status).toBe(200);
  });

  it("fails a reply_expr over budget the same way", async () => {
    const route = await echoRoute({ reply_expr: "last(range(1e12)) | tostring" });
    const res = await send(route.name, { external_user_id: "u", text: "hi", wait_seconds: 30 });
    expect(res.body.data.status).toBe("error");
    const rec = await readRecord(route.name, res.body.data.message_id);
    expect(rec.body.data.error).toBe("reply_expr: jq budget exceeded: more than 60000000 steps");
  });

  it("answers 400 naming the budget when a declaration check runs over it", async () => {
    const k = await mintKey({ scopes: ["tool:echo"] });
    const res = await call("POST", "/api/conversations/jq-escape", {
      key: await admin(),
      body: { door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id, payload_expr: "1) else (def f: f; f) end | if true then (1" },
    });
    expect(res.status).toBe(400);
    expect(res.body.error).toMatch(/^invalid payload_expr: jq budget exceeded: /);
  });

  it("mints a key whose condition never ends, and that key is denied (fail closed) while health answers", async () => {
    const k = await mintKey({ scopes: ["conversations:read"], condition: "def f: f; f" });
    const [res, health] = await Promise.all([call("GET", "/api/conversations", { key: k.key }), call("GET", "/api/health")]);
    expect(res.status).toBe(403);
    expect(health.status).toBe(200);
  });
});

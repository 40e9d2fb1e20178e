/**
 * Extensions at dispatch (docs/extensions.md): the dispatcher runs every call of a declared tool or
 * a preset through its combos, after authorization and the kwargs checks. The network is faked at
 * the context's fetch edge (test/helpers/network.ts).
 */
import { describe, expect, it } from "vitest";
import { collectRunSteps } from "../../src/shared/run-steps";
import { dispatchTool } from "../../src/targets/dispatch";
import { D1Counter } from "../helpers/d1-count";
import { fakeFetch, fakeNetwork, hangingFetch, json } from "../helpers/network";
import { admin, call, mintKey, uniq } from "../helpers/http";
import { testContext } from "../targets/helpers";

async function declareTool(extra: Record<string, unknown> = {}): Promise<string> {
  const title = uniq("tool");
  const r = await call("POST", "/api/tools-config/entries", { key: await admin(), body: { title, kind: "http", url: "https://tools.example/run", ...extra } });
  if (r.status !== 200) throw new Error(`declare failed: ${r.status} ${JSON.stringify(r.body)}`);
  return title;
}

async function withCombos(tool: string, combos: unknown): Promise<void> {
  const r = await call("POST", `/api/tools/${tool}/extensions`, { key: await admin(), body: { combos } });
  if (r.status !== 200) throw new Error(`combos failed: ${r.status} ${JSON.stringify(r.body)}`);
}

const profile = { user: { email: "ada@example.com", name: "Ada" }, cards: [{ number: "4111", kind: "visa" }] };

describe("transformers", () => {
  it("redact replaces the named values of a declared tool's result", async () => {
    const tool = await declareTool();
    await withCombos(tool, [[{ name: "redact", config: { paths: ["user.email", "cards.*.number"] } }]]);
    const edge = fakeFetch(() => json(profile));
    const r = await dispatchTool(testContext({ fetch: edge.fetch }), tool, {});
    expect(r).toEqual({ ok: true, value: { user: { email: "<redacted>", name: "Ada" }, cards: [{ number: "<redacted>", kind: "visa" }] } });
  });

  it("max_result_bytes fails an oversized result with tool_error (run-tool answers 500 tool-error), or truncates it", async () => {
    const tool = await declareTool();
    await withCombos(tool, [[{ name: "max_result_bytes", config: { bytes: 32 } }]]);
    const edge = fakeFetch(() => json({ text: "x".repeat(100) }));
    const r = await dispatchTool(testContext({ fetch: edge.fetch }), tool, {});
    expect(r).toEqual({ ok: false, kind: "tool_error", message: "the result is larger than max_result_bytes (32 bytes)" });

    fakeNetwork(() => json({ text: "x".repeat(100) }));
    const door = await call("POST", "/api/run-tool", { key: await admin(), body: { tool_name: tool, arguments: {} } });
    expect(door.status).toBe(500);
    expect(door.body).toEqual({ error: "the result is larger than max_result_bytes (32 bytes)", code: "tool-error" });

    await withCombos(tool, [[{ name: "max_result_bytes", config: { bytes: 32, on_over: "truncate" } }]]);
    const cut = await dispatchTool(testContext({ fetch: fakeFetch(() => json("y".repeat(100))).fetch }), tool, {});
    expect(cut).toEqual({ ok: true, value: `${"y".repeat(29)}…` });
  });

  it("apply in list order, first element closest to the tool", async () => {
    const tool = await declareTool();
    const big = { secret: "s".repeat(200), keep: 1 };
    const redactSecret = { name: "redact", config: { paths: ["secret"] } };
    const cap = { name: "max_result_bytes", config: { bytes: 64 } };
    // redact first: the cap sees the small redacted result.
    await withCombos(tool, [[redactSecret, cap]]);
    expect(await dispatchTool(testContext({ fetch: fakeFetch(() => json(big)).fetch }), tool, {})).toEqual({
      ok: true,
      value: { secret: "<redacted>", keep: 1 },
    });
    // The cap first (it sees the raw result), across two combos.
    await withCombos(tool, [[cap], [redactSecret]]);
    expect(await dispatchTool(testContext({ fetch: fakeFetch(() => json(big)).fetch }), tool, {})).toMatchObject({ ok: false, kind: "tool_error" });
  });

  it("never run when the dispatch fails before the call (unknown tool, bad kwargs, denied key)", async () => {
    const tool = await declareTool({ input_schema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] } });
    await withCombos(tool, [[{ name: "max_result_bytes", config: { bytes: 16 } }]]);
    const edge = fakeFetch(() => json("never"));
    const ctx = testContext({ fetch: edge.fetch });
    expect(await dispatchTool(ctx, tool, {})).toMatchObject({ ok: false, kind: "invalid_kwargs" });
    const stranger = await mintKey({ scopes: ["tool:other"] });
    expect(await dispatchTool(ctx, tool, { n: 1 }, { asKey: { user_id: stranger.user_id, fingerprint: stranger.fingerprint } })).toMatchObject({
      ok: false,
      kind: "denied",
    });
    expect(edge.calls).toHaveLength(0);
  });
});

describe("retry", () => {
  it("calls again after a transport failure, and each attempt is a step of the run's trace", async () => {
    const tool = await declareTool();
    await withCombos(tool, [[{ name: "retry", config: { attempts: 3, backoff_ms: 0 } }]]);
    let n = 0;
    const edge = fakeFetch(() => {
      n += 1;
      if (n === 1) throw new Error("connection reset");
      return json({ ok: n });
    });
    const ctx = testContext({ fetch: edge.fetch });
    const { value, steps } = await collectRunSteps(ctx, () => dispatchTool(ctx, tool, {}));
    expect(value).toEqual({ ok: true, value: { ok: 2 } });
    expect(edge.calls).toHaveLength(2);
    expect(steps.map((s) => [s.kind, s.name, s.outcome])).toEqual([
      ["tool", `${tool} (attempt 1 of 3)`, "error"],
      ["tool", `${tool} (attempt 2 of 3)`, "ok"],
      ["tool", tool, "ok"],
    ]);
    expect(steps[0].error).toBe("transport: tool endpoint could not be reached");
  });

  it("retries a timeout up to the budget, and never an HTTP status", async () => {
    const slow = await declareTool({ timeout_seconds: 0.05 });
    await withCombos(slow, [[{ name: "retry", config: { attempts: 2, backoff_ms: 0 } }]]);
    const hanging = hangingFetch();
    expect(await dispatchTool(testContext({ fetch: hanging.fetch }), slow, {})).toMatchObject({ ok: false, kind: "timeout" });
    expect(hanging.calls).toHaveLength(2);

    const failing = await declareTool();
    await withCombos(failing, [["retry"]]);
    const edge = fakeFetch(() => json({ error: "down" }, 503));
    expect(await dispatchTool(testContext({ fetch: edge.fetch }), failing, {})).toMatchObject({ ok: false, kind: "http_status" });
    expect(edge.calls).toHaveLength(1);
  });
});

describe("cache", () => {
  it("answers the same call from memory, per execution key, and keeps no failure", async () => {
    const tool = await declareTool();
    await withCombos(tool, [[{ name: "cache", config: { ttl_seconds: 60 } }]]);
    let n = 0;
    const edge = fakeFetch((_req, body) => {
      n += 1;
      return json({ n, echo: JSON.parse(body) });
    });
    const ctx = testContext({ fetch: edge.fetch });
    const a = await mintKey({ scopes: [`tool:${tool}`] });
    const b = await mintKey({ scopes: [`tool:${tool}`] });
    const asA = { asKey: { user_id: a.user_id, fingerprint: a.fingerprint } };
    const asB = { asKey: { user_id: b.user_id, fingerprint: b.fingerprint } };
    const first = await dispatchTool(ctx, tool, { q: "lisbon", unit: "c" }, asA);
    expect(first).toEqual({ ok: true, value: { n: 1, echo: { q: "lisbon", unit: "c" } } });
    expect(await dispatchTool(ctx, tool, { unit: "c", q: "lisbon" }, asA)).toEqual(first);
    expect(edge.calls).toHaveLength(1);
    expect(await dispatchTool(ctx, tool, { q: "porto", unit: "c" }, asA)).toMatchObject({ ok: true, value: { n: 2 } });

    // Another execution key never sees the first one's entry; each key has its own.
    expect(await dispatchTool(ctx, tool, { q: "lisbon", unit: "c" }, asB)).toMatchObject({ value: { n: 3 } });
    expect(await dispatchTool(ctx, tool, { q: "lisbon", unit: "c" }, asA)).toMatchObject({ value: { n: 1 } });
    expect(await dispatchTool(ctx, tool, { q: "lisbon", unit: "c" }, asB)).toMatchObject({ value: { n: 3 } });
    expect(edge.calls).toHaveLength(3);
    // A call for no key at all is never answered from memory, nor kept for the next one.
    expect(await dispatchTool(ctx, tool, { q: "lisbon", unit: "c" })).toMatchObject({ value: { n: 4 } });
    expect(await dispatchTool(ctx, tool, { q: "lisbon", unit: "c" })).toMatchObject({ value: { n: 5 } });

    // A revoked key gets nothing from the cache: authorization comes first.
    await call("DELETE", `/api/auth/api-keys/${a.user_id}`, { key: await admin() });
    expect(await dispatchTool(ctx, tool, { q: "lisbon", unit: "c" }, asA)).toMatchObject({ ok: false, kind: "denied" });

    const flaky = await declareTool();
    await withCombos(flaky, [["cache"]]);
    const down = fakeFetch(() => json({}, 500));
    const dctx = testContext({ fetch: down.fetch });
    const asRoot = { caller: { user_id: "root", fingerprint: "fp" } };
    await dispatchTool(dctx, flaky, {}, asRoot);
    await dispatchTool(dctx, flaky, {}, asRoot);
    expect(down.calls).toHaveLength(2);
  });

  it("scopes entries to the calling key at run-tool, so one admin never gets another's cached result", async () => {
    const tool = await declareTool();
    await withCombos(tool, [[{ name: "cache", config: { ttl_seconds: 60 } }]]);
    let n = 0;
    fakeNetwork(() => json({ n: ++n }));
    const first = await admin();
    const second = (await mintKey({ scopes: ["*"] })).key;
    const run = (key: string) => call("POST", "/api/run-tool", { key, body: { tool_name: tool, arguments: { q: "same" } } });
    expect((await run(first)).body).toEqual({ data: { n: 1 } });
    expect((await run(first)).body).toEqual({ data: { n: 1 } });
    expect((await run(second)).body).toEqual({ data: { n: 2 } });
    expect((await run(second)).body).toEqual({ data: { n: 2 } });
    expect(n).toBe(2);
  });

  it("keys a preset's entries by its version, so a new version is never answered from the old one", async () => {
    const tool = await declareTool();
    const preset = uniq("preset");
    const key = await admin();
    await call("POST", "/api/presets", { key, body: { name: preset, base_tool: tool, fixed_kwargs: { city: "Lisbon" }, extensions: [["cache"]] } });
    const edge = fakeFetch((_req, body) => json({ city: JSON.parse(body).city }));
    const ctx = testContext({ fetch: edge.fetch });
    const asRoot = { caller: { user_id: "root", fingerprint: "fp" } };
    expect(await dispatchTool(ctx, preset, {}, asRoot)).toEqual({ ok: true, value: { city: "Lisbon" } });
    expect(await dispatchTool(ctx, preset, {}, asRoot)).toEqual({ ok: true, value: { city: "Lisbon" } });
    expect(edge.calls).toHaveLength(1);
    await call("POST", `/api/presets/${preset}/versions`, { key, body: { fixed_kwargs: { city: "Porto" } } });
    expect(await dispatchTool(ctx, preset, {}, asRoot)).toEqual({ ok: true, value: { city: "Porto" } });
    expect(edge.calls).toHaveLength(2);
  });
});

describe("presets", () => {
  it("run their version's combos around the base call, after the output_schema check", async () => {
    const tool = await declareTool();
    const preset = uniq("preset");
    const r = await call("POST", "/api/presets", {
      key: await admin(),
      body: {
        name: preset,
        base_tool: tool,
        output_schema: { type: "object", properties: { user: { type: "object" } }, required: ["user"] },
        extensions: [[{ name: "redact", config: { paths: ["user.email"] } }]],
      },
    });
    expect(r.status).toBe(200);
    const ctx = testContext({ fetch: fakeFetch(() => json(profile)).fetch });
    expect(await dispatchTool(ctx, preset, {})).toMatchObject({ ok: true, value: { user: { email: "<redacted>", name: "Ada" } } });
    // The base tool's own combos apply only when the base is dispatched by its own name.
    await withCombos(tool, [[{ name: "max_result_bytes", config: { bytes: 16 } }]]);
    expect(await dispatchTool(ctx, preset, {})).toMatchObject({ ok: true });
    expect(await dispatchTool(ctx, tool, {})).toMatchObject({ ok: false, kind: "tool_error" });
    // A failed output_schema check is the call's result: the transformers see a failure and pass it on.
    const strict = uniq("preset");
    await call("POST", "/api/presets", {
      key: await admin(),
      body: { name: strict, base_tool: tool, output_schema: { type: "string" }, extensions: [[{ name: "redact", config: { paths: ["user"] } }]] },
    });
    expect(await dispatchTool(ctx, strict, {})).toMatchObject({ ok: false, kind: "tool_error", message: expect.stringContaining("output_schema") });
  });

  it("over a built-in are how a built-in gets extensions", async () => {
    const preset = uniq("preset");
    await call("POST", "/api/presets", {
      key: await admin(),
      body: { name: preset, base_tool: "echo", extensions: [[{ name: "max_result_bytes", config: { bytes: 16, on_over: "truncate" } }]] },
    });
    const r = await dispatchTool(testContext(), preset, { message: "a long message that is cut" });
    expect(r).toEqual({ ok: true, value: "a long messag…" }); // 13 bytes and the 3-byte ellipsis
    expect(await dispatchTool(testContext(), "echo", { message: "a long message that is not cut" })).toEqual({
      ok: true,
      value: "a long message that is not cut",
    });
  });
});

describe("the chain's cost", () => {
  it("a declared tool's combos come in the batch that resolves it: one D1 round trip for tool and chain", async () => {
    const tool = await declareTool();
    await withCombos(tool, [[{ name: "redact", config: { paths: ["secret"] } }]]);
    const counter = new D1Counter();
    const ctx = { ...testContext({ fetch: fakeFetch(() => json({ secret: "s", keep: 1 })).fetch }) };
    ctx.db = counter.wrap(ctx.db, "worker");
    // Before, the chain was a second round trip of its own (a `first` on tool_extensions).
    const r = await dispatchTool(ctx, tool, {});
    expect(r).toEqual({ ok: true, value: { secret: "<redacted>", keep: 1 } });
    const reads = counter.calls.filter((c) => c.sql.some((s) => /tool_declarations|tool_extensions/.test(s)));
    expect(reads, counter.describe()).toHaveLength(1);
    expect(reads[0]).toMatchObject({ kind: "batch" });
    expect(reads[0].sql.join(" ")).toMatch(/tool_declarations.*tool_extensions/);
  });
});

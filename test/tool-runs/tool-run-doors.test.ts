/**
 * Background tool runs through the doors (docs/tool-runs.md): submit answers 202
 * {run_id} and the object's alarm runs the tool as the caller's own key; the read door shows status
 * and result or error; restricted callers are confined to their own runs; the listing is recent
 * first, filtered and paged; refusals come before anything is stored.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { answerOnly, fakeNetwork } from "../helpers/network";
import { BASE, admin, call, fetchWithEnv, mintKey, uniq } from "../helpers/http";
import { DENIED_TEXT } from "../../src/tool-runs/record";
import { submitToolRun } from "../../src/tool-runs/submit";
import { endedRun, indexRow } from "./helpers";
import { must } from "../../src/platform/must";

const submit = (key: string, body: unknown) => call("POST", "/api/tool-runs", { key, body });

async function declareHttpTool(title: string, url: string) {
  const r = await call("POST", "/api/tools-config/entries", {
    key: await admin(),
    body: { title, kind: "http", description: "test", url, input_schema: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] } },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
}

describe("POST /api/tool-runs", () => {
  it("answers 202 {run_id}, then the alarm runs the tool and the read door shows the result", async () => {
    const caller = await mintKey({ scopes: ["tools:read", "tool:echo"] });
    const r = await submit(caller.key, { tool_name: "echo", arguments: { message: "hello" } });
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    expect(Object.keys(r.body.data)).toEqual(["run_id"]);
    const run = await endedRun(r.body.data.run_id, caller.key);
    expect(run).toMatchObject({
      run_id: r.body.data.run_id,
      tool_name: "echo",
      arguments: { message: "hello" },
      status: "succeeded",
      result: "hello",
      error: null,
      error_kind: null,
      attempts: 1,
      caller: caller.user_id,
      origin: "api",
      schedule_name: null,
      trace_id: r.body.data.run_id,
    });
    expect(Date.parse(run.expires_at) - Date.parse(run.finished_at)).toBe(604_800_000);
  });

  it("runs a declared HTTP tool through the network edge; a failing endpoint is a failed run with the dispatcher's message", async () => {
    const tool = uniq("bg-http");
    await declareHttpTool(tool, "https://tools.example/ok");
    const key = await admin();
    let answer = 200;
    fakeNetwork(answerOnly({ "POST https://tools.example/ok": (_req, body) => Response.json({ doubled: JSON.parse(body).n * 2 }, { status: answer }) }));
    const ok = await submit(key, { tool_name: tool, arguments: { n: 21 } });
    expect((await endedRun(ok.body.data.run_id)).result).toEqual({ doubled: 42 });
    answer = 500;
    const bad = await endedRun((await submit(key, { tool_name: tool, arguments: { n: 1 } })).body.data.run_id);
    expect(bad).toMatchObject({ status: "failed", error_kind: "http_status", result: null });
    expect(bad.error).toMatch(/500/);
  });

  it("accepts any object for an HTTP tool declared without an input schema (regression: the frozen default schema could not be evaluated)", async () => {
    const tool = uniq("schemaless");
    const r = await call("POST", "/api/tools-config/entries", {
      key: await admin(),
      body: { title: tool, kind: "http", description: "no schema", url: "https://tools.example/any" },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    fakeNetwork(answerOnly({ "POST https://tools.example/any": (_req, body) => Response.json({ got: JSON.parse(body) }) }));
    const ok = await submit(await admin(), { tool_name: tool, arguments: { anything: [1, 2] } });
    expect(ok.status, JSON.stringify(ok.body)).toBe(202);
    expect((await endedRun(ok.body.data.run_id)).result).toEqual({ got: { anything: [1, 2] } });
  });

  it("refuses before storing anything: body 400, run grant 403, unknown tool 404, arguments 400, a key that could not run it 403", async () => {
    const before = await env.DB.prepare("SELECT COUNT(*) AS n FROM tool_runs").first<{ n: number }>();
    const reader = await mintKey({ scopes: ["tools:read"] });
    const echoer = await mintKey({ scopes: ["tools:read", "tool:echo"] });
    const expectStatus = async (key: string, body: unknown, status: number, text?: RegExp) => {
      const r = await submit(key, body);
      expect(r.status, JSON.stringify(r.body)).toBe(status);
      if (text) expect(r.body.error).toMatch(text);
      return r;
    };
    await expectStatus(echoer.key, { tool_name: "echo", arguments: { message: "x" }, extra: 1 }, 400, /extra/);
    await expectStatus(echoer.key, { tool_name: "no such/tool" }, 400, /tool_name/);
    await expectStatus(echoer.key, { tool_name: "echo", arguments: [] }, 400, /arguments/);
    // tools:read reaches the door, but the run grant is per tool.
    await expectStatus(reader.key, { tool_name: "echo", arguments: { message: "x" } }, 403);
    await expectStatus(echoer.key, { tool_name: "set_conversation_mode", arguments: { mode: "agent" } }, 403);
    // Authorization before the lookup: a grant-less caller cannot probe names.
    await expectStatus(echoer.key, { tool_name: uniq("nope"), arguments: {} }, 403);
    await expectStatus(await admin(), { tool_name: uniq("nope"), arguments: {} }, 404);
    const bad = await expectStatus(echoer.key, { tool_name: "echo", arguments: { message: 12345 } }, 400, /arguments: \/message: type/);
    expect(bad.body.error).not.toContain("12345");
    // A condition that needs a request cannot hold when the run starts (no request then): refused now.
    const conditioned = await mintKey({ scopes: ["tools:read", "tool:echo"], condition: '.request.method == "POST"' });
    await expectStatus(conditioned.key, { tool_name: "echo", arguments: { message: "x" } }, 403);
    const after = await env.DB.prepare("SELECT COUNT(*) AS n FROM tool_runs").first<{ n: number }>();
    expect(must(after, "after").n).toBe(must(before, "before").n);
  });

  it("maintenance tools run only for an admin", async () => {
    const writer = await mintKey({ scopes: ["tools:write"] });
    expect((await submit(writer.key, { tool_name: "maintenance.checkpoints_sweep" })).status).toBe(403);
    const r = await submit(await admin(), { tool_name: "maintenance.checkpoints_sweep" });
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    const run = await endedRun(r.body.data.run_id);
    expect(run).toMatchObject({ status: "succeeded", result: { provider: "kv", swept_count: 0, swept_threads: [] } });
    expect(run.result.skipped).toMatch(/kv provider/);
    expect((await submit(await admin(), { tool_name: "maintenance.checkpoints_sweep", arguments: { x: 1 } })).status).toBe(400);
  });

  it("maintenance.prune_expired runs the cron's prune passes now and reports them", async () => {
    const stale = crypto.randomUUID();
    await env.DB.prepare(
      "INSERT INTO tool_runs (run_id, tool_name, caller_user_id, origin, status, created_at, finished_at, expires_at) VALUES (?, 'echo', 'root', 'api', 'succeeded', 1, 2, 3)",
    )
      .bind(stale)
      .run();
    const link = await env.DB.prepare("SELECT COUNT(*) AS n FROM claim_links").first<{ n: number }>();
    // An expired hook trigger link goes too (a live one stays).
    await env.DB.prepare(
      "INSERT INTO hook_trigger_links (name, token_hash, topic, execution_key, execution_key_fingerprint, tool_kwargs, require_api_key, created_by, created_at, expires_at) VALUES (?, ?, 't', 'root', 'f', '{}', 0, 'root', '', ?)",
    )
      .bind("old-link", crypto.randomUUID(), 5)
      .run();
    await env.DB.prepare(
      "INSERT INTO hook_trigger_links (name, token_hash, topic, execution_key, execution_key_fingerprint, tool_kwargs, require_api_key, created_by, created_at, expires_at) VALUES (?, ?, 't', 'root', 'f', '{}', 0, 'root', '', NULL)",
    )
      .bind("kept-link", crypto.randomUUID())
      .run();
    const r = await submit(await admin(), { tool_name: "maintenance.prune_expired" });
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    const run = await endedRun(r.body.data.run_id);
    expect(run.status, JSON.stringify(run)).toBe("succeeded");
    expect(run.result).toMatchObject({
      passes: [
        "failed_records",
        "auth_throttle",
        "claim_links",
        "tool_runs",
        "hook_trigger_links",
        "connector_oauth_starts",
        "state_retention",
        "state_pending_saves",
      ],
      tool_runs_removed: 1,
      trigger_links_removed: 1,
      claim_links_removed: 0,
      connector_starts_removed: 0,
      state_records_expired: 0,
      pending_saves_applied: 0,
    });
    expect(await indexRow(stale)).toBeNull();
    expect((await env.DB.prepare("SELECT name FROM hook_trigger_links").all()).results).toEqual([{ name: "kept-link" }]);
    expect(must(await env.DB.prepare("SELECT COUNT(*) AS n FROM claim_links").first<{ n: number }>(), "the row").n).toBe(must(link, "link").n);
  });

  it("answers 501 tool-runs-not-configured without TOOL_RUNS_STORE_URL", async () => {
    const key = await admin();
    for (const [method, path, body] of [
      ["POST", "/api/tool-runs", { tool_name: "echo", arguments: { message: "x" } }],
      ["GET", "/api/tool-runs", undefined],
      ["GET", `/api/tool-runs/${crypto.randomUUID()}`, undefined],
    ] as const) {
      const res = await fetchWithEnv(
        { ...env, TOOL_RUNS_STORE_URL: "" },
        new Request(`${BASE}${path}`, {
          method,
          headers: { "x-api-key": key, "content-type": "application/json" },
          body: body ? JSON.stringify(body) : undefined,
        }),
      );
      expect(res.status, `${method} ${path}`).toBe(501);
      expect(await res.json()).toEqual({ error: "tool runs store not configured (set TOOL_RUNS_STORE_URL)", code: "tool-runs-not-configured" });
    }
  });
});

describe("GET /api/tool-runs/{run_id}", () => {
  it("404 for an unknown run, 400 for a malformed id", async () => {
    const key = await admin();
    expect((await call("GET", `/api/tool-runs/${crypto.randomUUID()}`, { key })).status).toBe(404);
    const bad = await call("GET", "/api/tool-runs/not-a-uuid", { key });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toMatch(/run_id/);
  });

  it("a restricted caller gets 403 on another identity's run; its own and every unrestricted reader's reads pass", async () => {
    const owner = await mintKey({ scopes: ["tools:write"] });
    const owned = await mintKey({ scopes: ["tools:read", "tool:echo"], owner_user_id: owner.user_id });
    const other = await mintKey({ scopes: ["tools:read", "tool:echo"] });
    const mine = (await submit(owned.key, { tool_name: "echo", arguments: { message: "mine" } })).body.data.run_id;
    const theirs = (await submit(other.key, { tool_name: "echo", arguments: { message: "theirs" } })).body.data.run_id;
    await endedRun(mine);
    await endedRun(theirs);
    expect((await call("GET", `/api/tool-runs/${mine}`, { key: owned.key })).status).toBe(200);
    const refused = await call("GET", `/api/tool-runs/${theirs}`, { key: owned.key });
    expect(refused.status).toBe(403);
    expect(refused.body).toEqual({ error: "Forbidden" });
    // Unrestricted non-admin readers read any run (platform facts: only restricted callers are confined).
    expect((await call("GET", `/api/tool-runs/${mine}`, { key: other.key })).status).toBe(200);
    // The owned key's listing holds only its own runs.
    const listed = await call("GET", "/api/tool-runs?tool_name=echo&pageSize=200", { key: owned.key });
    expect(listed.body.data.items.map((i: any) => i.run_id)).toEqual([mine]);
  });

  it("a run denied at start (its key revoked after the submit): admins read the reason, others a fixed text", async () => {
    const caller = await mintKey({ scopes: ["tools:read", "tool:echo"] });
    const reader = await mintKey({ scopes: ["tools:read"] });
    expect((await call("DELETE", `/api/auth/api-keys/${caller.user_id}`, { key: await admin() })).status).toBe(200);
    // What the door stores, submitted after the key went (the door itself would refuse it now).
    const run_id = crypto.randomUUID();
    await submitToolRun(env, {
      run_id,
      tool_name: "echo",
      arguments: { message: "x" },
      caller: { user_id: caller.user_id, fingerprint: caller.fingerprint },
      origin: "api",
      schedule_name: null,
      slot_at: null,
    });
    const asAdmin = await endedRun(run_id);
    expect(asAdmin).toMatchObject({ status: "failed", error_kind: "denied", error: "execution key no longer exists", result: null });
    const asReader = await endedRun(run_id, reader.key);
    expect(asReader.error).toBe(DENIED_TEXT);
    expect(await indexRow(run_id)).toMatchObject({ status: "failed", error_kind: "denied" });
  });
});

describe("GET /api/tool-runs", () => {
  it("lists recent first, filters by tool_name, pages, and reflects each run's end", async () => {
    const key = await admin();
    const tool = uniq("list-tool");
    await declareHttpTool(tool, "https://tools.example/list");
    fakeNetwork(answerOnly({ "POST https://tools.example/list": () => Response.json({ ok: true }) }));
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      ids.push((await submit(key, { tool_name: tool, arguments: { n: i } })).body.data.run_id);
      await endedRun(ids[i]);
    }
    const page1 = await call("GET", `/api/tool-runs?tool_name=${tool}&pageSize=2`, { key });
    expect(page1.status).toBe(200);
    expect(page1.body.data).toMatchObject({ total: 3, page: 1, page_size: 2, next_page: 2, truncated: false });
    const page2 = await call("GET", `/api/tool-runs?tool_name=${tool}&pageSize=2&page=2`, { key });
    const listed = [...page1.body.data.items, ...page2.body.data.items];
    expect(listed.map((i: any) => i.run_id)).toEqual([...ids].reverse());
    expect(listed[0]).toEqual({
      run_id: ids[2],
      tool_name: tool,
      status: "succeeded",
      error_kind: null,
      caller: "root",
      origin: "api",
      schedule_name: null,
      hook_name: null,
      created_at: expect.stringMatching(/Z$/),
      finished_at: expect.stringMatching(/Z$/),
    });
    const row = await indexRow(ids[0]);
    expect(row).not.toHaveProperty("arguments");
    expect(Object.keys(must(row, "row")).sort()).toEqual([
      "caller_user_id",
      "created_at",
      "error_kind",
      "expires_at",
      "finished_at",
      "hook_name",
      "origin",
      "run_id",
      "schedule_name",
      "status",
      "tool_name",
    ]);
    const all = await call("GET", "/api/tool-runs?pageSize=200", { key });
    expect(all.body.data.items.some((i: any) => i.tool_name === "echo")).toBe(true);
    expect((await call("GET", "/api/tool-runs?tool_name=bad/name", { key })).status).toBe(400);
  });
});

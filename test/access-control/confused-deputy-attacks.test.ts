/**
 * The two confused-deputy attacks found by reading the code (docs/security.md, "Confused deputy"),
 * each tried as its attacker would, with the one key it needs:
 *
 * 1. a `presets:write` key with a run grant on one preset re-points that preset (new version,
 *    rollback, rename) at a declared tool it may not run, and runs it;
 * 2. a `hooks:write` / `schedules:write` / `presets:write` / target-config writer with no `states`
 *    grant reads a state's records through `input_injections` and writes them through `updates`.
 *
 * Both must fail when stored, and what was stored with the grant must stop running once the
 * storing key loses it.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { admin, call, mintKey, uniq } from "../helpers/http";
import { declareTool, network } from "../operator/helpers";
import { endedRun } from "../tool-runs/helpers";
import { deliver, registerHook } from "../hooks/helpers";

const tt = (content: string) => ({ content });
const PREFS = { type: "object", properties: { secret: { type: "string" }, last: { type: "string" } } };

/** A declared HTTP tool nobody but the admin may run; `seen` collects what reached it. */
async function secretTool() {
  const host = `secret-${crypto.randomUUID().slice(0, 8)}.example`;
  const title = host.split(".")[0];
  await declareTool(title, `https://${host}/run`);
  const seen: unknown[] = [];
  network({ [host]: (kwargs) => (seen.push(kwargs), { leaked: true }) });
  return { title, seen };
}

async function presetOverEcho(key?: string): Promise<string> {
  const name = uniq("mine").toLowerCase();
  const r = await call("POST", "/api/presets", { key: key ?? (await admin()), body: { name, base_tool: "echo", fixed_kwargs: { message: "harmless" } } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return name;
}

/** Submits a background run of `tool` as `key` and waits for its end. */
async function runAs(key: string, tool: string, args: Record<string, unknown> = {}): Promise<any> {
  const r = await call("POST", "/api/tool-runs", { key, body: { tool_name: tool, arguments: args } });
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  return endedRun(r.body.data.run_id);
}

describe("finding 1: a preset's run grant does not buy its base tool", () => {
  it("a new version naming a tool the writer may not run is refused (403 naming base_tool), nothing stored, and the preset keeps running its base", async () => {
    const secret = await secretTool();
    const name = await presetOverEcho();
    const attacker = await mintKey({ scopes: ["presets", "tools:read", `tool:${name}`] });
    const r = await call("POST", `/api/presets/${name}/versions`, { key: attacker.key, body: { base_tool: secret.title, fixed_kwargs: {} } });
    expect(r.status).toBe(403);
    expect(r.body.error).toMatch(/^base_tool: /);
    expect(r.body.error).not.toContain(secret.title);
    expect((await call("GET", `/api/presets/${name}/versions`, { key: await admin() })).body.data.total).toBe(1);
    const run = await runAs(attacker.key, name);
    expect(run).toMatchObject({ status: "succeeded", result: "harmless" });
    expect(secret.seen).toEqual([]);
  });

  it("rollback to a version standing on a tool the caller may not run is refused, and so is renaming such a preset onto a name the caller may run", async () => {
    const secret = await secretTool();
    const key = await admin();
    const name = uniq("rolled").toLowerCase();
    expect((await call("POST", "/api/presets", { key, body: { name, base_tool: secret.title } })).status).toBe(200);
    expect((await call("POST", `/api/presets/${name}/versions`, { key, body: { base_tool: "echo", fixed_kwargs: { message: "v2" } } })).status).toBe(200);
    const attacker = await mintKey({ scopes: ["presets", "tools:read", `tool:${name}`] });
    const back = await call("POST", `/api/presets/${name}/rollback`, { key: attacker.key, body: { version: 1 } });
    expect(back.status).toBe(403);
    expect(back.body.error).toMatch(/^base_tool: /);
    expect((await call("GET", `/api/presets/${name}`, { key })).body.data.current_version).toBe(2);

    // A preset standing on the secret tool, renamed onto a name the attacker holds a grant for.
    const target = uniq("granted").toLowerCase();
    const thief = await mintKey({ scopes: ["presets", "tools:read", `tool:${target}`] });
    const over = uniq("oversecret").toLowerCase();
    expect((await call("POST", "/api/presets", { key, body: { name: over, base_tool: secret.title } })).status).toBe(200);
    const renamed = await call("POST", `/api/presets/${over}/rename`, { key: thief.key, body: { new_name: target } });
    expect(renamed.status).toBe(403);
    expect((await call("GET", `/api/presets/${target}`, { key })).status).toBe(404);
    expect(secret.seen).toEqual([]);
  });

  it("a preset whose active version's writer lost the base tool's grant refuses to run for everyone (denied), in a background run and in a route's turn", async () => {
    const secret = await secretTool();
    const writer = await mintKey({ scopes: ["presets", `tool:${secret.title}`] });
    const name = uniq("granted").toLowerCase();
    expect((await call("POST", "/api/presets", { key: writer.key, body: { name, base_tool: secret.title } })).status).toBe(200);
    const runner = await mintKey({ scopes: ["tools:read", `tool:${name}`] });
    expect(await runAs(runner.key, name)).toMatchObject({ status: "succeeded" });
    expect(secret.seen).toHaveLength(1);

    // The writer's grant on the base is withdrawn: the preset no longer runs, whoever runs it.
    expect((await call("PUT", `/api/auth/api-keys/${writer.user_id}`, { key: await admin(), body: { scopes: ["presets"] } })).status).toBe(200);
    const denied = await runAs(runner.key, name);
    expect(denied).toMatchObject({ status: "failed", error_kind: "denied" });
    expect(secret.seen).toHaveLength(1);

    const route = uniq("r").toLowerCase();
    expect(
      (
        await call("POST", `/api/conversations/${route}`, {
          key: await admin(),
          body: { door: "api", target_kind: "tool", target_name: name, execution_key: runner.user_id },
        })
      ).status,
    ).toBe(200);
    const sent = await call("POST", `/api/conversations/${route}/messages`, {
      key: await admin(),
      body: { external_user_id: "u", text: "hi", wait_seconds: 10 },
    });
    expect(sent.body.data).toMatchObject({ status: "error" });
    expect(secret.seen).toHaveLength(1);
    // Revoking the writer outright refuses the same way.
    expect((await call("DELETE", `/api/auth/api-keys/${writer.user_id}`, { key: await admin() })).status).toBe(200);
    expect(await runAs(runner.key, name)).toMatchObject({ status: "failed", error_kind: "denied" });
  });

  it("a writer's user_id issued again to a new holder does not revive what the first holder stored, while the new holder's own writes run", async () => {
    const secret = await secretTool();
    const writer = await mintKey({ scopes: ["presets", `tool:${secret.title}`] });
    const name = uniq("orphan").toLowerCase();
    expect((await call("POST", "/api/presets", { key: writer.key, body: { name, base_tool: secret.title } })).status).toBe(200);
    const runner = await mintKey({ scopes: ["tools:read", `tool:${name}`] });
    expect((await call("DELETE", `/api/auth/api-keys/${writer.user_id}`, { key: await admin() })).status).toBe(200);

    // An admin re-issues the id with the very same grants: the first holder's preset stays refused.
    const again = await call("POST", "/api/auth/api-keys", {
      key: await admin(),
      body: { user_id: writer.user_id, scopes: ["presets", `tool:${secret.title}`] },
    });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(await runAs(runner.key, name)).toMatchObject({ status: "failed", error_kind: "denied" });
    expect(secret.seen).toEqual([]);

    // What the new holder stores itself runs.
    const own = await call("POST", `/api/presets/${name}/versions`, { key: again.body.data.api_key, body: { base_tool: secret.title, fixed_kwargs: {} } });
    expect(own.status, JSON.stringify(own.body)).toBe(200);
    expect(await runAs(runner.key, name)).toMatchObject({ status: "succeeded" });
    expect(secret.seen).toHaveLength(1);
  });
});

describe("finding 2: a state binding does not buy the states area", () => {
  async function secretState(): Promise<{ state: string; key: string }> {
    const key = await admin();
    const state = uniq("vault").toLowerCase();
    expect((await call("PUT", `/api/states/${state}`, { key, body: { schema: PREFS, subject_kinds: ["user"] } })).status).toBe(200);
    return { state, key };
  }
  const reading = (state: string) => ({
    states: [{ state, subject_expr: tt(".user"), input_injections: [{ into: "message", jq: tt('.record.secret // "none"') }] }],
  });
  const writing = (state: string) => ({
    states: [{ state, subject_expr: tt(".user"), updates: [{ jq: tt('[{op: "set", path: ["secret"], value: "overwritten"}]') }] }],
  });

  it("a hooks writer with no states grant cannot bind a state on a public topic it can fire: reading (input_injections) or writing (updates) is 403 naming the attach, nothing stored", async () => {
    const { state } = await secretState();
    const attacker = await mintKey({ scopes: ["hooks", "tool:echo"] });
    for (const binding of [reading(state), writing(state)]) {
      const topic = uniq("open").toLowerCase();
      const name = uniq("h").toLowerCase();
      const r = await registerHook({ name, topic, tool: "echo", execution_key: attacker.user_id, expr: "{user: .user}", state_binding: binding }, attacker.key);
      expect(r.status, JSON.stringify(r.body)).toBe(403);
      expect(r.body.error).toMatch(/^state_binding\.states\[0\]: /);
      expect(r.body.error).not.toContain(state);
      expect(await env.DB.prepare("SELECT 1 FROM hooks WHERE name = ?").bind(name).first()).toBeNull();
    }
  });

  it("schedule, preset and target-config writers with no states grant are refused the same way", async () => {
    const { state } = await secretState();
    const sched = await mintKey({ scopes: ["schedules", "tool:echo"] });
    const s = await call("POST", "/api/schedules", {
      key: sched.key,
      body: {
        tool_name: "echo",
        tool_kwargs: { message: "m" },
        schedule_kwargs: { cron: "0 0 1 1 *" },
        execution_key: sched.user_id,
        name: uniq("s").toLowerCase(),
        state_binding: reading(state),
      },
    });
    expect(s.status, JSON.stringify(s.body)).toBe(403);
    const presets = await mintKey({ scopes: ["presets", "tool:echo"] });
    const p = await call("POST", "/api/presets", {
      key: presets.key,
      body: { name: uniq("p").toLowerCase(), base_tool: "echo", state_binding: writing(state) },
    });
    expect(p.status, JSON.stringify(p.body)).toBe(403);
    expect(p.body.error).toMatch(/^state_binding\.states\[0\]: /);
    const conv = await mintKey({ scopes: ["conversations"] });
    const c = await call("PUT", "/api/conversation-configs/tool/echo", {
      key: conv.key,
      body: { target_kind: "tool", target_name: "echo", state_binding: reading(state) },
    });
    expect(c.status, JSON.stringify(c.body)).toBe(403);
    // A reader may read but not write.
    const reader = await mintKey({ scopes: ["presets", "tool:echo", "states:read"] });
    expect(
      (
        await call("POST", "/api/presets/validate", {
          key: reader.key,
          body: { name: uniq("p").toLowerCase(), base_tool: "echo", state_binding: reading(state) },
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await call("POST", "/api/presets/validate", {
          key: reader.key,
          body: { name: uniq("p").toLowerCase(), base_tool: "echo", state_binding: writing(state) },
        })
      ).status,
    ).toBe(403);
  });

  it("a hook's binding whose writer lost the states grant fails its runs denied: the record is neither read into the tool nor written", async () => {
    const { state, key } = await secretState();
    expect((await call("PUT", `/api/states/${state}/records/tool/echo/user/u-1`, { key, body: { secret: "s3cret" } })).status).toBe(200);
    const writer = await mintKey({ scopes: ["hooks", "tool:echo", "states"] });
    const topic = uniq("open").toLowerCase();
    const binding = { states: [{ ...reading(state).states[0], updates: writing(state).states[0].updates }] };
    const reg = await registerHook(
      { name: uniq("h").toLowerCase(), topic, tool: "echo", execution_key: writer.user_id, expr: "{user: .user}", state_binding: binding },
      writer.key,
    );
    expect(reg.status, JSON.stringify(reg.body)).toBe(200);
    expect((await call("PUT", `/api/auth/api-keys/${writer.user_id}`, { key, body: { scopes: ["hooks", "tool:echo"] } })).status).toBe(200);
    const fired = await deliver(topic, JSON.stringify({ user: "u-1" }));
    const run = await endedRun(fired.body.data.fired[0].run_id);
    expect(run).toMatchObject({ status: "failed", error_kind: "denied", result: null });
    const record = await call("GET", `/api/states/${state}/records/tool/echo/user/u-1`, { key });
    expect(record.body.data.data).toEqual({ secret: "s3cret" });
  });

  it("a target config's binding whose writer lost the states grant makes the turn's error outcome, reading and writing nothing", async () => {
    const { state, key } = await secretState();
    const tool = uniq("t").toLowerCase();
    const writer = await mintKey({ scopes: ["conversations", "states", "presets", "tool:echo"] });
    expect((await call("POST", "/api/presets", { key: writer.key, body: { name: tool, base_tool: "echo" } })).status).toBe(200);
    const cfg = await call("PUT", `/api/conversation-configs/tool/${tool}`, {
      key: writer.key,
      body: { target_kind: "tool", target_name: tool, state_binding: { states: [{ ...writing(state).states[0], subject_expr: tt('"u-2"') }] } },
    });
    expect(cfg.status, JSON.stringify(cfg.body)).toBe(200);
    const runner = await mintKey({ scopes: [`tool:${tool}`] });
    const route = uniq("r").toLowerCase();
    expect(
      (await call("POST", `/api/conversations/${route}`, { key, body: { door: "api", target_kind: "tool", target_name: tool, execution_key: runner.user_id } }))
        .status,
    ).toBe(200);
    const ok = await call("POST", `/api/conversations/${route}/messages`, { key, body: { external_user_id: "u-2", text: "hi", wait_seconds: 10 } });
    expect(ok.body.data, JSON.stringify(ok.body)).toMatchObject({ status: "answered" });
    expect((await call("GET", `/api/states/${state}/records/tool/${tool}/user/u-2`, { key })).body.data.data).toEqual({ secret: "overwritten" });

    expect((await call("PUT", `/api/auth/api-keys/${writer.user_id}`, { key, body: { scopes: ["conversations", "presets", "tool:echo"] } })).status).toBe(200);
    expect((await call("PUT", `/api/states/${state}/records/tool/${tool}/user/u-2`, { key, body: { secret: "kept" } })).status).toBe(200);
    const denied = await call("POST", `/api/conversations/${route}/messages`, { key, body: { external_user_id: "u-2", text: "again", wait_seconds: 10 } });
    expect(denied.body.data).toMatchObject({ status: "error" });
    expect((await call("GET", `/api/states/${state}/records/tool/${tool}/user/u-2`, { key })).body.data.data).toEqual({ secret: "kept" });
  });
});

/** Preset referees, validate and rename (docs/targets.md "Referees, validate, rename"). */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { renameStatements } from "../../../src/targets/presets/rename";
import { createRoute } from "../../helpers/bridge";
import { admin, call, mintKey, uniq } from "../../helpers/http";
import { must } from "../../../src/platform/must";

async function newPreset(extra: Record<string, unknown> = {}): Promise<string> {
  const name = uniq("preset");
  const r = await call("POST", "/api/presets", { key: await admin(), body: { name, base_tool: "echo", fixed_kwargs: { message: "hi" }, ...extra } });
  if (r.status !== 200) throw new Error(`create failed ${r.status} ${JSON.stringify(r.body)}`);
  return name;
}

/** A key that may run `tool`, to bind routes, hooks and schedules to. */
const runner = (tool: string) => mintKey({ scopes: [`tool:${tool}`] });

async function routeTo(preset: string): Promise<string> {
  const k = await runner(preset);
  return (await createRoute({ door: "api", target_kind: "tool", target_name: preset, execution_key: k.user_id })).name;
}

async function hookOn(preset: string): Promise<string> {
  const k = await runner(preset);
  const name = uniq("hook").toLowerCase();
  const r = await call("POST", "/api/hooks", {
    key: await admin(),
    body: { name, topic: uniq("topic").toLowerCase(), tool: preset, execution_key: k.user_id },
  });
  if (r.status !== 200) throw new Error(`hook failed ${r.status} ${JSON.stringify(r.body)}`);
  return name;
}

async function scheduleOf(preset: string): Promise<string> {
  const k = await runner(preset);
  const name = uniq("sched").toLowerCase().replace(/-/g, "_");
  const r = await call("POST", "/api/schedules", {
    key: await admin(),
    body: { name, tool_name: preset, tool_kwargs: {}, schedule_kwargs: { cron: "0 0 1 1 *" }, execution_key: k.user_id },
  });
  if (r.status !== 200) throw new Error(`schedule failed ${r.status} ${JSON.stringify(r.body)}`);
  return name;
}

async function llmAgentOffering(tools: string[]): Promise<string> {
  const title = uniq("agent");
  const r = await call("POST", "/api/agents-config/entries", {
    key: await admin(),
    body: { title, kind: "llm", config: { base_url: "https://llm.example/v1", model: "m", tool_names: tools } },
  });
  if (r.status !== 200) throw new Error(`agent failed ${r.status} ${JSON.stringify(r.body)}`);
  return title;
}

const referees = async (name: string, key?: string) => call("GET", `/api/presets/${name}/referees`, { key: key ?? (await admin()) });
const rename = async (name: string, body: unknown, key?: string) => call("POST", `/api/presets/${name}/rename`, { key: key ?? (await admin()), body });

describe("GET /api/presets/{name}/referees", () => {
  it("lists routes, the conversation config, hooks, schedules, llm agents and presets standing on it", async () => {
    const preset = await newPreset();
    expect((await referees(preset)).body.data).toEqual({ name: preset, referees: [], total: 0 });
    const route = await routeTo(preset);
    const cfg = await call("PUT", `/api/conversation-configs/tool/${preset}`, {
      key: await admin(),
      body: { target_kind: "tool", target_name: preset, multichannel: true },
    });
    expect(cfg.status).toBe(200);
    const hook = await hookOn(preset);
    const schedule = await scheduleOf(preset);
    const agent = await llmAgentOffering(["echo", preset]);
    const r = await referees(preset);
    expect(r.status).toBe(200);
    expect(r.body.data.referees).toEqual([
      { kind: "route", name: route, movable: true },
      { kind: "conversation_config", name: preset, movable: true },
      { kind: "hook", name: hook, movable: true },
      { kind: "schedule", name: schedule, movable: false },
      { kind: "agent", name: agent, movable: true },
    ]);
    expect(r.body.data.total).toBe(5);
  });

  it("lists a preset whose active version stands on the name (a tool removed, a preset created in its place)", async () => {
    const key = await admin();
    const tool = uniq("tool");
    await call("POST", "/api/tools-config/entries", { key, body: { title: tool, kind: "http", url: "https://tools.example/" } });
    const onTool = await newPreset({ base_tool: tool, fixed_kwargs: {} });
    await call("DELETE", `/api/tools-config/entries/${tool}`, { key });
    const r = await call("POST", "/api/presets", { key, body: { name: tool, base_tool: "echo" } });
    expect(r.status).toBe(200);
    expect((await referees(tool)).body.data.referees).toEqual([{ kind: "preset", name: onTool, movable: false }]);
  });

  it("unknown preset 404; needs presets:read", async () => {
    expect((await referees(uniq("ghost"))).status).toBe(404);
    const preset = await newPreset();
    expect((await referees(preset, (await mintKey({ scopes: ["presets:read"] })).key)).status).toBe(200);
    expect((await referees(preset, (await mintKey({ scopes: ["tools"] })).key)).status).toBe(403);
  });
});

describe("POST /api/presets/validate", () => {
  it("answers the body a create would store, and stores nothing", async () => {
    const name = uniq("preset");
    const r = await call("POST", "/api/presets/validate", {
      key: await admin(),
      body: { name, base_tool: "echo", fixed_kwargs: { message: "m" }, extensions: [["retry"]] },
    });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({
      valid: true,
      name,
      kind: "tool_preset",
      body: {
        base_tool: "echo",
        description: "",
        fixed_kwargs: { message: "m" },
        input_schema: null,
        output_schema: null,
        state_binding: null,
        extensions: [["retry"]],
      },
    });
    expect((await call("GET", `/api/presets/${name}`, { key: await admin() })).status).toBe(404);
  });

  it("refuses what create refuses, with the same statuses", async () => {
    const key = await admin();
    const taken = await newPreset();
    const v = (body: Record<string, unknown>) => call("POST", "/api/presets/validate", { key, body });
    expect((await v({ name: taken, base_tool: "echo" })).status).toBe(409);
    expect((await v({ name: "echo", base_tool: "echo" })).status).toBe(409);
    expect((await v({ name: uniq("p"), base_tool: uniq("ghost") })).status).toBe(404);
    expect((await v({ name: uniq("p"), base_tool: taken })).status).toBe(400);
    expect((await v({ name: uniq("p"), base_tool: "echo", surprise: 1 })).status).toBe(400);
    expect((await v({ name: uniq("p"), base_tool: "echo", extensions: [["nope"]] })).status).toBe(400);
    const agent = await llmAgentOffering([]);
    const agentName = await v({ name: agent, base_tool: "echo" });
    expect(agentName.status).toBe(400);
    expect(agentName.body.error).toContain("agent");
    // A state binding needs the states store, as at create.
    const bound = await v({ name: uniq("p"), base_tool: "echo", state_binding: { states: [{ state: "s" }] } });
    expect(
      (await call("POST", "/api/presets", { key, body: { name: uniq("p"), base_tool: "echo", state_binding: { states: [{ state: "s" }] } } })).status,
    ).toBe(bound.status);
    expect(bound.status).toBeGreaterThanOrEqual(400);
  });

  it("needs presets:write", async () => {
    const reader = await mintKey({ scopes: ["presets:read"] });
    expect((await call("POST", "/api/presets/validate", { key: reader.key, body: { name: uniq("p"), base_tool: "echo" } })).status).toBe(403);
  });
});

describe("POST /api/presets/{name}/rename", () => {
  it("moves an unreferenced preset with every version, its tags and its tool metadata", async () => {
    const key = await admin();
    const from = await newPreset();
    await call("POST", `/api/presets/${from}/versions`, { key, body: { fixed_kwargs: { message: "v2" } } });
    await call("PUT", `/api/presets/${from}/versions/1/tags`, { key, body: { tags: ["stable"] } });
    await env.DB.prepare("INSERT INTO tool_meta_tools (tool_name, tags, badges, hidden, folder_id, updated_at) VALUES (?, '[\"x\"]', '[]', NULL, NULL, 't')")
      .bind(from)
      .run();
    const to = uniq("renamed");
    const r = await rename(from, { new_name: to });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({
      renamed_from: from,
      moved: [],
      preset: { name: to, current_version: 2, latest_version: 2, fixed_kwargs: { message: "v2" } },
    });
    expect((await call("GET", `/api/presets/${from}`, { key })).status).toBe(404);
    const versions = await call("GET", `/api/presets/${to}/versions`, { key });
    expect(versions.body.data.items.map((v: any) => [v.version, v.tags])).toEqual([
      [1, ["stable"]],
      [2, []],
    ]);
    const meta = await env.DB.prepare("SELECT tool_name FROM tool_meta_tools WHERE tool_name IN (?, ?)").bind(from, to).all<{ tool_name: string }>();
    expect(meta.results.map((m) => m.tool_name)).toEqual([to]);
    const run = await call("POST", "/api/run-tool", { key, body: { tool_name: to, arguments: {} } });
    expect(run.body).toEqual({ data: "v2" });
  });

  it("is refused while referenced (409 naming the references), and nothing moves", async () => {
    const from = await newPreset();
    const route = await routeTo(from);
    const r = await rename(from, { new_name: uniq("renamed") });
    expect(r.status).toBe(409);
    expect(r.body.code).toBe("preset-referenced");
    expect(r.body.error).toContain(`route '${route}'`);
    expect(r.body.error).toContain("move_references");
    expect(r.body.referees).toEqual([{ kind: "route", name: route, movable: true }]);
    expect((await call("GET", `/api/presets/${from}`, { key: await admin() })).status).toBe(200);
  });

  it("with move_references rewrites routes, the config, hooks and agents' tool_names in one batch", async () => {
    const key = await admin();
    const from = await newPreset();
    const route = await routeTo(from);
    await call("PUT", `/api/conversation-configs/tool/${from}`, { key, body: { target_kind: "tool", target_name: from, multichannel: true } });
    const hook = await hookOn(from);
    const agent = await llmAgentOffering(["echo", from]);
    const slug = uniq("app").toLowerCase();
    await env.DB.prepare("INSERT INTO sub_mcp_apps (slug, tools, transport, created_at, updated_at) VALUES (?, ?, 'http', 't', 't')")
      .bind(slug, JSON.stringify([from, "echo"]))
      .run();
    const to = uniq("renamed");
    const r = await rename(from, { new_name: to, move_references: true });
    expect(r.status).toBe(200);
    expect(r.body.data.moved.map((m: any) => m.kind)).toEqual(["route", "conversation_config", "hook", "agent", "sub_mcp"]);
    expect((await referees(to)).body.data.referees.map((m: any) => [m.kind, m.name])).toEqual([
      ["route", route],
      ["conversation_config", to],
      ["hook", hook],
      ["agent", agent],
      ["sub_mcp", slug],
    ]);
    const app = await env.DB.prepare("SELECT tools FROM sub_mcp_apps WHERE slug = ?").bind(slug).first<{ tools: string }>();
    expect(JSON.parse(must(app, "app").tools)).toEqual([to, "echo"]);
    const routeRow = await env.DB.prepare("SELECT target_name FROM routes WHERE route_name = ?").bind(route).first<{ target_name: string }>();
    expect(must(routeRow, "routeRow").target_name).toBe(to);
    const cfg = await call("GET", `/api/conversation-configs/tool/${to}`, { key });
    expect(cfg.body.data).toMatchObject({ target_kind: "tool", target_name: to, multichannel: true });
    const hookView = await call("GET", "/api/hooks", { key });
    expect(hookView.body.data.items.find((h: any) => h.name === hook).tool).toBe(to);
    const agentView = await env.DB.prepare("SELECT config FROM agent_declarations WHERE title = ?").bind(agent).first<{ config: string }>();
    expect(JSON.parse(must(agentView, "agentView").config).tool_names).toEqual(["echo", to]);
    expect((await referees(from)).status).toBe(404);
  });

  it("runs as one batch whose guard fails it whole when a reference appeared after the checks", async () => {
    const from = await newPreset();
    const to = uniq("renamed");
    // The door checked "no references" (move: false); then a route appeared before the batch ran.
    const statements = renameStatements(env.DB, { from, to, move: false, mayMove: new Set(), storedBy: "root" }, "t");
    await routeTo(from);
    await expect(env.DB.batch(statements)).rejects.toThrow(/CHECK/);
    expect((await call("GET", `/api/presets/${from}`, { key: await admin() })).status).toBe(200);
    expect((await call("GET", `/api/presets/${to}`, { key: await admin() })).status).toBe(404);
    // With move_references, a kind the caller may not rewrite fails it the same way.
    const hooked = await newPreset();
    const guarded = renameStatements(env.DB, { from: hooked, to, move: true, mayMove: new Set(["route"]), storedBy: "root" }, "t");
    await hookOn(hooked);
    await expect(env.DB.batch(guarded)).rejects.toThrow(/CHECK/);
    expect((await call("GET", `/api/presets/${hooked}`, { key: await admin() })).status).toBe(200);
  });

  it("refuses references that cannot move (schedules, presets standing on it), naming them", async () => {
    const from = await newPreset();
    const schedule = await scheduleOf(from);
    await routeTo(from);
    const r = await rename(from, { new_name: uniq("renamed"), move_references: true });
    expect(r.status).toBe(409);
    expect(r.body.error).toContain(`schedule '${schedule}'`);
    expect(r.body.error).not.toContain("route");
    expect(r.body.referees).toEqual([{ kind: "schedule", name: schedule, movable: false }]);
  });

  it("needs write access to every area it rewrites (403), and presets:write to rename at all", async () => {
    const from = await newPreset();
    await routeTo(from);
    await hookOn(from);
    // Each may run the preset's base (echo): the renamed preset runs bounded by the renamer (docs/security.md).
    const presetsOnly = await mintKey({ scopes: ["presets", "tool:echo"] });
    const r = await rename(from, { new_name: uniq("renamed"), move_references: true }, presetsOnly.key);
    expect(r.status).toBe(403);
    expect(r.body.error).toBe("moving the references needs conversations:write and hooks:write");
    const withConv = await mintKey({ scopes: ["presets", "conversations", "hooks:read", "tool:echo"] });
    expect((await rename(from, { new_name: uniq("renamed"), move_references: true }, withConv.key)).body.error).toBe("moving the references needs hooks:write");
    const both = await mintKey({ scopes: ["presets", "conversations", "hooks", "tool:echo"] });
    expect((await rename(from, { new_name: uniq("renamed"), move_references: true }, both.key)).status).toBe(200);
    const agentRef = await newPreset();
    await llmAgentOffering([agentRef]);
    expect((await rename(agentRef, { new_name: uniq("renamed"), move_references: true }, both.key)).body.error).toContain("admin");
    const reader = await mintKey({ scopes: ["presets:read"] });
    expect((await rename(await newPreset(), { new_name: uniq("renamed") }, reader.key)).status).toBe(403);
  });

  it("refuses bad new names: same 400, a tool's or preset's 409, an agent's 400; unknown preset 404", async () => {
    const key = await admin();
    const from = await newPreset();
    const other = await newPreset();
    const tool = uniq("tool");
    await call("POST", "/api/tools-config/entries", { key, body: { title: tool, kind: "http", url: "https://tools.example/" } });
    expect((await rename(from, { new_name: from })).status).toBe(400);
    expect((await rename(from, { new_name: other })).status).toBe(409);
    expect((await rename(from, { new_name: "echo" })).status).toBe(409);
    expect((await rename(from, { new_name: tool })).status).toBe(409);
    expect((await rename(from, { new_name: await llmAgentOffering([]) })).status).toBe(400);
    expect((await rename(from, { new_name: "bad name" })).status).toBe(400);
    expect((await rename(from, { new_name: uniq("x"), surprise: true })).status).toBe(400);
    expect((await rename(uniq("ghost"), { new_name: uniq("x") })).status).toBe(404);
    expect((await call("GET", `/api/presets/${from}`, { key })).status).toBe(200);
  });

  it("refuses a preset an installed plugin owns", async () => {
    const from = await newPreset();
    await env.DB.prepare("INSERT INTO marketplace_owned (kind, name, ref) VALUES ('preset', ?, 'acme/weather')").bind(from).run();
    const r = await rename(from, { new_name: uniq("renamed") });
    expect(r.status).toBe(409);
    expect(r.body.error).toContain("acme/weather");
  });
});

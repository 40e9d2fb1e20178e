/**
 * The confused-deputy suite (docs/security.md, "Confused deputy"), generated from the route table
 * like the authorization matrix: whatever a key stores that later runs under another identity or
 * another key's grants is bounded by the storing key's own grants, checked when stored and again
 * when it runs.
 *
 * 1. Every door declaring `stores` (src/platform/http/route.ts `StoredReference`) is listed, with the figure.
 * 2. Every body field that looks like a reference (by name and shape from the door's JSON Schema:
 *    a tool name, a tool list, a state binding, an execution key, a URL) must be declared by the
 *    door, or be listed below as not stored with the reason; so a new door is covered the moment
 *    it exists.
 * 3. Each declared (door, kind) has a fixture, keyed by door and kind (the suite fails for a
 *    declaration without one), that tries:
 *    (c) a writer lacking the grant the reference needs stores it: refused (4xx), nothing stored;
 *    (d) a writer holding it stores it, the grant is withdrawn (narrowed or revoked), and the
 *        stored thing is run: refused.
 *    For URLs the store-time rule is the outbound address guard (a private host is refused while
 *    OUTBOUND_ALLOW_PRIVATE_HOSTS is off) and the run-time rule is the guard before each send: a
 *    URL stored while the setting was on is refused once it is off.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it, vi } from "vitest";
import type { StoredReference } from "../../src/platform/http/route";
import { fakeNetwork, type NetCall } from "../helpers/network";
import { fetchWithEnv } from "../helpers/http";
import { scheduleObject } from "../tool-runs/helpers";
import { BASE, type JsonSchema, type RouteSpec, bootstrapAdmin, callJson, dispatch, doors, jsonSchemaOf, label } from "./doors";
import { must } from "../../src/platform/must";

type Kind = StoredReference["kind"];
const DOORS = doors();
const STORING = DOORS.filter((d) => d.stores && d.stores.length > 0);
const DECLARED = STORING.flatMap((d) => must(d.stores, "d.stores").map((s) => ({ door: label(d), ...s })));

// ---------------------------------------------------------------------------------------------
// Detection: which body fields look like a stored reference.

const TOOL_NAMES = new Set(["tool", "tool_name", "base_tool", "target_name"]);
const TOOL_LISTS = new Set(["tools", "tool_names"]);
const KEY_NAMES = new Set(["execution_key", "as_user_id"]);
const isUrlName = (n: string) => n === "url" || n.endsWith("_url");

function types(s: JsonSchema): string[] {
  const own = Array.isArray(s.type) ? (s.type as string[]) : typeof s.type === "string" ? [s.type as string] : [];
  const alts = ["anyOf", "oneOf"].flatMap((k) => (Array.isArray(s[k]) ? (s[k] as JsonSchema[]).flatMap(types) : []));
  return [...own, ...alts];
}

function alternatives(s: JsonSchema): JsonSchema[] {
  return [s, ...["anyOf", "oneOf", "allOf"].flatMap((k) => (Array.isArray(s[k]) ? (s[k] as JsonSchema[]).flatMap(alternatives) : []))];
}

/** The fields of `schema` that look like references, as `at` paths (`a.b`, `list[]`). */
export function referenceFields(schema: JsonSchema | null): Array<{ at: string; kind: Kind }> {
  const out = new Map<string, Kind>();
  const walk = (s: JsonSchema, prefix: string, depth: number) => {
    if (depth > 12) return;
    for (const alt of alternatives(s)) {
      const props = (alt.properties ?? {}) as Record<string, JsonSchema>;
      for (const [name, sub] of Object.entries(props)) {
        const at = `${prefix}${name}`;
        const t = types(sub);
        const items = alternatives(sub).find((x) => x.items)?.items as JsonSchema | undefined;
        if (TOOL_NAMES.has(name) && t.includes("string")) out.set(at, "tool");
        else if (TOOL_LISTS.has(name) && items && types(items).includes("string")) out.set(`${at}[]`, "tool");
        else if (name === "state_binding") out.set(at, "state");
        else if (KEY_NAMES.has(name) && t.includes("string")) out.set(at, "key");
        else if (isUrlName(name) && t.includes("string")) out.set(at, "url");
        walk(sub, `${at}.`, depth + 1);
        if (items) walk(items, `${at}[].`, depth + 1);
      }
    }
  };
  if (schema) walk(schema, "", 0);
  return [...out].map(([at, kind]) => ({ at, kind }));
}

/** Is the detected field covered by one of the door's declarations? */
function covered(door: RouteSpec, f: { at: string; kind: Kind }): boolean {
  return (door.stores ?? []).some((s) => s.kind === f.kind && (s.at === f.at || s.at.startsWith(`${f.at}.`) || s.at.startsWith(`${f.at}[]`)));
}

/** Media and option URLs: handed to the channel provider (which fetches them), never sent to by the service. */
const MEDIA_URL = /(^|\.)(attachments\[\]|media\[\]|header_media|header|options\[\]|rows\[\])\.url$/;

/** Fields that look like references but store nothing that runs under another key, with the reason. */
const NOT_STORED: Record<string, Record<string, string>> = {
  "POST /api/run-tool": { tool_name: "runs now, as the caller, under its own grants; stores nothing" },
  "POST /api/tool-runs": { tool_name: "the run executes as the caller's own key, re-checked live when it starts" },
  "POST /api/presets/validate": {
    base_tool: "a dry run of POST /api/presets (the same checks, the grant checks included); stores nothing",
    state_binding: "a dry run of POST /api/presets; stores nothing",
  },
  "PUT /api/conversation-configs/{target_kind}/{target_name}": { target_name: "names the target the config belongs to; a config runs nothing by itself" },
  "POST /api/states/{name}/records/{target_kind}/{target_name}/{kind}/{key}/fold": {
    "into.target_name": "names a record's subject; the door acts now under the caller's own states grant",
  },
  "POST /api/agents-config/entries": {
    "config.tool_names[]": "admin-only; an agent's every tool call is authorized as the key that runs the agent, so tool_names grants nothing",
  },
  "POST /api/manifest/replace": {
    "agents[].config.tool_names[]": "admin-only; an agent's every tool call is authorized as the key that runs the agent",
  },
  "POST /api/api-tools": { openapi_url: "fetched once while storing, through the address guard; not stored" },
  "POST /api/auth/scopes": { url: "a path pattern of this service's own doors (a custom scope), never an address the service sends to" },
};
/** Whole doors whose body restores other doors' rows (each checked as its own door checks it). */
const NOT_STORED_DOORS: Record<string, string> = {
  "POST /api/backup/import":
    "admin-only restore: each section checks its rows as its door does (bindings, pass-role, the address guard), the importing admin their writer",
};

// ---------------------------------------------------------------------------------------------
// Shared helpers of the fixtures.

let ADMIN = "";
let n = 0;
const uniq = (p: string) => `${p}-${Date.now().toString(36)}-${++n}`.toLowerCase();
const ALLOW_PRIVATE = () => ({ ...env, OUTBOUND_ALLOW_PRIVATE_HOSTS: "true" });
const LOOPBACK = (p = "x") => `https://127.0.0.1:9/${p}`;

async function call(method: string, path: string, key: string | null, body?: unknown) {
  return callJson(method, path, key, body);
}

/** Calls the Worker with private hosts allowed (a URL stored then is refused once they are not). */
async function callAllowingPrivate(method: string, path: string, body: unknown) {
  const res = await fetchWithEnv(
    ALLOW_PRIVATE(),
    new Request(`${BASE}${path}`, { method, headers: { "x-api-key": ADMIN, "content-type": "application/json" }, body: JSON.stringify(body) }),
  );
  return { status: res.status, json: (await res.json().catch(() => null)) as any };
}

async function mint(scopes: string[]): Promise<{ user_id: string; key: string }> {
  const user_id = uniq("cd");
  const r = await call("POST", "/api/auth/api-keys", ADMIN, { user_id, scopes });
  if (r.status !== 200) throw new Error(`mint failed: ${r.status} ${r.text}`);
  return { user_id, key: r.json.data.api_key };
}
const narrow = async (userId: string, scopes: string[]) => expect((await call("PUT", `/api/auth/api-keys/${userId}`, ADMIN, { scopes })).status).toBe(200);
const revoke = async (userId: string) => expect((await call("DELETE", `/api/auth/api-keys/${userId}`, ADMIN)).status).toBe(200);

/** The fake network of one fixture: declared tools answer a string; everything else is refused loudly. */
function network(): { calls: NetCall[]; to: (host: string) => NetCall[] } {
  const calls = fakeNetwork(async (req) => {
    const host = new URL(req.url).host;
    if (host.startsWith("cd-tool-")) return Response.json("done");
    if (host === "callbacks.example") return new Response(null, { status: 204 });
    return new Response("unexpected host", { status: 599 });
  });
  return { calls, to: (host) => calls.filter((c) => new URL(c.url).host === host) };
}

/** A declared HTTP tool only the admin may run. */
async function tool(): Promise<{ name: string; host: string }> {
  const name = uniq("cd-tool");
  const host = `${name}.example`;
  const r = await call("POST", "/api/tools-config/entries", ADMIN, { title: name, kind: "http", description: "deputy suite", url: `https://${host}/run` });
  expect(r.status, r.text).toBe(200);
  return { name, host };
}

async function presetOver(base: string, key = ADMIN, extra: Record<string, unknown> = {}): Promise<string> {
  const name = uniq("cdp");
  const r = await call("POST", "/api/presets", key, { name, base_tool: base, ...extra });
  expect(r.status, r.text).toBe(200);
  return name;
}

async function waitRun(runId: string): Promise<any> {
  for (let i = 0; i < 100; i++) {
    const r = await call("GET", `/api/tool-runs/${runId}`, ADMIN);
    if (r.status === 200 && (r.json.data.status === "succeeded" || r.json.data.status === "failed")) return r.json.data;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error(`run ${runId} did not end`);
}

/** A background run of `name` as `key` (tools:read plus a run grant), to its end. */
async function runAs(key: string, name: string, args: Record<string, unknown> = {}): Promise<any> {
  const r = await call("POST", "/api/tool-runs", key, { tool_name: name, arguments: args });
  expect(r.status, r.text).toBe(202);
  return waitRun(r.json.data.run_id);
}

const DENIED = { status: "failed", error_kind: "denied" };

async function state(): Promise<string> {
  const name = uniq("cds");
  const r = await call("PUT", `/api/states/${name}`, ADMIN, { schema: { type: "object", properties: { v: { type: "string" } } }, subject_kinds: ["user"] });
  expect(r.status, r.text).toBe(200);
  return name;
}
/** A binding that reads the subject `u` of `s` into the input and writes `v` back. */
const binding = (s: string) => ({
  states: [
    {
      state: s,
      subject_expr: { content: '"u"' },
      input_injections: [{ into: "seen", jq: { content: ".record" } }],
      updates: [{ jq: { content: '[{op: "set", path: ["v"], value: "written"}]' } }],
    },
  ],
});
const recordOf = async (s: string, target: string, kind = "tool") =>
  (await call("GET", `/api/states/${s}/records/${kind}/${target}/user/u`, ADMIN)).json?.data?.data ?? null;

async function routeTo(target: string, executionKey: string, key = ADMIN, extra: Record<string, unknown> = {}): Promise<string> {
  const name = uniq("cdr");
  const r = await call("POST", `/api/conversations/${name}`, key, {
    door: "api",
    target_kind: "tool",
    target_name: target,
    execution_key: executionKey,
    ...extra,
  });
  expect(r.status, r.text).toBe(200);
  return name;
}
/** One turn on `route`, waited for: the answer's status (answered, error, …). */
async function turn(route: string): Promise<string> {
  const r = await call("POST", `/api/conversations/${route}/messages`, ADMIN, { external_user_id: "u", text: "hi", wait_seconds: 10 });
  expect(r.status, r.text).toBe(200);
  return r.json.data.status;
}

/** (d) for a state binding that runs in a route's turn: it ran while granted; withdrawn, the turn fails and the record is untouched. */
async function bindingTurnWithdrawn(target: string, s: string, writer: string, narrowed: string[]): Promise<void> {
  const runner = await mint([`tool:${target}`]);
  const route = await routeTo(target, runner.user_id);
  expect(await turn(route)).toBe("answered");
  expect(await recordOf(s, target)).toEqual({ v: "written" });
  await call("PUT", `/api/states/${s}/records/tool/${target}/user/u`, ADMIN, { v: "kept" });
  await narrow(writer, narrowed);
  expect(await turn(route)).toBe("error");
  expect(await recordOf(s, target)).toEqual({ v: "kept" });
}

async function hookOn(topic: string, toolName: string, executionKey: string, key: string, extra: Record<string, unknown> = {}) {
  return call("POST", "/api/hooks", key, { name: uniq("cdh"), topic, tool: toolName, execution_key: executionKey, ...extra });
}
async function fire(path: string): Promise<any[]> {
  const r = await callJson("POST", path, null, {});
  expect(r.status, r.text).toBe(202);
  return Promise.all(r.json.data.fired.map((f: { run_id: string }) => waitRun(f.run_id)));
}

/** A custom URL scope granting exactly `path` (to reach a door without the area's tag grant). */
async function scopeFor(path: string): Promise<string> {
  const id = uniq("cdscope").replace(/-/g, ".");
  const r = await call("POST", "/api/auth/scopes", ADMIN, { scope_id: id, url: path });
  expect(r.status, r.text).toBe(200);
  return id;
}
async function mcpToolsList(slug: string, key: string): Promise<string[]> {
  const r = await callJsonWithAccept(`/api/sub-mcp/${slug}/mcp`, key, { jsonrpc: "2.0", id: 1, method: "tools/list", params: {} });
  return (r.json?.result?.tools ?? []).map((t: { name: string }) => t.name);
}
async function callJsonWithAccept(path: string, key: string, body: unknown) {
  return dispatch("POST", path, {
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "x-api-key": key },
    body: JSON.stringify(body),
  });
}

/** (c) and (d) of a URL stored by `door` (as the admin: the URL doors but the route's are admin-only). */
function urlFixture(
  store: (url: string, via: "plain" | "allowing") => Promise<{ status: number; json: any }>,
  field: string,
  stored: () => Promise<boolean>,
  run: () => Promise<string>,
): Fixture {
  return {
    async refused() {
      const r = await store(LOOPBACK(), "plain");
      expect(r.status).toBe(400);
      expect(JSON.stringify(r.json)).toContain(field);
      expect(JSON.stringify(r.json)).not.toContain("127.0.0.1");
      expect(await stored()).toBe(false);
    },
    async withdrawn() {
      const net = network();
      const r = await store(LOOPBACK(), "allowing");
      expect(r.status, JSON.stringify(r.json)).toBeLessThan(300);
      const before = net.to("127.0.0.1:9").length;
      expect(await run()).toContain("outbound address guard");
      expect(net.to("127.0.0.1:9").length).toBe(before);
    },
  };
}

/** Stores through the door, plainly (as the admin) or with private hosts allowed. */
const via = (method: string, path: string, body: (url: string) => unknown) => async (url: string, how: "plain" | "allowing") =>
  how === "plain" ? await call(method, path, ADMIN, body(url)).then((r) => ({ status: r.status, json: r.json })) : callAllowingPrivate(method, path, body(url));

const exists =
  (sql: string, ...binds: unknown[]) =>
  async () =>
    (await env.DB.prepare(sql)
      .bind(...binds)
      .first()) !== null;

/** Runs a declared tool as the admin through run-tool: its failure message. */
async function runToolMessage(name: string): Promise<string> {
  const r = await call("POST", "/api/run-tool", ADMIN, { tool_name: name, arguments: {} });
  return r.text;
}
async function runAgentMessage(name: string): Promise<string> {
  const r = await call("POST", `/api/agents/${name}/runs`, ADMIN, { user_message: "hi", thread_id: uniq("t") });
  return r.text;
}
async function reloadMessage(server: string): Promise<string> {
  const r = await call("POST", "/api/tools/reload", ADMIN, { server });
  return r.text;
}

// ---------------------------------------------------------------------------------------------
// Fixtures, keyed by door and kind.

interface Fixture {
  /** (c): a writer lacking the grant the reference needs is refused (4xx), and nothing is stored. */
  refused(): Promise<void>;
  /** (d): stored with the grant, the grant withdrawn, the stored thing refused when it runs. */
  withdrawn(): Promise<void>;
}

const FIXTURES: Record<string, Partial<Record<Kind, Fixture>>> = {
  "POST /api/presets": {
    tool: {
      async refused() {
        const t = await tool();
        const w = await mint(["presets"]);
        const name = uniq("cdp");
        expect((await call("POST", "/api/presets", w.key, { name, base_tool: t.name })).status).toBe(403);
        expect((await call("GET", `/api/presets/${name}`, ADMIN)).status).toBe(404);
      },
      async withdrawn() {
        const net = network();
        const t = await tool();
        const w = await mint(["presets", `tool:${t.name}`]);
        const p = await presetOver(t.name, w.key);
        const runner = await mint(["tools:read", `tool:${p}`]);
        expect(await runAs(runner.key, p)).toMatchObject({ status: "succeeded" });
        await narrow(w.user_id, ["presets"]);
        expect(await runAs(runner.key, p)).toMatchObject(DENIED);
        expect(net.to(t.host)).toHaveLength(1);
      },
    },
    state: {
      async refused() {
        const s = await state();
        const w = await mint(["presets", "tool:echo"]);
        const name = uniq("cdp");
        expect((await call("POST", "/api/presets", w.key, { name, base_tool: "echo", state_binding: binding(s) })).status).toBe(403);
        expect((await call("GET", `/api/presets/${name}`, ADMIN)).status).toBe(404);
      },
      async withdrawn() {
        const s = await state();
        const w = await mint(["presets", "tool:echo", "states"]);
        const p = await presetOver("echo", w.key, { fixed_kwargs: { message: "m" }, state_binding: binding(s) });
        await bindingTurnWithdrawn(p, s, w.user_id, ["presets", "tool:echo"]);
      },
    },
  },
  "POST /api/presets/{name}/versions": {
    tool: {
      async refused() {
        const t = await tool();
        const p = await presetOver("echo");
        const w = await mint(["presets", `tool:${p}`]);
        expect((await call("POST", `/api/presets/${p}/versions`, w.key, { base_tool: t.name })).status).toBe(403);
        expect((await call("GET", `/api/presets/${p}/versions`, ADMIN)).json.data.total).toBe(1);
      },
      async withdrawn() {
        const net = network();
        const t = await tool();
        const p = await presetOver("echo");
        const w = await mint(["presets", `tool:${t.name}`]);
        expect((await call("POST", `/api/presets/${p}/versions`, w.key, { base_tool: t.name, fixed_kwargs: {} })).status).toBe(200);
        const runner = await mint(["tools:read", `tool:${p}`]);
        expect(await runAs(runner.key, p)).toMatchObject({ status: "succeeded" });
        await revoke(w.user_id);
        expect(await runAs(runner.key, p)).toMatchObject(DENIED);
        expect(net.to(t.host)).toHaveLength(1);
      },
    },
    state: {
      async refused() {
        const s = await state();
        const p = await presetOver("echo");
        const w = await mint(["presets", "tool:echo"]);
        expect((await call("POST", `/api/presets/${p}/versions`, w.key, { state_binding: binding(s) })).status).toBe(403);
        expect((await call("GET", `/api/presets/${p}/versions`, ADMIN)).json.data.total).toBe(1);
      },
      async withdrawn() {
        const s = await state();
        const p = await presetOver("echo", ADMIN, { fixed_kwargs: { message: "m" } });
        const w = await mint(["presets", "tool:echo", "states"]);
        expect((await call("POST", `/api/presets/${p}/versions`, w.key, { state_binding: binding(s) })).status).toBe(200);
        await bindingTurnWithdrawn(p, s, w.user_id, ["presets", "tool:echo"]);
      },
    },
  },
  "POST /api/presets/{name}/rollback": {
    tool: {
      async refused() {
        const t = await tool();
        const p = await presetOver(t.name);
        expect((await call("POST", `/api/presets/${p}/versions`, ADMIN, { base_tool: "echo" })).status).toBe(200);
        const w = await mint(["presets", "tool:echo"]);
        expect((await call("POST", `/api/presets/${p}/rollback`, w.key, { version: 1 })).status).toBe(403);
        expect((await call("GET", `/api/presets/${p}`, ADMIN)).json.data.current_version).toBe(2);
      },
      async withdrawn() {
        const net = network();
        const t = await tool();
        const p = await presetOver(t.name);
        expect((await call("POST", `/api/presets/${p}/versions`, ADMIN, { base_tool: "echo", fixed_kwargs: { message: "m" } })).status).toBe(200);
        const w = await mint(["presets", `tool:${t.name}`]);
        expect((await call("POST", `/api/presets/${p}/rollback`, w.key, { version: 1 })).status).toBe(200);
        const runner = await mint(["tools:read", `tool:${p}`]);
        expect(await runAs(runner.key, p)).toMatchObject({ status: "succeeded" });
        await narrow(w.user_id, ["presets"]);
        expect(await runAs(runner.key, p)).toMatchObject(DENIED);
        expect(net.to(t.host)).toHaveLength(1);
      },
    },
  },
  "POST /api/presets/{name}/rename": {
    tool: {
      async refused() {
        const t = await tool();
        const p = await presetOver(t.name);
        const w = await mint(["presets"]);
        const to = uniq("cdp");
        expect((await call("POST", `/api/presets/${p}/rename`, w.key, { new_name: to })).status).toBe(403);
        expect((await call("GET", `/api/presets/${to}`, ADMIN)).status).toBe(404);
      },
      async withdrawn() {
        const net = network();
        const t = await tool();
        const p = await presetOver(t.name);
        const w = await mint(["presets", `tool:${t.name}`]);
        const to = uniq("cdp");
        expect((await call("POST", `/api/presets/${p}/rename`, w.key, { new_name: to })).status).toBe(200);
        const runner = await mint(["tools:read", `tool:${to}`]);
        expect(await runAs(runner.key, to)).toMatchObject({ status: "succeeded" });
        await narrow(w.user_id, ["presets"]);
        expect(await runAs(runner.key, to)).toMatchObject(DENIED);
        expect(net.to(t.host)).toHaveLength(1);
      },
    },
  },
  "PUT /api/conversation-configs/{target_kind}/{target_name}": {
    state: {
      async refused() {
        const s = await state();
        const p = await presetOver("echo", ADMIN, { fixed_kwargs: { message: "m" } });
        const w = await mint(["conversations"]);
        expect(
          (await call("PUT", `/api/conversation-configs/tool/${p}`, w.key, { target_kind: "tool", target_name: p, state_binding: binding(s) })).status,
        ).toBe(403);
        expect((await call("GET", `/api/conversation-configs/tool/${p}`, ADMIN)).status).toBe(404);
      },
      async withdrawn() {
        const s = await state();
        const p = await presetOver("echo", ADMIN, { fixed_kwargs: { message: "m" } });
        const w = await mint(["conversations", "states"]);
        expect(
          (await call("PUT", `/api/conversation-configs/tool/${p}`, w.key, { target_kind: "tool", target_name: p, state_binding: binding(s) })).status,
        ).toBe(200);
        await bindingTurnWithdrawn(p, s, w.user_id, ["conversations"]);
      },
    },
  },
  "POST /api/conversations/{route_name}": {
    tool: {
      async refused() {
        const t = await tool();
        const w = await mint(["conversations"]);
        const name = uniq("cdr");
        expect(
          (await call("POST", `/api/conversations/${name}`, w.key, { door: "api", target_kind: "tool", target_name: t.name, execution_key: w.user_id })).status,
        ).toBe(403);
        expect((await call("GET", `/api/conversations/${name}`, ADMIN)).status).toBe(404);
      },
      async withdrawn() {
        const net = network();
        const t = await tool();
        const w = await mint(["conversations", `tool:${t.name}`]);
        const route = await routeTo(t.name, w.user_id, w.key);
        expect(await turn(route)).toBe("answered");
        await narrow(w.user_id, ["conversations"]);
        expect(await turn(route)).toBe("error");
        expect(net.to(t.host)).toHaveLength(1);
      },
    },
    key: {
      async refused() {
        const w = await mint(["conversations", "tool:echo"]);
        const other = await mint(["tool:echo"]);
        const name = uniq("cdr");
        expect(
          (await call("POST", `/api/conversations/${name}`, w.key, { door: "api", target_kind: "tool", target_name: "echo", execution_key: other.user_id }))
            .status,
        ).toBe(403);
        expect((await call("GET", `/api/conversations/${name}`, ADMIN)).status).toBe(404);
      },
      async withdrawn() {
        const w = await mint(["conversations", "tool:echo"]);
        const route = await routeTo("echo", w.user_id, w.key);
        expect(await turn(route)).toBe("answered");
        await revoke(w.user_id);
        expect(await turn(route)).toBe("error");
      },
    },
    url: urlFixture(
      async (url, how) => {
        const body = { door: "api", target_kind: "tool", target_name: "echo", execution_key: "root", callback_url: url };
        lastRoute = uniq("cdr");
        return how === "plain"
          ? call("POST", `/api/conversations/${lastRoute}`, ADMIN, body).then((r) => ({ status: r.status, json: r.json }))
          : callAllowingPrivate("POST", `/api/conversations/${lastRoute}`, body);
      },
      "callback_url",
      async () => (await call("GET", `/api/conversations/${lastRoute}`, ADMIN)).status === 200,
      async () => {
        const sent = await call("POST", `/api/conversations/${lastRoute}/messages`, ADMIN, { external_user_id: "u", text: "hi" });
        for (let i = 0; i < 100; i++) {
          const rec = await call("GET", `/api/conversations/${lastRoute}/messages/${sent.json.data.message_id}`, ADMIN);
          if (rec.json?.data?.error) return String(rec.json.data.error);
          await new Promise((res) => setTimeout(res, 100));
        }
        return "no delivery attempt was recorded";
      },
    ),
  },
  "PUT /api/conversations/{route_name}/inbox": {
    url: urlFixture(
      async (url, how) => {
        lastInboxRoute = uniq("cdib");
        const made = await call("POST", `/api/conversations/${lastInboxRoute}`, ADMIN, {
          door: "api",
          target_kind: "tool",
          target_name: "echo",
          execution_key: "root",
          initial_mode: "manual",
        });
        expect(made.status).toBe(200);
        const body = { events_url: url };
        return how === "plain"
          ? call("PUT", `/api/conversations/${lastInboxRoute}/inbox`, ADMIN, body).then((r) => ({ status: r.status, json: r.json }))
          : callAllowingPrivate("PUT", `/api/conversations/${lastInboxRoute}/inbox`, body);
      },
      "events_url",
      async () => (await call("GET", `/api/conversations/${lastInboxRoute}/inbox`, ADMIN)).json?.data?.stored === true,
      async () => {
        // A customer's message on the manual route queues a `waiting` event; its POST meets the guard.
        const lines: string[] = [];
        const spy = vi.spyOn(console, "warn").mockImplementation((...args: unknown[]) => void lines.push(args.map(String).join(" ")));
        try {
          await call("POST", `/api/conversations/${lastInboxRoute}/messages`, ADMIN, { external_user_id: "u", text: "hi" });
          for (let i = 0; i < 100 && !lines.some((l) => l.includes("inbox_event_attempt_failed")); i++) await new Promise((res) => setTimeout(res, 100));
          return lines.find((l) => l.includes("inbox_event_attempt_failed")) ?? "no events attempt was logged";
        } finally {
          spy.mockRestore();
        }
      },
    ),
  },
  "POST /api/schedules": {
    tool: {
      async refused() {
        const t = await tool();
        const w = await mint(["schedules"]);
        const name = uniq("cdsch");
        expect(
          (
            await call("POST", "/api/schedules", w.key, {
              tool_name: t.name,
              tool_kwargs: {},
              schedule_kwargs: { cron: "0 3 * * *" },
              execution_key: w.user_id,
              name,
            })
          ).status,
        ).toBe(403);
        expect(await scheduleExists(name)).toBe(false);
      },
      async withdrawn() {
        const net = network();
        const t = await tool();
        const w = await mint(["schedules", `tool:${t.name}`]);
        const name = await schedule(w, t.name);
        await narrow(w.user_id, ["schedules"]);
        expect(await tick(name)).toMatchObject(DENIED);
        expect(net.to(t.host)).toHaveLength(0);
      },
    },
    key: {
      async refused() {
        const w = await mint(["schedules", "tool:echo"]);
        const other = await mint(["tool:echo"]);
        const name = uniq("cdsch");
        expect(
          (
            await call("POST", "/api/schedules", w.key, {
              tool_name: "echo",
              tool_kwargs: { message: "m" },
              schedule_kwargs: { cron: "0 3 * * *" },
              execution_key: other.user_id,
              name,
            })
          ).status,
        ).toBe(403);
        expect(await scheduleExists(name)).toBe(false);
      },
      async withdrawn() {
        const w = await mint(["schedules", "tool:echo"]);
        const name = await schedule(w, "echo", { message: "m" });
        await revoke(w.user_id);
        expect(await tick(name)).toMatchObject(DENIED);
      },
    },
    state: {
      async refused() {
        const s = await state();
        const w = await mint(["schedules", "tool:echo"]);
        const name = uniq("cdsch");
        const r = await call("POST", "/api/schedules", w.key, {
          tool_name: "echo",
          tool_kwargs: { message: "m" },
          schedule_kwargs: { cron: "0 3 * * *" },
          execution_key: w.user_id,
          name,
          state_binding: binding(s),
        });
        expect(r.status, r.text).toBe(403);
        expect(await scheduleExists(name)).toBe(false);
      },
      async withdrawn() {
        const s = await state();
        const w = await mint(["schedules", "tool:echo", "states"]);
        const name = await schedule(w, "echo", { message: "m" }, { state_binding: binding(s) });
        expect(await tick(name)).toMatchObject({ status: "succeeded" });
        await call("PUT", `/api/states/${s}/records/tool/echo/user/u`, ADMIN, { v: "kept" });
        await narrow(w.user_id, ["schedules", "tool:echo"]);
        expect(await tick(name, 2)).toMatchObject(DENIED);
        expect(await recordOf(s, "echo")).toEqual({ v: "kept" });
      },
    },
  },
  "POST /api/hooks": {
    tool: {
      async refused() {
        const t = await tool();
        const w = await mint(["hooks"]);
        const topic = uniq("cdtopic");
        expect((await hookOn(topic, t.name, w.user_id, w.key)).status).toBe(403);
        expect(await exists("SELECT 1 FROM hooks WHERE topic = ?", topic)()).toBe(false);
      },
      async withdrawn() {
        const net = network();
        const t = await tool();
        const w = await mint(["hooks", `tool:${t.name}`]);
        const topic = uniq("cdtopic");
        expect((await hookOn(topic, t.name, w.user_id, w.key)).status).toBe(200);
        await narrow(w.user_id, ["hooks"]);
        expect(await fire(`/api/hooks/incoming/${topic}`)).toEqual([expect.objectContaining(DENIED)]);
        expect(net.to(t.host)).toHaveLength(0);
      },
    },
    key: {
      async refused() {
        const w = await mint(["hooks", "tool:echo"]);
        const other = await mint(["tool:echo"]);
        const topic = uniq("cdtopic");
        expect((await hookOn(topic, "echo", other.user_id, w.key, { tool_kwargs: { message: "m" } })).status).toBe(403);
        expect(await exists("SELECT 1 FROM hooks WHERE topic = ?", topic)()).toBe(false);
      },
      async withdrawn() {
        const w = await mint(["hooks", "tool:echo"]);
        const topic = uniq("cdtopic");
        expect((await hookOn(topic, "echo", w.user_id, w.key, { tool_kwargs: { message: "m" } })).status).toBe(200);
        await revoke(w.user_id);
        expect(await fire(`/api/hooks/incoming/${topic}`)).toEqual([expect.objectContaining(DENIED)]);
      },
    },
    state: {
      async refused() {
        const s = await state();
        const w = await mint(["hooks", "tool:echo"]);
        const topic = uniq("cdtopic");
        expect((await hookOn(topic, "echo", w.user_id, w.key, { tool_kwargs: { message: "m" }, state_binding: binding(s) })).status).toBe(403);
        expect(await exists("SELECT 1 FROM hooks WHERE topic = ?", topic)()).toBe(false);
      },
      async withdrawn() {
        const s = await state();
        const w = await mint(["hooks", "tool:echo", "states"]);
        const topic = uniq("cdtopic");
        expect((await hookOn(topic, "echo", w.user_id, w.key, { tool_kwargs: { message: "m" }, state_binding: binding(s) })).status).toBe(200);
        expect(await fire(`/api/hooks/incoming/${topic}`)).toEqual([expect.objectContaining({ status: "succeeded" })]);
        await call("PUT", `/api/states/${s}/records/tool/echo/user/u`, ADMIN, { v: "kept" });
        await narrow(w.user_id, ["hooks", "tool:echo"]);
        expect(await fire(`/api/hooks/incoming/${topic}`)).toEqual([expect.objectContaining(DENIED)]);
        expect(await recordOf(s, "echo")).toEqual({ v: "kept" });
      },
    },
  },
  "POST /api/hooks/trigger-links": {
    key: {
      async refused() {
        const w = await mint(["hooks"]);
        const other = await mint(["tool:echo"]);
        const name = uniq("cdlink");
        expect(
          (await call("POST", "/api/hooks/trigger-links", w.key, { topic: uniq("cdtopic"), execution_key: other.user_id, name, ttl_seconds: 600 })).status,
        ).toBe(403);
        expect(await exists("SELECT 1 FROM hook_trigger_links WHERE name = ?", name)()).toBe(false);
      },
      async withdrawn() {
        const topic = uniq("cdtopic");
        expect((await hookOn(topic, "echo", "root", ADMIN, { tool_kwargs: { message: "m" } })).status).toBe(200);
        const w = await mint(["hooks", "tool:echo"]);
        const link = await call("POST", "/api/hooks/trigger-links", w.key, { topic, execution_key: w.user_id, name: uniq("cdlink"), ttl_seconds: 600 });
        expect(link.status, link.text).toBe(200);
        expect(await fire(link.json.data.trigger_path)).toEqual([expect.objectContaining({ status: "succeeded" })]);
        await revoke(w.user_id);
        expect(await fire(link.json.data.trigger_path)).toEqual([expect.objectContaining(DENIED)]);
      },
    },
  },
  "POST /api/sub-mcp": {
    tool: {
      async refused() {
        const t = await tool();
        // `tools:write` grants every run, so the writer lacking one reaches the door through a custom scope.
        const w = await mint([await scopeFor("/api/sub-mcp")]);
        const slug = uniq("cdapp");
        expect((await call("POST", "/api/sub-mcp", w.key, { slug, tools: [t.name] })).status).toBe(403);
        expect(await exists("SELECT 1 FROM sub_mcp_apps WHERE slug = ?", slug)()).toBe(false);
      },
      async withdrawn() {
        const t = await tool();
        const scope = await scopeFor("/api/sub-mcp");
        const w = await mint([scope, `tool:${t.name}`]);
        const slug = uniq("cdapp");
        expect((await call("POST", "/api/sub-mcp", w.key, { slug, tools: [t.name] })).status).toBe(200);
        const caller = await mint([`tool:${t.name}`]);
        expect(await mcpToolsList(slug, caller.key)).toEqual([t.name]);
        await narrow(w.user_id, [scope]);
        expect(await mcpToolsList(slug, caller.key)).toEqual([]);
      },
    },
  },
  "POST /api/tools/{name}/extensions": { tool: extensionFixture((name, key) => call("POST", `/api/tools/${name}/extensions`, key, { combos: [["retry"]] })) },
  "POST /api/tools/{name}/extensions/combos": {
    tool: extensionFixture((name, key) => call("POST", `/api/tools/${name}/extensions/combos`, key, { add: [["retry"]] })),
  },
  "POST /api/tools-config/entries": {
    url: urlFixture(
      via("POST", "/api/tools-config/entries", (url) => ({ title: (lastName = uniq("cdurl")), kind: "http", url })),
      "url",
      async () => exists("SELECT 1 FROM tool_declarations WHERE title = ?", lastName)(),
      () => runToolMessage(lastName),
    ),
  },
  "POST /api/agents-config/entries": {
    url: urlFixture(
      via("POST", "/api/agents-config/entries", (url) => ({ title: (lastName = uniq("cdagent")), kind: "http", config: { url } })),
      "config.url",
      async () => exists("SELECT 1 FROM agent_declarations WHERE title = ?", lastName)(),
      () => runAgentMessage(lastName),
    ),
  },
  "POST /api/mcp-config/entries": {
    url: urlFixture(
      via("POST", "/api/mcp-config/entries", (url) => ({ title: (lastName = uniq("cdmcp").replace(/-/g, "_")), config: { type: "http", url } })),
      "config.url",
      async () => exists("SELECT 1 FROM mcp_servers WHERE title = ?", lastName)(),
      () => reloadMessage(lastName),
    ),
  },
  "POST /api/mcp-config": {
    url: urlFixture(
      via("POST", "/api/mcp-config", (url) => ({ mcp: [{ title: (lastName = uniq("cdmcp").replace(/-/g, "_")), config: { type: "http", url } }] })),
      "config.url",
      async () => exists("SELECT 1 FROM mcp_servers WHERE title = ?", lastName)(),
      () => reloadMessage(lastName),
    ),
  },
  "POST /api/manifest/replace": {
    url: urlFixture(
      via("POST", "/api/manifest/replace", (url) => ({ tools: [{ title: (lastName = uniq("cdman")), kind: "http", url }] })),
      "url",
      async () => exists("SELECT 1 FROM tool_declarations WHERE title = ?", lastName)(),
      () => runToolMessage(lastName),
    ),
  },
  "POST /api/api-tools": {
    url: urlFixture(
      via("POST", "/api/api-tools", (url) => ({ openapi: OPENAPI, operation_id: "ping", title: (lastName = uniq("cdapi")), server_url: url })),
      // The door checks the tool's resulting address, and names it `url`.
      "url",
      async () => exists("SELECT 1 FROM api_tools WHERE title = ?", lastName)(),
      () => runToolMessage(lastName),
    ),
  },
};

/** The name the last URL fixture stored under (the store and the run share it). */
let lastName = "";
let lastRoute = "";
let lastInboxRoute = "";
const OPENAPI = {
  openapi: "3.0.0",
  info: { title: "t", version: "1" },
  paths: { "/ping": { get: { operationId: "ping", responses: { "200": { description: "ok" } } } } },
};

function extensionFixture(setCombos: (tool: string, key: string) => Promise<{ status: number }>): Fixture {
  return {
    async refused() {
      const t = await tool();
      const w = await mint(["extensions"]);
      expect((await setCombos(t.name, w.key)).status).toBe(403);
      expect(await exists("SELECT 1 FROM tool_extensions WHERE tool_name = ?", t.name)()).toBe(false);
    },
    async withdrawn() {
      const net = network();
      const t = await tool();
      const w = await mint(["extensions", `tool:${t.name}`]);
      expect((await setCombos(t.name, w.key)).status).toBe(200);
      const runner = await mint(["tools:read", `tool:${t.name}`]);
      expect(await runAs(runner.key, t.name)).toMatchObject({ status: "succeeded" });
      await narrow(w.user_id, ["extensions"]);
      expect(await runAs(runner.key, t.name)).toMatchObject(DENIED);
      expect(net.to(t.host)).toHaveLength(1);
    },
  };
}

const nextFire = new Map<string, number>();
/** A recurring schedule of `toolName` bound to `w`'s own key. */
async function schedule(
  w: { user_id: string; key: string },
  toolName: string,
  kwargs: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
): Promise<string> {
  const name = uniq("cdsch");
  const r = await call("POST", "/api/schedules", w.key, {
    tool_name: toolName,
    tool_kwargs: kwargs,
    schedule_kwargs: { cron: "0 3 * * *" },
    execution_key: w.user_id,
    name,
    ...extra,
  });
  expect(r.status, r.text).toBe(200);
  nextFire.set(name, Date.parse(r.json.data.schedule.next_fire_at));
  return name;
}
async function scheduleExists(name: string): Promise<boolean> {
  return (await call("GET", "/api/schedules?pageSize=200", ADMIN)).json.data.items.some((s: { name: string }) => s.name === name);
}
/** Fires the schedule's `nth` next slot and answers its run's end. */
async function tick(name: string, nth = 1): Promise<any> {
  const next = must(nextFire.get(name), "nextFire.get(name)");
  const fired = await runInDurableObject(scheduleObject(name), async (instance) => {
    await instance.parts.alarm.runAt(next + 1000 + (nth - 1) * 86_400_000);
    return must(await instance.read(), "instance.read()").recent_fires[0];
  });
  return waitRun(must(fired.run_id, "fired.run_id"));
}

// ---------------------------------------------------------------------------------------------

describe(`confused deputy: ${STORING.length} storing doors, ${DECLARED.length} stored references`, () => {
  beforeAll(async () => {
    ADMIN = await bootstrapAdmin();
    console.log(
      `confused deputy: ${STORING.length} storing doors, ${DECLARED.length} stored references:\n${DECLARED.map((d) => `  ${d.door}  ${d.kind} at ${d.at}`).join("\n")}`,
    );
  });

  it("every body field that looks like a reference is declared in `stores`, or listed as not stored with its reason", () => {
    const missing: string[] = [];
    for (const door of DOORS) {
      if (NOT_STORED_DOORS[label(door)]) continue;
      for (const f of referenceFields(jsonSchemaOf(door.body))) {
        if (covered(door, f) || NOT_STORED[label(door)]?.[f.at] || (f.kind === "url" && MEDIA_URL.test(f.at))) continue;
        // Named here so a failure says which door and field to declare (or to list as not stored).
        missing.push(`${label(door)}: ${f.kind} at ${f.at}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it("the exemptions name fields the doors really have (none goes stale)", () => {
    const stale: string[] = [];
    for (const [door, fields] of Object.entries(NOT_STORED)) {
      const spec = DOORS.find((d) => label(d) === door);
      const found = new Set(referenceFields(jsonSchemaOf(spec?.body)).map((f) => f.at));
      for (const at of Object.keys(fields)) if (!found.has(at)) stale.push(`${door}: ${at}`);
    }
    for (const door of Object.keys(NOT_STORED_DOORS)) if (!DOORS.some((d) => label(d) === door)) stale.push(door);
    expect(stale).toEqual([]);
  });

  it("every declared reference has a fixture (keyed by door and kind), and every fixture a declaration", () => {
    const declared = new Set(DECLARED.map((d) => `${d.door} ${d.kind}`));
    const fixtures = new Set(Object.entries(FIXTURES).flatMap(([door, byKind]) => Object.keys(byKind).map((k) => `${door} ${k}`)));
    expect([...declared].filter((d) => !fixtures.has(d))).toEqual([]);
    expect([...fixtures].filter((f) => !declared.has(f))).toEqual([]);
  });

  for (const [door, byKind] of Object.entries(FIXTURES)) {
    for (const [kind, fixture] of Object.entries(byKind) as Array<[Kind, Fixture]>) {
      it(`${door} ${kind}: a writer lacking the grant is refused, nothing stored`, { timeout: 30_000 }, () => fixture.refused());
      it(`${door} ${kind}: withdrawn after storing, the stored thing is refused when it runs`, { timeout: 60_000 }, () => fixture.withdrawn());
    }
  }
});

/** Extension doors (docs/extensions.md): the catalog, a tool's combos, and their authorization. */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { admin, call, mintKey, uniq } from "../helpers/http";
import { must } from "../../src/platform/must";

async function declareTool(): Promise<string> {
  const title = uniq("tool");
  const r = await call("POST", "/api/tools-config/entries", { key: await admin(), body: { title, kind: "http", url: "https://tools.example/run" } });
  if (r.status !== 200) throw new Error(`declare failed: ${r.status} ${JSON.stringify(r.body)}`);
  return title;
}

/** How many rows `tool_extensions` holds for the tool. */
async function storedRows(tool: string): Promise<number> {
  const r = await env.DB.prepare("SELECT COUNT(*) AS n FROM tool_extensions WHERE tool_name = ?").bind(tool).first<{ n: number }>();
  return must(r, "r").n;
}

const combosOf = async (tool: string, key?: string) => call("GET", `/api/tools/${tool}/extensions`, { key: key ?? (await admin()) });
const replace = async (tool: string, combos: unknown, key?: string) =>
  call("POST", `/api/tools/${tool}/extensions`, { key: key ?? (await admin()), body: { combos } });
const edit = async (tool: string, body: unknown, key?: string) => call("POST", `/api/tools/${tool}/extensions/combos`, { key: key ?? (await admin()), body });

describe("GET /api/extensions", () => {
  it("lists the catalog to an extensions:read key, and refuses a key without the tag", async () => {
    const reader = await mintKey({ scopes: ["extensions:read"] });
    const r = await call("GET", "/api/extensions", { key: reader.key });
    expect(r.status).toBe(200);
    expect(r.body.data.total).toBe(4);
    expect(r.body.data.items.map((e: any) => e.name)).toEqual(["cache", "max_result_bytes", "redact", "retry"]);
    expect(r.body.data.items[0]).toMatchObject({ kind: "wrapper", config_required: false, config_schema: { type: "object" } });
    const other = await mintKey({ scopes: ["tools:read"] });
    expect((await call("GET", "/api/extensions", { key: other.key })).status).toBe(403);
    expect((await call("GET", "/api/extensions")).status).toBe(401);
  });
});

describe("a declared tool's combos", () => {
  it("start empty, are replaced whole, read back, and cleared with []", async () => {
    const tool = await declareTool();
    expect((await combosOf(tool)).body.data).toEqual({ tool, tool_kind: "http", editable: true, combos: [] });
    const combos = [["cache", { name: "redact", config: { paths: ["a.b"] } }], ["retry"]];
    const put = await replace(tool, combos);
    expect(put.status).toBe(200);
    expect(put.body.data).toEqual({ tool, tool_kind: "http", editable: true, combos });
    expect((await combosOf(tool)).body.data.combos).toEqual(combos);
    expect((await replace(tool, [])).body.data.combos).toEqual([]);
    expect(await storedRows(tool)).toBe(0);
  });

  it("refuses an element the catalog or its config schema refuses, naming where and never the value", async () => {
    const tool = await declareTool();
    const unknown = await replace(tool, [["cache", "SECRET-NAME"]]);
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toContain("combos.0.1");
    expect(unknown.body.error).not.toContain("SECRET-NAME");
    const badConfig = await replace(tool, [[{ name: "retry", config: { attempts: 999 } }]]);
    expect(badConfig.status).toBe(400);
    expect(badConfig.body.error).toContain("combos.0.0.config.attempts");
    expect(badConfig.body.error).not.toContain("999");
    const bare = await replace(tool, [["redact"]]);
    expect(bare.status).toBe(400);
    expect(bare.body.error).toContain("redact needs a config");
    for (const shape of [[[]], ["retry"], [[{ name: "retry" }]], [[{ name: "cache", config: { ttl_seconds: 5 }, extra: true }]]]) {
      expect((await replace(tool, shape)).status, JSON.stringify(shape)).toBe(400);
    }
    expect((await call("POST", `/api/tools/${tool}/extensions`, { key: await admin(), body: { combos: [], extra: 1 } })).status).toBe(400);
    expect((await combosOf(tool)).body.data.combos).toEqual([]); // nothing stored
  });

  it("adds and removes single combos: absent 404 and present 400, each naming the combo", async () => {
    const tool = await declareTool();
    await replace(tool, [["cache"]]);
    const added = await edit(tool, { add: [["retry"]] });
    expect(added.status).toBe(200);
    expect(added.body.data.combos).toEqual([["cache"], ["retry"]]);
    // Combos compare by names and parsed configs: the bare name equals its defaults.
    expect((await edit(tool, { remove: [[{ name: "cache", config: { ttl_seconds: 60 } }]] })).body.data.combos).toEqual([["retry"]]);
    const dup = await edit(tool, { add: [["retry"]] });
    expect(dup.status).toBe(400);
    expect(dup.body.error).toContain("[retry]");
    const missing = await edit(tool, { remove: [["cache"]] });
    expect(missing.status).toBe(404);
    expect(missing.body.error).toContain("[cache]");
    expect((await edit(tool, {})).status).toBe(400);
    expect((await edit(tool, { add: [], remove: [] })).status).toBe(400);
    // A refused edit changes nothing, even when its other half was fine.
    expect((await edit(tool, { add: [["cache"]], remove: [["max_result_bytes"]] })).status).toBe(404);
    expect((await combosOf(tool)).body.data.combos).toEqual([["retry"]]);
  });

  it("unknown tools are 404; built-ins and presets are read-only here (409)", async () => {
    const ghost = uniq("ghost");
    expect((await combosOf(ghost)).status).toBe(404);
    expect((await replace(ghost, [])).status).toBe(404);
    expect((await edit(ghost, { add: [["retry"]] })).status).toBe(404);
    expect((await combosOf("echo")).body.data).toEqual({ tool: "echo", tool_kind: "builtin", editable: false, combos: [] });
    const builtin = await replace("echo", [["cache"]]);
    expect(builtin.status).toBe(409);
    expect(builtin.body.error).toContain("preset");
    const preset = uniq("preset");
    const created = await call("POST", "/api/presets", { key: await admin(), body: { name: preset, base_tool: "echo", extensions: [["cache"]] } });
    expect(created.status).toBe(200);
    expect((await combosOf(preset)).body.data).toEqual({ tool: preset, tool_kind: "preset", editable: false, combos: [["cache"]] });
    expect((await edit(preset, { add: [["retry"]] })).status).toBe(409);
    expect((await call("GET", "/api/tools/not.a%20name/extensions", { key: await admin() })).status).toBe(400);
  });

  it("reading needs extensions:read, writing extensions:write", async () => {
    const tool = await declareTool();
    const reader = await mintKey({ scopes: ["extensions:read"] });
    // Combos wrap every call of the tool, so their writer must be allowed to run it (docs/security.md).
    const writer = await mintKey({ scopes: ["extensions:write", `tool:${tool}`] });
    expect((await combosOf(tool, reader.key)).status).toBe(200);
    expect((await replace(tool, [["cache"]], reader.key)).status).toBe(403);
    expect((await edit(tool, { add: [["retry"]] }, reader.key)).status).toBe(403);
    expect((await replace(tool, [["cache"]], writer.key)).status).toBe(200);
    expect((await edit(tool, { add: [["retry"]] }, writer.key)).status).toBe(200);
    const toolsOnly = await mintKey({ scopes: ["tools"] });
    expect((await combosOf(tool, toolsOnly.key)).status).toBe(403);
  });
});

describe("a preset's extensions", () => {
  it("are part of its versions: checked at create, carried forward, replaced, cleared", async () => {
    const key = await admin();
    const name = uniq("preset");
    const bad = await call("POST", "/api/presets", { key, body: { name, base_tool: "echo", extensions: [[{ name: "cache", config: { ttl_seconds: 0 } }]] } });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toContain("extensions.0.0.config.ttl_seconds");
    const created = await call("POST", "/api/presets", { key, body: { name, base_tool: "echo", extensions: [["retry"]] } });
    expect(created.body.data.extensions).toEqual([["retry"]]);
    const v2 = await call("POST", `/api/presets/${name}/versions`, { key, body: { description: "two" } });
    expect(v2.body.data.body.extensions).toEqual([["retry"]]);
    const v3 = await call("POST", `/api/presets/${name}/versions`, { key, body: { extensions: [["cache"], ["retry"]] } });
    expect(v3.body.data.body.extensions).toEqual([["cache"], ["retry"]]);
    expect((await call("POST", `/api/presets/${name}/versions`, { key, body: { extensions: [] } })).body.data.body.extensions).toEqual([]);
    expect((await call("POST", `/api/presets/${name}/rollback`, { key, body: { version: 3 } })).body.data.extensions).toEqual([["cache"], ["retry"]]);
    // A preset created without the field has none.
    const plain = uniq("preset");
    expect((await call("POST", "/api/presets", { key, body: { name: plain, base_tool: "echo" } })).body.data.extensions).toEqual([]);
  });
});

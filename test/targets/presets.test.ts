import { describe, expect, it } from "vitest";
import { dispatchTool } from "../../src/targets/dispatch";
import { admin, call, mintKey, uniq } from "../helpers/http";
import { testContext } from "./helpers";
import { fakeFetch, json } from "../helpers/network";

async function createPreset(body: Record<string, unknown>, key?: string) {
  return call("POST", "/api/presets", { key: key ?? (await admin()), body });
}

async function newEchoPreset(extra: Record<string, unknown> = {}): Promise<string> {
  const name = uniq("preset");
  const r = await createPreset({ name, base_tool: "echo", description: "fixed echo", fixed_kwargs: { message: "v1" }, ...extra });
  if (r.status !== 200) throw new Error(`create failed ${r.status} ${JSON.stringify(r.body)}`);
  return name;
}

describe("preset doors", () => {
  it("creates version 1 and reads it back, singly and in the list", async () => {
    const key = await admin();
    const name = uniq("preset");
    const r = await createPreset({ name, base_tool: "echo", description: "d", fixed_kwargs: { message: "m" } });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({
      name,
      base_tool: "echo",
      description: "d",
      fixed_kwargs: { message: "m" },
      input_schema: null,
      output_schema: null,
      current_version: 1,
      latest_version: 1,
    });
    expect((await call("GET", `/api/presets/${name}`, { key })).body.data).toEqual(r.body.data);
    const list = await call("GET", "/api/presets", { key });
    expect(list.body.data.items).toContainEqual(r.body.data);
    expect(list.body.data.total).toBe(list.body.data.items.length);
  });

  it("refuses a name that is taken by a preset or a tool, and base tools that are missing or presets", async () => {
    const name = await newEchoPreset();
    expect((await createPreset({ name, base_tool: "echo" })).status).toBe(409);
    expect((await createPreset({ name: "echo", base_tool: "echo" })).status).toBe(409);
    const tool = uniq("tool");
    await call("POST", "/api/tools-config/entries", { key: await admin(), body: { title: tool, kind: "http", url: "https://tools.example/" } });
    expect((await createPreset({ name: tool, base_tool: "echo" })).status).toBe(409);
    // ...and the other way round: a tool may not take a preset's name.
    const clash = await call("POST", "/api/tools-config/entries", { key: await admin(), body: { title: name, kind: "http", url: "https://tools.example/" } });
    expect(clash.status).toBe(409);

    expect((await createPreset({ name: uniq("p"), base_tool: uniq("ghost") })).status).toBe(404);
    const onPreset = await createPreset({ name: uniq("p"), base_tool: name });
    expect(onPreset.status).toBe(400);
    expect(onPreset.body.error).toMatch(/base_tool/);
    expect((await createPreset({ name: uniq("p"), base_tool: "echo", surprise: 1 })).status).toBe(400);
  });

  it("appends versions carrying omitted fields forward, and lists them with is_current", async () => {
    const key = await admin();
    const name = await newEchoPreset({ input_schema: { type: "object" } });
    const v2 = await call("POST", `/api/presets/${name}/versions`, { key, body: { fixed_kwargs: { message: "v2" } } });
    expect(v2.status).toBe(200);
    expect(v2.body.data).toMatchObject({
      version: 2,
      is_current: true,
      tags: [],
      body: { base_tool: "echo", description: "fixed echo", fixed_kwargs: { message: "v2" }, input_schema: { type: "object" }, output_schema: null },
    });
    const v3 = await call("POST", `/api/presets/${name}/versions`, { key, body: { input_schema: null, description: "third" } });
    expect(v3.body.data).toMatchObject({ version: 3, body: { input_schema: null, description: "third", fixed_kwargs: { message: "v2" } } });

    const list = await call("GET", `/api/presets/${name}/versions`, { key });
    expect(list.body.data.total).toBe(3);
    expect(list.body.data.items.map((v: any) => [v.version, v.is_current])).toEqual([
      [1, false],
      [2, false],
      [3, true],
    ]);
    expect(typeof list.body.data.items[0].created_at).toBe("string");
    expect((await call("GET", `/api/presets/${name}`, { key })).body.data).toMatchObject({ current_version: 3, latest_version: 3, description: "third" });
    expect((await call("POST", `/api/presets/${uniq("ghost")}/versions`, { key, body: {} })).status).toBe(404);
    expect((await call("POST", `/api/presets/${name}/versions`, { key, body: { base_tool: uniq("ghost") } })).status).toBe(404);
  });

  it("reads one version: 400 for a non-integer segment, 404 for an unknown version or preset", async () => {
    const key = await admin();
    const name = await newEchoPreset();
    const v1 = await call("GET", `/api/presets/${name}/versions/1`, { key });
    expect(v1.status).toBe(200);
    expect(v1.body.data).toMatchObject({ version: 1, is_current: true, body: { fixed_kwargs: { message: "v1" } } });
    for (const bad of ["abc", "1.5", "1e2", "%20"]) {
      const r = await call("GET", `/api/presets/${name}/versions/${bad}`, { key });
      expect(r.status, bad).toBe(400);
      expect(r.body.error).toBe("version must be an integer");
    }
    expect((await call("GET", `/api/presets/${name}/versions/2`, { key })).status).toBe(404);
    expect((await call("GET", `/api/presets/${name}/versions/0`, { key })).status).toBe(404);
    expect((await call("GET", `/api/presets/${uniq("ghost")}/versions/1`, { key })).status).toBe(404);
  });

  it("rolls back to an older version without writing one, moving is_current", async () => {
    const key = await admin();
    const name = await newEchoPreset();
    await call("POST", `/api/presets/${name}/versions`, { key, body: { fixed_kwargs: { message: "v2" } } });
    const rb = await call("POST", `/api/presets/${name}/rollback`, { key, body: { version: 1 } });
    expect(rb.status).toBe(200);
    expect(rb.body.data).toMatchObject({ current_version: 1, latest_version: 2, fixed_kwargs: { message: "v1" } });
    expect((await call("GET", `/api/presets/${name}/versions/1`, { key })).body.data.is_current).toBe(true);
    expect((await call("GET", `/api/presets/${name}/versions/2`, { key })).body.data.is_current).toBe(false);
    expect((await call("GET", `/api/presets/${name}/versions`, { key })).body.data.total).toBe(2);

    expect((await call("POST", `/api/presets/${name}/rollback`, { key, body: { version: 9 } })).status).toBe(404);
    expect((await call("POST", `/api/presets/${uniq("ghost")}/rollback`, { key, body: { version: 1 } })).status).toBe(404);
    expect((await call("POST", `/api/presets/${name}/rollback`, { key, body: { version: "1" } })).status).toBe(400);

    // A new version after a rollback is latest+1 and carries forward from the active one.
    const v3 = await call("POST", `/api/presets/${name}/versions`, { key, body: { description: "after rollback" } });
    expect(v3.body.data).toMatchObject({ version: 3, body: { fixed_kwargs: { message: "v1" } } });
  });

  it("replaces a version's tags", async () => {
    const key = await admin();
    const name = await newEchoPreset();
    const r = await call("PUT", `/api/presets/${name}/versions/1/tags`, { key, body: { tags: ["stable", "reviewed", "stable"] } });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ version: 1, tags: ["stable", "reviewed"], is_current: true });
    expect((await call("GET", `/api/presets/${name}/versions/1`, { key })).body.data.tags).toEqual(["stable", "reviewed"]);
    expect((await call("PUT", `/api/presets/${name}/versions/1/tags`, { key, body: { tags: [] } })).body.data.tags).toEqual([]);
    expect((await call("PUT", `/api/presets/${name}/versions/x/tags`, { key, body: { tags: [] } })).status).toBe(400);
    expect((await call("PUT", `/api/presets/${name}/versions/7/tags`, { key, body: { tags: [] } })).status).toBe(404);
    expect((await call("PUT", `/api/presets/${name}/versions/1/tags`, { key, body: { tags: ["has space"] } })).status).toBe(400);
  });

  it("deletes a preset and every version", async () => {
    const key = await admin();
    const name = await newEchoPreset();
    expect(await call("DELETE", `/api/presets/${name}`, { key })).toMatchObject({ status: 200, body: { data: { removed: true, name } } });
    expect((await call("GET", `/api/presets/${name}`, { key })).status).toBe(404);
    expect((await call("GET", `/api/presets/${name}/versions/1`, { key })).status).toBe(404);
    expect((await call("DELETE", `/api/presets/${name}`, { key })).status).toBe(404);
  });

  it("needs the presets grant (read for GET, write otherwise)", async () => {
    const reader = await mintKey({ scopes: ["presets:read"] });
    expect((await call("GET", "/api/presets", { key: reader.key })).status).toBe(200);
    expect((await createPreset({ name: uniq("p"), base_tool: "echo" }, reader.key)).status).toBe(403);
    // A preset's base runs for whoever may run the preset, so its writer must be allowed to run the base (docs/security.md).
    const writer = await mintKey({ scopes: ["presets", "tool:echo"] });
    expect((await createPreset({ name: uniq("p"), base_tool: "echo", fixed_kwargs: { message: "x" } }, writer.key)).status).toBe(200);
  });
});

describe("a preset is a live tool", () => {
  it("appears in the tool list with its effective schema (fixed kwargs removed from the base's)", async () => {
    const key = await admin();
    const name = await newEchoPreset();
    expect((await call("GET", "/api/tools", { key })).body.data).toContain(name);
    const s = await call("GET", `/api/tools/${name}/schema`, { key });
    expect(s.body.data).toEqual({
      input: { type: "object", properties: {}, required: [] },
      output: { type: "string" },
      description: "fixed echo",
    });
    const own = await newEchoPreset({ input_schema: { type: "object", properties: { lang: { type: "string" } } }, output_schema: { type: "string" } });
    expect((await call("GET", `/api/tools/${own}/schema`, { key })).body.data.input).toEqual({ type: "object", properties: { lang: { type: "string" } } });
  });

  it("dispatches with fixed kwargs the caller cannot override, following rollback", async () => {
    const key = await admin();
    const name = await newEchoPreset();
    const ctx = testContext();
    expect(await dispatchTool(ctx, name, { message: "caller's own" }, {})).toEqual({ ok: true, value: "v1" });
    await call("POST", `/api/presets/${name}/versions`, { key, body: { fixed_kwargs: { message: "v2" } } });
    expect(await dispatchTool(ctx, name, {}, {})).toEqual({ ok: true, value: "v2" });
    await call("POST", `/api/presets/${name}/rollback`, { key, body: { version: 1 } });
    expect(await dispatchTool(ctx, name, {}, {})).toEqual({ ok: true, value: "v1" });
    const run = await call("POST", "/api/run-tool", { key, body: { tool_name: name, arguments: { message: "ignored" } } });
    expect(run).toMatchObject({ status: 200, body: { data: "v1" } });
  });

  it("validates the merged kwargs against input_schema and the result against output_schema", async () => {
    const name = await newEchoPreset({
      input_schema: { type: "object", properties: { lang: { enum: ["en", "fr"] } }, required: ["lang"] },
    });
    const ctx = testContext();
    const missing = await dispatchTool(ctx, name, {}, {});
    expect(missing).toMatchObject({ ok: false, kind: "invalid_kwargs" });
    expect(!missing.ok && missing.message).toContain('required property "lang"');
    expect(await dispatchTool(ctx, name, { lang: "de" }, {})).toMatchObject({ ok: false, kind: "invalid_kwargs" });
    expect(await dispatchTool(ctx, name, { lang: "fr" }, {})).toEqual({ ok: true, value: "v1" });

    const wrongOut = await newEchoPreset({ output_schema: { type: "object" } });
    const r = await dispatchTool(ctx, wrongOut, {}, {});
    expect(r).toMatchObject({ ok: false, kind: "tool_error" });
    expect(!r.ok && r.message).toContain("output_schema");
  });

  it("runs over an HTTP tool, and fails cleanly once that tool is removed", async () => {
    const key = await admin();
    const tool = uniq("tool");
    await call("POST", "/api/tools-config/entries", { key, body: { title: tool, kind: "http", url: "https://tools.example/p" } });
    const name = uniq("preset");
    await createPreset({ name, base_tool: tool, fixed_kwargs: { mode: "strict" } });
    const edge = fakeFetch((_req, body) => json({ echoed: JSON.parse(body) }));
    const ctx = testContext({ fetch: edge.fetch });
    expect(await dispatchTool(ctx, name, { q: "x", mode: "lax" }, {})).toEqual({ ok: true, value: { echoed: { q: "x", mode: "strict" } } });
    await call("DELETE", `/api/tools-config/entries/${tool}`, { key });
    expect(await dispatchTool(ctx, name, {}, {})).toEqual({ ok: false, kind: "tool_error", message: "the preset's base tool is not registered" });
  });

  it("authorizes the preset's own name, not its base tool's", async () => {
    const name = await newEchoPreset();
    const ctx = testContext();
    const onlyPreset = await mintKey({ scopes: [`tool:${name}`] });
    expect(await dispatchTool(ctx, name, {}, { asKey: { user_id: onlyPreset.user_id, fingerprint: onlyPreset.fingerprint } })).toEqual({
      ok: true,
      value: "v1",
    });
    const onlyBase = await mintKey({ scopes: ["tool:echo"] });
    expect(await dispatchTool(ctx, name, {}, { asKey: { user_id: onlyBase.user_id, fingerprint: onlyBase.fingerprint } })).toMatchObject({
      ok: false,
      kind: "denied",
    });
  });
});

/**
 * Content end to end: against a real `wrangler dev` with its local R2
 * bucket, a template uploaded through the template doors renders as a route's `payload_expr`
 * source (a TemplatedText `{id, kwargs}` naming the template's storage path, rendered with the
 * kwargs at route create, then run as jq on every turn), and the storage doors work over HTTP:
 * base64 upload, listing, ranged download with its headers, a restart keeps the bucket, delete-dir.
 * Tool metadata, the plugins listing and the sandbox identity answer too.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BOOTSTRAP_TOKEN, type DevServer, http, startDev } from "./harness";
import { type ToolServer, startToolServer } from "./support/tool-server";
import { must } from "../../src/platform/must";

let dev: DevServer;
let tool: ToolServer;
let base: string;
let key: string;

beforeAll(async () => {
  tool = await startToolServer((k) => ({ text: `${k.lang}:${k.message}:${(k.tags ?? []).join("+")}` }));
  dev = await startDev();
  base = dev.baseUrl;
  key = (await http(base, "POST", "/api/keys/bootstrap", { body: { user_id: "root", bootstrap_token: BOOTSTRAP_TOKEN } })).body.data.token;
}, 120_000);

afterAll(async () => {
  await dev?.close();
  await tool?.stop();
});

const TEMPLATE = '{message: .message, lang: "{{lang}}", tags: [{{#tags}}"{{.}}", {{/tags}}"bridge"]}';

describe("content against a real wrangler dev", () => {
  it("a template stored in R2 renders as a route's payload_expr source", async () => {
    expect((await http(base, "GET", "/api/storage", { key })).body.data).toMatchObject({ present: true, provider: "r2", binding: "STORAGE" });

    // 1. Upload the template; its variables are inferred.
    const up = await http(base, "POST", "/api/upload-template", { key, body: { id: "routes/payload.mustache", content: TEMPLATE } });
    expect(up.status, JSON.stringify(up.body)).toBe(200);
    expect(up.body.data).toMatchObject({ created: true, template: { id: "routes/payload.mustache", resource_id: "templates/routes/payload.mustache" } });
    const fetched = await http(base, "POST", "/api/template", { key, body: { id: "routes/payload.mustache" } });
    expect(fetched.body.data.variables).toEqual([
      { name: "lang", kind: "value", within: [] },
      { name: "tags", kind: "section", within: [] },
    ]);
    const rendered = await http(base, "POST", "/api/render-template", { key, body: { id: "routes/payload.mustache", kwargs: { lang: "de", tags: ["vip"] } } });
    expect(rendered.body.data.rendered).toBe('{message: .message, lang: "de", tags: ["vip", "bridge"]}');

    // 2. A route whose payload_expr is a TemplatedText naming the stored template.
    expect((await http(base, "POST", "/api/tools-config/entries", { key, body: { title: "lang-tool", kind: "http", url: tool.url } })).status).toBe(200);
    expect((await http(base, "POST", "/api/auth/api-keys", { key, body: { user_id: "lang-runner", scopes: ["tool:lang-tool"] } })).status).toBe(200);
    const route = await http(base, "POST", "/api/conversations/content-route", {
      key,
      body: {
        door: "api",
        target_kind: "tool",
        target_name: "lang-tool",
        execution_key: "lang-runner",
        payload_expr: { id: "templates/routes/payload.mustache", kwargs: { lang: "de", tags: ["vip", "beta"] } },
        reply_expr: ".text",
      },
    });
    expect(route.status, JSON.stringify(route.body)).toBe(200);

    // 3. A turn: the rendered program ran as jq and shaped the tool's kwargs.
    const sent = await http(base, "POST", "/api/conversations/content-route/messages", {
      key,
      body: { external_user_id: "ann", text: "hallo", wait_seconds: 20 },
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    expect(sent.body.data).toMatchObject({ status: "answered", answer: "de:hallo:vip+beta+bridge" });
    expect(must(tool.calls.at(-1), "tool.calls.at(-1)").kwargs).toEqual({ message: "hallo", lang: "de", tags: ["vip", "beta", "bridge"] });

    // 4. A template id that names nothing, or a template that renders bad jq, is the route door's 400.
    const missing = await http(base, "POST", "/api/conversations/content-missing", {
      key,
      body: {
        door: "api",
        target_kind: "tool",
        target_name: "lang-tool",
        execution_key: "lang-runner",
        payload_expr: { id: "templates/routes/absent.mustache" },
      },
    });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toBe("invalid payload_expr: its text resource does not exist");
    await http(base, "POST", "/api/upload-template", { key, body: { id: "routes/broken.mustache", content: "{message: {{x}}" } });
    const broken = await http(base, "POST", "/api/conversations/content-broken", {
      key,
      body: {
        door: "api",
        target_kind: "tool",
        target_name: "lang-tool",
        execution_key: "lang-runner",
        payload_expr: { id: "templates/routes/broken.mustache", kwargs: { x: 1 } },
      },
    });
    expect(broken.status).toBe(400);
    expect(broken.body.error).toContain("invalid payload_expr");
  });

  it("storage over HTTP: base64 upload, listing, ranged download; a restart keeps the bucket; delete-dir", async () => {
    const bytes = Uint8Array.from({ length: 300 }, (_, i) => i % 256);
    const b64 = Buffer.from(bytes).toString("base64");
    const up = await http(base, "POST", "/api/storage/resources", { key, body: { id: "media/2026/data.bin", content: b64, encoding: "base64" } });
    expect(up.status, JSON.stringify(up.body)).toBe(200);
    expect(up.body.data.resource).toMatchObject({ id: "media/2026/data.bin", size: 300, content_type: "application/octet-stream" });
    await http(base, "POST", "/api/storage/resources", { key, body: { id: "media/readme.txt", content: "hello" } });

    const level = await http(base, "GET", "/api/storage/resources?prefix=media/&recursive=false", { key });
    expect(level.body.data).toMatchObject({ items: [{ id: "media/readme.txt" }], dirs: ["media/2026"], next_cursor: null });

    const url = `${base}/api/storage/resources/${encodeURIComponent("media/2026/data.bin")}/content`;
    const part = await fetch(url, { headers: { "x-api-key": key, range: "bytes=256-" } });
    expect(part.status).toBe(206);
    expect(part.headers.get("content-range")).toBe("bytes 256-299/300");
    expect(part.headers.get("content-disposition")).toMatch(/^attachment; filename="data.bin"/);
    expect(part.headers.get("x-content-type-options")).toBe("nosniff");
    expect([...new Uint8Array(await part.arrayBuffer())]).toEqual([...bytes.slice(256)]);
    const beyond = await fetch(url, { headers: { "x-api-key": key, range: "bytes=300-" } });
    expect(beyond.status).toBe(416);
    await beyond.arrayBuffer();

    await dev.restart();
    const stat = await http(base, "GET", `/api/storage/resources/${encodeURIComponent("media/2026/data.bin")}/stat`, { key });
    expect(stat.status).toBe(200);
    expect(stat.body.data.etag).toBe(up.body.data.resource.etag);
    const kept = await http(base, "POST", "/api/render-template", { key, body: { id: "routes/payload.mustache", kwargs: { lang: "fr" } } });
    expect(kept.body.data.rendered).toContain('lang: "fr"');

    const gone = await http(base, "DELETE", "/api/storage/dirs/media", { key });
    expect(gone.body.data).toEqual({ removed: 2, dir: "media", complete: true });
    expect((await http(base, "GET", "/api/storage/resources?prefix=media/", { key })).body.data.items).toEqual([]);
  });

  it("tool metadata, plugins and the sandbox answer", async () => {
    const folder = await http(base, "POST", "/api/tool-meta/folders", { key, body: { name: "Language" } });
    expect(folder.status).toBe(200);
    const patched = await http(base, "PATCH", "/api/tool-meta/tools/lang-tool", { key, body: { tags: ["i18n"], folder_id: folder.body.data.folder_id } });
    expect(patched.body.data).toMatchObject({ name: "lang-tool", tags: ["i18n"], folder_id: folder.body.data.folder_id });
    const tags = await http(base, "GET", "/api/tools/tags", { key });
    expect(tags.body.data).toContainEqual({ name: "lang-tool", tags: ["i18n"], hidden: null, badges: [] });
    expect((await http(base, "GET", "/api/plugins", { key })).body.data).toMatchObject({ items: [], total: 0, storage: true });
    expect((await http(base, "GET", "/api/sandbox", { key })).body.data).toMatchObject({ present: false, provider: null });
  });
});

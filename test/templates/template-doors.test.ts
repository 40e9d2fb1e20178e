/**
 * The template doors (docs/templates.md): upload, list, fetch with inferred variables,
 * render by id or content, the per-isolate render cache, delete and delete-dir, grants, and 501
 * without a bucket.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { cachedTemplateCount, clearTemplateCache } from "../../src/templates/store";
import { BASE, admin, call, fetchWithEnv, mintKey, uniq } from "../helpers/http";

async function post(path: string, body: unknown, key?: string) {
  return call("POST", path, { key: key ?? (await admin()), body });
}

describe("upload, list, fetch", () => {
  it("stores a template under templates/ and fetches it with its variables and schema", async () => {
    const id = `${uniq("greet")}/welcome.mustache`;
    const up = await post("/api/upload-template", { id, content: "Hello {{name}}{{#vip}}, welcome back{{/vip}}" });
    expect(up.status).toBe(200);
    expect(up.body.data).toMatchObject({
      created: true,
      template: { id, resource_id: `templates/${id}`, variables: [{ name: "name" }, { name: "vip", kind: "section" }] },
    });
    const stored = await env.STORAGE.head(`templates/${id}`);
    expect(stored?.httpMetadata?.contentType).toBe("text/x-mustache; charset=utf-8");
    const got = await post("/api/template", { id });
    expect(got.status).toBe(200);
    expect(got.body.data).toEqual({
      id,
      resource_id: `templates/${id}`,
      size: 44,
      etag: expect.any(String),
      created_at: expect.any(String),
      updated_at: expect.any(String),
      content: "Hello {{name}}{{#vip}}, welcome back{{/vip}}",
      variables: [
        { name: "name", kind: "value", within: [] },
        { name: "vip", kind: "section", within: [] },
      ],
      schema: { type: "object", properties: { name: {}, vip: {} } },
    });
    expect((await post("/api/upload-template", { id, content: "Bye {{name}}" })).body.data.created).toBe(false);
  });

  it("refuses a template that does not parse (400) or is past 256 KiB (413), storing nothing", async () => {
    const id = uniq("bad");
    const r = await post("/api/upload-template", { id, content: "{{#open}} SECRETBODY" });
    expect(r.status).toBe(400);
    expect(r.body.error).toContain("does not parse as mustache");
    expect(r.body.error).not.toContain("SECRETBODY");
    expect((await post("/api/upload-template", { id, content: "x".repeat(256 * 1024 + 1) })).status).toBe(413);
    expect(await env.STORAGE.head(`templates/${id}`)).toBeNull();
    expect((await post("/api/upload-template", { id: "../x", content: "x" })).status).toBe(400);
    // A valid storage path that is too long once below templates/ (R2's 1024-byte key limit).
    const long = Array(4).fill("y".repeat(255)).join("/");
    const tooLong = await post("/api/upload-template", { id: long, content: "x" });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.error).toContain("too long or too deep below templates/");
    expect((await post("/api/template", { id: long })).status).toBe(400);
  });

  it("lists by id prefix with paging; the storage listing sees the same objects", async () => {
    const root = uniq("lst");
    for (const n of ["a", "b", "c"]) await post("/api/upload-template", { id: `${root}/${n}.mustache`, content: n });
    const key = await admin();
    const page1 = await call("GET", `/api/templates?prefix=${encodeURIComponent(`${root}/`)}&limit=2`, { key });
    expect(page1.status).toBe(200);
    expect(page1.body.data.items.map((t: any) => t.id)).toEqual([`${root}/a.mustache`, `${root}/b.mustache`]);
    const page2 = await call(
      "GET",
      `/api/templates?prefix=${encodeURIComponent(`${root}/`)}&limit=2&cursor=${encodeURIComponent(page1.body.data.next_cursor)}`,
      { key },
    );
    expect(page2.body.data).toMatchObject({ items: [{ id: `${root}/c.mustache` }], next_cursor: null });
    const raw = await call("GET", `/api/storage/resources?prefix=${encodeURIComponent(`templates/${root}/`)}`, { key });
    expect(raw.body.data.items).toHaveLength(3);
  });

  it("404 for an unknown template", async () => {
    expect((await post("/api/template", { id: "NOSUCHTEMPLATE" })).status).toBe(404);
    expect((await post("/api/render-template", { id: "NOSUCHTEMPLATE" })).status).toBe(404);
    expect((await post("/api/delete-template", { id: "NOSUCHTEMPLATE" })).status).toBe(404);
    expect((await post("/api/delete-template-dir", { dir: "NOSUCHTEMPLATE" })).status).toBe(404);
  });
});

describe("render", () => {
  it("renders by id or content with kwargs, without HTML escaping; exactly one of id or content", async () => {
    const id = uniq("r");
    await post("/api/upload-template", { id, content: '.x == "{{v}}"' });
    expect((await post("/api/render-template", { id, kwargs: { v: "a&b<c>" } })).body.data).toEqual({ rendered: '.x == "a&b<c>"' });
    expect((await post("/api/render-template", { content: "{{#xs}}[{{.}}]{{/xs}}", kwargs: { xs: [1, 2] } })).body.data).toEqual({ rendered: "[1][2]" });
    expect((await post("/api/render-template", { id, content: "x" })).status).toBe(400);
    expect((await post("/api/render-template", {})).status).toBe(400);
    expect((await post("/api/render-template", { content: "{{#a}}" })).status).toBe(400);
  });

  it("refuses a render past 1 MiB", async () => {
    const r = await post("/api/render-template", {
      content: "{{#xs}}{{#xs}}{{#xs}}xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx{{/xs}}{{/xs}}{{/xs}}",
      kwargs: { xs: Array(40).fill(1) },
    });
    expect(r.status).toBe(400);
    expect(r.body.error).toContain("rendered text exceeds");
  });

  it("caches by id and ETag: a changed template renders anew, clear-templates-cache empties this isolate's cache", async () => {
    clearTemplateCache();
    const id = uniq("cached");
    await post("/api/upload-template", { id, content: "v1 {{x}}" });
    expect((await post("/api/render-template", { id, kwargs: { x: 1 } })).body.data.rendered).toBe("v1 1");
    expect(cachedTemplateCount()).toBe(1);
    expect((await post("/api/render-template", { id, kwargs: { x: 2 } })).body.data.rendered).toBe("v1 2");
    // Replaced behind the doors' back (another isolate, or wrangler): the ETag moves, so it is re-read.
    await env.STORAGE.put(`templates/${id}`, "v2 {{x}}");
    expect((await post("/api/render-template", { id, kwargs: { x: 3 } })).body.data.rendered).toBe("v2 3");
    const cleared = await post("/api/clear-templates-cache", undefined);
    expect(cleared.status).toBe(200);
    expect(cleared.body.data).toEqual({ cleared: 1, scope: "isolate" });
    expect(cachedTemplateCount()).toBe(0);
    // Deleted: the cache never answers for a template that is gone.
    await post("/api/render-template", { id });
    await env.STORAGE.delete(`templates/${id}`);
    expect((await post("/api/render-template", { id })).status).toBe(404);
  });

  it("a stored template renders as a TemplatedText id (its resource_id)", async () => {
    const id = uniq("tt");
    const up = await post("/api/upload-template", { id, content: "{a: {{n}}}" });
    const got = await call("GET", `/api/resources/get?id=${encodeURIComponent(up.body.data.template.resource_id)}`, { key: await admin() });
    expect(got.body.data).toMatchObject({ content: "{a: {{n}}}", source: "storage" });
  });
});

describe("delete", () => {
  it("deletes one template, and a directory of them recursively", async () => {
    const root = uniq("rm");
    for (const n of ["x", "sub/y", "sub/deeper/z"]) await post("/api/upload-template", { id: `${root}/${n}`, content: n });
    expect((await post("/api/delete-template", { id: `${root}/x` })).body.data).toEqual({ removed: true, id: `${root}/x` });
    expect((await post("/api/delete-template-dir", { dir: `${root}/sub/` })).body.data).toEqual({ removed: 2, dir: `${root}/sub`, complete: true });
    expect((await env.STORAGE.list({ prefix: `templates/${root}/` })).objects).toHaveLength(0);
  });
});

describe("grants and configuration", () => {
  it("templates:read fetches, lists and renders; writes need templates:write", async () => {
    const reader = await mintKey({ scopes: ["templates:read"] });
    const id = uniq("g");
    expect((await post("/api/upload-template", { id, content: "x" }, reader.key)).status).toBe(403);
    await post("/api/upload-template", { id, content: "x" });
    expect((await post("/api/template", { id }, reader.key)).status).toBe(200);
    expect((await post("/api/render-template", { id }, reader.key)).status).toBe(200);
    expect((await call("GET", "/api/templates", { key: reader.key })).status).toBe(200);
    for (const [p, b] of [
      ["/api/delete-template", { id }],
      ["/api/delete-template-dir", { dir: "x" }],
      ["/api/clear-templates-cache", {}],
    ] as const) {
      expect((await post(p, b, reader.key)).status, p).toBe(403);
    }
    const storageOnly = await mintKey({ scopes: ["storage"] });
    expect((await post("/api/template", { id }, storageOnly.key)).status).toBe(403);
  });

  it("without a bucket: 501 storage-not-configured, except rendering given content and clearing the cache", async () => {
    const key = await admin();
    const off = { ...env, STORAGE_BUCKET: "" };
    const send = (method: string, path: string, body?: unknown) =>
      fetchWithEnv(
        off,
        new Request(`${BASE}${path}`, {
          method,
          headers: { "x-api-key": key, "content-type": "application/json" },
          body: body === undefined ? undefined : JSON.stringify(body),
        }),
      );
    for (const [method, path, body] of [
      ["GET", "/api/templates"],
      ["POST", "/api/template", { id: "a" }],
      ["POST", "/api/upload-template", { id: "a", content: "x" }],
      ["POST", "/api/delete-template", { id: "a" }],
      ["POST", "/api/delete-template-dir", { dir: "a" }],
      ["POST", "/api/render-template", { id: "a" }],
    ] as Array<[string, string, unknown?]>) {
      const res = await send(method, path, body);
      expect(res.status, path).toBe(501);
      expect(await res.json()).toMatchObject({ code: "storage-not-configured" });
    }
    expect((await send("POST", "/api/render-template", { content: "{{a}}", kwargs: { a: 1 } })).status).toBe(200);
    expect((await send("POST", "/api/clear-templates-cache")).status).toBe(200);
  });
});

/**
 * The storage doors against the R2 binding wrangler.toml declares (docs/storage.md):
 * identity, upload (text, base64, cap), list (prefix, paging, one level), stat, the raw download
 * (types, headers, ranges, If-None-Match), delete and delete-dir, path validation on the wire,
 * the admin-only plugins directory, and 501 without a bucket.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { BASE, admin, call, fetchWithEnv, mintKey, uniq, dispatch } from "../helpers/http";
import { must } from "../../src/platform/must";

const S = "/api/storage";
const enc = encodeURIComponent;

async function upload(body: Record<string, unknown>, key?: string) {
  return call("POST", `${S}/resources`, { key: key ?? (await admin()), body });
}

/** A GET through the Worker returning the raw Response (the content door is not JSON). */
async function get(path: string, headers: Record<string, string> = {}): Promise<Response> {
  return dispatch(`${BASE}${path}`, { headers: { "x-api-key": await admin(), ...headers } });
}

describe("GET /api/storage", () => {
  it("names the provider and the limits; says present: false without a bucket", async () => {
    const r = await call("GET", S, { key: await admin() });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({
      present: true,
      provider: "r2",
      binding: "STORAGE",
      max_upload_bytes: 786432,
      text_resource_max_bytes: 262144,
      admin_only_dir: "plugins",
    });
    const off = await fetchWithEnv({ ...env, STORAGE_BUCKET: "" }, new Request(`${BASE}${S}`, { headers: { "x-api-key": await admin() } }));
    expect(off.status).toBe(200);
    expect(((await off.json()) as any).data).toMatchObject({ present: false, provider: null, binding: null });
  });
});

describe("upload, stat, download", () => {
  it("stores text as UTF-8 with an inferred type; replacing keeps created_at", async () => {
    const id = `${uniq("docs")}/notes.md`;
    const first = await upload({ id, content: "# Hi ü" });
    expect(first.status).toBe(200);
    expect(first.body.data).toEqual({
      created: true,
      resource: {
        id,
        size: 7,
        content_type: "text/markdown; charset=utf-8",
        etag: expect.stringMatching(/^".+"$/),
        created_at: expect.any(String),
        updated_at: expect.any(String),
      },
    });
    await new Promise((r) => setTimeout(r, 5));
    const second = await upload({ id, content: "# Bye" });
    expect(second.body.data.created).toBe(false);
    expect(second.body.data.resource.created_at).toBe(first.body.data.resource.created_at);
    expect(second.body.data.resource.updated_at > first.body.data.resource.updated_at).toBe(true);
    const stat = await call("GET", `${S}/resources/${enc(id)}/stat`, { key: await admin() });
    expect(stat.status).toBe(200);
    expect(stat.body.data).toEqual(second.body.data.resource);
    const stored = await env.STORAGE.get(id);
    expect(await must(stored, "stored").text()).toBe("# Bye");
  });

  it("stores base64 bytes with the given type; refuses bad base64 and unknown fields", async () => {
    const id = `${uniq("img")}/dot.png`;
    const bytes = new Uint8Array([137, 80, 78, 71, 0, 255]);
    const r = await upload({ id, content: btoa(String.fromCharCode(...bytes)), encoding: "base64", content_type: "image/png" });
    expect(r.status).toBe(200);
    expect(r.body.data.resource).toMatchObject({ size: 6, content_type: "image/png" });
    const res = await get(`${S}/resources/${enc(id)}/content`);
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(bytes);
    expect((await upload({ id, content: "not base64!", encoding: "base64" })).status).toBe(400);
    expect((await upload({ id, content: "x", colour: "red" })).status).toBe(400);
    expect((await upload({ id, content: "x", content_type: "text/plain\r\nx: y" })).status).toBe(400);
  });

  it("without an id, mints a UUID path", async () => {
    const r = await upload({ content: "hello" });
    expect(r.body.data.resource.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(r.body.data.resource.content_type).toBe("text/plain; charset=utf-8");
  });

  it("refuses content past STORAGE_MAX_UPLOAD_BYTES with 413, storing nothing", async () => {
    const id = uniq("big");
    const res = await fetchWithEnv(
      { ...env, STORAGE_MAX_UPLOAD_BYTES: "10" },
      new Request(`${BASE}${S}/resources`, {
        method: "POST",
        headers: { "x-api-key": await admin(), "content-type": "application/json" },
        body: JSON.stringify({ id, content: "12345678901" }),
      }),
    );
    expect(res.status).toBe(413);
    expect(((await res.json()) as any).error).toContain("STORAGE_MAX_UPLOAD_BYTES");
    expect(await env.STORAGE.head(id)).toBeNull();
    // The setting is bounded by what one JSON body carries.
    const bad = await fetchWithEnv(
      { ...env, STORAGE_MAX_UPLOAD_BYTES: String(1024 * 1024) },
      new Request(`${BASE}${S}`, { headers: { "x-api-key": await admin() } }),
    );
    expect(bad.status).toBe(500);
    expect(((await bad.json()) as any).error).toContain("STORAGE_MAX_UPLOAD_BYTES must be a whole number from 1 to 786432");
  });

  it("downloads with the stored type, nosniff, a sandbox CSP, and inline only for safe types", async () => {
    const dir = uniq("dl");
    await upload({ id: `${dir}/a.txt`, content: "plain" });
    await upload({ id: `${dir}/page.html`, content: "<script>alert(1)</script>" });
    const txt = await get(`${S}/resources/${enc(`${dir}/a.txt`)}/content`);
    expect(txt.status).toBe(200);
    expect(txt.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect(txt.headers.get("content-disposition")).toBe(`inline; filename="a.txt"; filename*=UTF-8''a.txt`);
    expect(txt.headers.get("x-content-type-options")).toBe("nosniff");
    expect(txt.headers.get("content-security-policy")).toBe("default-src 'none'; sandbox");
    expect(txt.headers.get("accept-ranges")).toBe("bytes");
    expect(txt.headers.get("content-length")).toBe("5");
    expect(await txt.text()).toBe("plain");
    const html = await get(`${S}/resources/${enc(`${dir}/page.html`)}/content`);
    expect(html.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(html.headers.get("content-disposition")).toMatch(/^attachment; filename="page.html"/);
    await html.arrayBuffer();
  });

  it("answers byte ranges: a-b, a-, -n (206 with Content-Range), 416 past the end, 304 on a matching ETag", async () => {
    const id = `${uniq("rng")}/digits.txt`;
    const etag = (await upload({ id, content: "0123456789" })).body.data.resource.etag;
    const path = `${S}/resources/${enc(id)}/content`;
    for (const [range, text, cr] of [
      ["bytes=2-4", "234", "bytes 2-4/10"],
      ["bytes=7-", "789", "bytes 7-9/10"],
      ["bytes=-2", "89", "bytes 8-9/10"],
      ["bytes=8-100", "89", "bytes 8-9/10"],
    ]) {
      const r = await get(path, { range });
      expect(r.status, range).toBe(206);
      expect(r.headers.get("content-range")).toBe(cr);
      expect(r.headers.get("content-length")).toBe(String(text.length));
      expect(await r.text()).toBe(text);
    }
    const past = await get(path, { range: "bytes=10-" });
    expect(past.status).toBe(416);
    expect(past.headers.get("content-range")).toBe("bytes */10");
    expect(await past.json()).toEqual({ error: "range not satisfiable" });
    const ignored = await get(path, { range: "bytes=0-1,4-5" });
    expect(ignored.status).toBe(200);
    expect(await ignored.text()).toBe("0123456789");
    const same = await get(path, { "if-none-match": etag });
    expect(same.status).toBe(304);
    expect(same.headers.get("etag")).toBe(etag);
    const other = await get(path, { "if-none-match": '"other"' });
    expect(other.status).toBe(200);
    await other.arrayBuffer();
  });

  it("404 for an absent object on stat, content and delete; the message never echoes the path", async () => {
    const key = await admin();
    for (const [m, p] of [
      ["GET", `${S}/resources/NOSUCHPATH/stat`],
      ["GET", `${S}/resources/NOSUCHPATH/content`],
      ["DELETE", `${S}/resources/NOSUCHPATH`],
      ["DELETE", `${S}/dirs/NOSUCHPATH`],
    ]) {
      const r = await call(m, p, { key });
      expect(r.status, p).toBe(404);
      expect(JSON.stringify(r.body)).not.toContain("NOSUCHPATH");
    }
  });
});

describe("paths on the wire", () => {
  it("a path's / travel as %2F in one segment", async () => {
    const id = `${uniq("deep")}/a b/ü.txt`;
    await upload({ id, content: "x" });
    const r = await call("GET", `${S}/resources/${enc(id)}/stat`, { key: await admin() });
    expect(r.status).toBe(200);
    expect(r.body.data.id).toBe(id);
  });

  it("refuses traversal, empty segments, backslashes and control characters (400, value not echoed)", async () => {
    const key = await admin();
    for (const seg of ["..%2FSECRETX", "a%2F..%2FSECRETX", "%2FSECRETX", "a%2F%2FSECRETX", "a%5CSECRETX", "SECRETX%00", "SECRETX%0A", "SECRETX%2F"]) {
      const r = await call("GET", `${S}/resources/${seg}/stat`, { key });
      expect(r.status, seg).toBe(400);
      expect(JSON.stringify(r.body), seg).not.toContain("SECRETX");
    }
    for (const id of ["../SECRETX", "a/./SECRETX", "/SECRETX", "SECRETX\u0001"]) {
      const r = await upload({ id, content: "x" });
      expect(r.status, id).toBe(400);
      expect(r.body.error).toContain("id");
      expect(JSON.stringify(r.body)).not.toContain("SECRETX");
    }
  });
});

describe("listing", () => {
  it("lists under a prefix in key order, pages with a cursor, and one level with dirs", async () => {
    const root = uniq("ls");
    const ids = [`${root}/a.txt`, `${root}/b.txt`, `${root}/sub/c.txt`, `${root}/sub/deeper/d.txt`, `${root}x/other.txt`];
    for (const id of ids) await upload({ id, content: id });
    const key = await admin();
    const all = await call("GET", `${S}/resources?prefix=${enc(`${root}/`)}`, { key });
    expect(all.status).toBe(200);
    expect(all.body.data.items.map((i: any) => i.id)).toEqual(ids.slice(0, 4));
    expect(all.body.data).toMatchObject({ dirs: [], next_cursor: null });
    expect(Object.keys(all.body.data.items[0]).sort()).toEqual(["content_type", "created_at", "etag", "id", "size", "updated_at"]);

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const r: any = await call("GET", `${S}/resources?prefix=${enc(`${root}/`)}&limit=3${cursor ? `&cursor=${enc(cursor)}` : ""}`, { key });
      expect(r.status).toBe(200);
      seen.push(...r.body.data.items.map((i: any) => i.id));
      cursor = r.body.data.next_cursor;
      pages += 1;
    } while (cursor);
    expect(seen).toEqual(ids.slice(0, 4));
    expect(pages).toBe(2);

    const level = await call("GET", `${S}/resources?prefix=${enc(`${root}/`)}&recursive=false`, { key });
    expect(level.body.data.items.map((i: any) => i.id)).toEqual(ids.slice(0, 2));
    expect(level.body.data.dirs).toEqual([`${root}/sub`]);
  });

  it("400 for a bad prefix, limit or recursive flag, naming the field, never the value", async () => {
    const key = await admin();
    for (const q of ["prefix=..%2FSECRETX", "limit=0", "limit=1001", "limit=SECRETX", "recursive=SECRETX"]) {
      const r = await call("GET", `${S}/resources?${q}`, { key });
      expect(r.status, q).toBe(400);
      expect(JSON.stringify(r.body), q).not.toContain("SECRETX");
    }
  });
});

describe("delete", () => {
  it("deletes one object, and with it a D1 text resource of the same id", async () => {
    const id = uniq("del");
    await upload({ id, content: "x" });
    await env.DB.prepare("INSERT INTO text_resources (id, content, created_at, updated_at) VALUES (?, 'old', 'x', 'x')").bind(id).run();
    const r = await call("DELETE", `${S}/resources/${enc(id)}`, { key: await admin() });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({ removed: true, id });
    expect(await env.STORAGE.head(id)).toBeNull();
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM text_resources WHERE id = ?").bind(id).first("n")).toBe(0);
    // A D1-only resource is deleted too (the id stops resolving).
    const only = uniq("d1only");
    await env.DB.prepare("INSERT INTO text_resources (id, content, created_at, updated_at) VALUES (?, 'old', 'x', 'x')").bind(only).run();
    expect((await call("DELETE", `${S}/resources/${enc(only)}`, { key: await admin() })).status).toBe(200);
  });

  it("deletes a directory recursively, leaving its namesakes; 404 when empty", async () => {
    const root = uniq("tree");
    for (const id of [`${root}/a`, `${root}/b/c`, `${root}/b/d/e`, `${root}-sibling/x`]) await upload({ id, content: "x" });
    await env.DB.prepare("INSERT INTO text_resources (id, content, created_at, updated_at) VALUES (?, 'old', 'x', 'x')").bind(`${root}/legacy`).run();
    const r = await call("DELETE", `${S}/dirs/${enc(`${root}/`)}`, { key: await admin() });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({ removed: 4, dir: root, complete: true });
    expect((await env.STORAGE.list({ prefix: `${root}/` })).objects).toHaveLength(0);
    expect(await env.STORAGE.head(`${root}-sibling/x`)).not.toBeNull();
    expect((await call("DELETE", `${S}/dirs/${enc(root)}`, { key: await admin() })).status).toBe(404);
  });

  it("a big directory is deleted in bounded rounds: complete false until it is empty", async () => {
    const { deleteDir } = await import("../../src/storage/objects");
    const root = uniq("many");
    for (let i = 0; i < 5; i++) await env.STORAGE.put(`${root}/f${i}`, "x");
    expect(await deleteDir(env.STORAGE, root, 2)).toEqual({ removed: 2, complete: false });
    expect(await deleteDir(env.STORAGE, root, 2)).toEqual({ removed: 2, complete: false });
    expect(await deleteDir(env.STORAGE, root, 2)).toEqual({ removed: 1, complete: true });
  });
});

describe("who may write", () => {
  it("storage:read reads; storage:write writes, except under plugins/ (admin only)", async () => {
    const reader = await mintKey({ scopes: ["storage:read"] });
    const writer = await mintKey({ scopes: ["storage"] });
    const id = uniq("authz");
    expect((await upload({ id, content: "x" }, reader.key)).status).toBe(403);
    expect((await upload({ id, content: "x" }, writer.key)).status).toBe(200);
    expect((await call("GET", `${S}/resources/${id}/stat`, { key: reader.key })).status).toBe(200);
    expect((await call("DELETE", `${S}/resources/${id}`, { key: reader.key })).status).toBe(403);
    const page = `plugins/${uniq("ns")}/p/studio/index.html`;
    const denied = await upload({ id: page, content: "<p>x</p>" }, writer.key);
    expect(denied.status).toBe(403);
    expect(denied.body).toEqual({ error: "Forbidden" });
    expect(await env.STORAGE.head(page)).toBeNull();
    expect((await upload({ id: page, content: "<p>x</p>" })).status).toBe(200);
    expect((await call("DELETE", `${S}/resources/${enc(page)}`, { key: writer.key })).status).toBe(403);
    expect((await call("DELETE", `${S}/dirs/plugins`, { key: writer.key })).status).toBe(403);
    expect(await env.STORAGE.head(page)).not.toBeNull();
  });
});

describe("without a bucket", () => {
  it("every door but the identity answers 501 storage-not-configured", async () => {
    const key = await admin();
    const off = { ...env, STORAGE_BUCKET: "" };
    for (const [method, path, body] of [
      ["GET", `${S}/resources`],
      ["POST", `${S}/resources`, { id: "a", content: "x" }],
      ["GET", `${S}/resources/a/stat`],
      ["GET", `${S}/resources/a/content`],
      ["DELETE", `${S}/resources/a`],
      ["DELETE", `${S}/dirs/a`],
    ] as Array<[string, string, unknown?]>) {
      const res = await fetchWithEnv(
        off,
        new Request(`${BASE}${path}`, {
          method,
          headers: { "x-api-key": key, "content-type": "application/json" },
          body: body ? JSON.stringify(body) : undefined,
        }),
      );
      expect(res.status, `${method} ${path}`).toBe(501);
      expect(await res.json()).toMatchObject({ code: "storage-not-configured" });
    }
  });

  it("a STORAGE_BUCKET naming no binding is a configuration error (names the variable, not the value)", async () => {
    const res = await fetchWithEnv({ ...env, STORAGE_BUCKET: "NOSUCHBINDING" }, new Request(`${BASE}${S}`, { headers: { "x-api-key": await admin() } }));
    expect(res.status).toBe(500);
    const body = (await res.json()) as any;
    expect(body.error).toContain("STORAGE_BUCKET names an R2 binding that is not bound");
    expect(body.error).not.toContain("NOSUCHBINDING");
  });
});

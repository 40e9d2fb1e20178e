/**
 * Text resources (docs/storage.md "Text resources"): a TemplatedText `id` and
 * `/api/resources/get` resolve in the content store first, then in the D1 text resources; the
 * backup's text-resources section carries both, the stored object winning.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { resolveText } from "../../src/storage/text-resources";
import { renderTemplatedText, templatedTextSchema } from "../../src/templates/templated-text";
import { admin, call, uniq } from "../helpers/http";

async function d1Row(id: string, content: string) {
  await env.DB.prepare("INSERT INTO text_resources (id, content, created_at, updated_at) VALUES (?, ?, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')")
    .bind(id, content)
    .run();
}

const render = (id: string, kwargs: Record<string, unknown> = {}) => renderTemplatedText(env.DB, templatedTextSchema.parse({ id, kwargs }));

describe("resolution order", () => {
  it("the stored object shadows a D1 row of the same id; deleting it removes both", async () => {
    const key = await admin();
    const id = `${uniq("res")}/greeting.txt`;
    await d1Row(id, "old {{name}}");
    expect(await render(id, { name: "Ada" })).toBe("old Ada");
    expect((await call("GET", `/api/resources/get?id=${encodeURIComponent(id)}`, { key })).body.data).toMatchObject({
      id,
      content: "old {{name}}",
      source: "d1",
    });
    expect((await call("POST", "/api/storage/resources", { key, body: { id, content: "new {{name}}" } })).status).toBe(200);
    expect(await render(id, { name: "Ada" })).toBe("new Ada");
    const got = await call("POST", "/api/resources/get", { key, body: { id } });
    expect(got.body.data).toEqual({ id, content: "new {{name}}", created_at: expect.any(String), updated_at: expect.any(String), source: "storage" });
    expect((await call("DELETE", `/api/storage/resources/${encodeURIComponent(id)}`, { key })).status).toBe(200);
    await expect(render(id)).rejects.toMatchObject({ status: 404 });
  });

  it("without a bucket, only the D1 rows resolve", async () => {
    const id = uniq("both");
    await d1Row(id, "from d1");
    await env.STORAGE.put(id, "from storage");
    expect((await resolveText({ bucket: env.STORAGE, db: env.DB }, id))?.content).toBe("from storage");
    expect((await resolveText({ bucket: null, db: env.DB }, id))?.content).toBe("from d1");
  });

  it("an object that is not UTF-8 text, or bigger than 256 KiB, is refused with 400 (id not echoed)", async () => {
    const key = await admin();
    const bin = uniq("SECRETBIN");
    await env.STORAGE.put(bin, new Uint8Array([0xff, 0xfe, 0x00]));
    await expect(render(bin)).rejects.toMatchObject({ status: 400 });
    const r = await call("GET", `/api/resources/get?id=${bin}`, { key });
    expect(r.status).toBe(400);
    expect(r.body.error).toContain("not a text resource");
    expect(JSON.stringify(r.body)).not.toContain("SECRETBIN");
    const big = uniq("big");
    await env.STORAGE.put(big, "x".repeat(256 * 1024 + 1));
    expect((await call("GET", `/api/resources/get?id=${big}`, { key })).status).toBe(400);
  });

  it("an id that is no storage path (legacy spellings) still resolves in D1", async () => {
    const id = `${uniq("legacy")}/../x`;
    await d1Row(id, "legacy text");
    expect(await render(id)).toBe("legacy text");
  });

  it("a route's payload_expr by id renders from storage at create", async () => {
    const key = await admin();
    const id = `${uniq("expr")}/payload.jq`;
    await call("POST", "/api/storage/resources", { key, body: { id, content: '{message: ("{{greeting}}, " + .message)}' } });
    const route = uniq("r").toLowerCase();
    const r = await call("POST", `/api/conversations/${route}`, {
      key,
      body: { door: "api", target_kind: "tool", target_name: "echo", execution_key: "root", payload_expr: { id, kwargs: { greeting: "hi" } } },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const sent = await call("POST", `/api/conversations/${route}/messages`, { key, body: { external_user_id: "u1", text: "there", wait_seconds: 10 } });
    expect(sent.body.data).toMatchObject({ status: "answered", answer: "hi, there" });
  });
});

describe("the backup's text-resources section", () => {
  it("exports D1 rows and stored text objects (storage winning), not binary ones nor plugin assets", async () => {
    const key = await admin();
    const root = uniq("bk");
    await d1Row(`${root}/d1-only`, "d1 text");
    await d1Row(`${root}/both`, "d1 loses");
    await call("POST", "/api/storage/resources", { key, body: { id: `${root}/both`, content: "storage wins" } });
    await call("POST", "/api/storage/resources", { key, body: { id: `${root}/t.json`, content: "{}" } });
    await call("POST", "/api/upload-template", { key, body: { id: `${root}/hello.mustache`, content: "Hello {{name}}" } });
    await call("POST", "/api/storage/resources", { key, body: { id: `${root}/bin.png`, content: "iVBORw0K", encoding: "base64" } });
    await call("POST", "/api/storage/resources", { key, body: { id: `${root}/blob`, content: "AAEC", encoding: "base64" } });
    await call("POST", "/api/storage/resources", { key, body: { id: `plugins/${root}/studio/index.html`, content: "<p>x</p>" } });
    await call("POST", "/api/storage/resources", { key, body: { id: `${root}/with space.txt`, content: "not a row id" } });
    const r = await call("POST", "/api/backup/export", { key, body: { sections: ["text-resources"] } });
    expect(r.status).toBe(200);
    const rows = (r.body.sections["text-resources"] as Array<{ id: string; content: string }>).filter((x) => x.id.includes(root));
    expect(rows.map((x) => [x.id, x.content])).toEqual([
      [`${root}/both`, "storage wins"],
      [`${root}/d1-only`, "d1 text"],
      [`${root}/t.json`, "{}"],
      [`templates/${root}/hello.mustache`, "Hello {{name}}"],
    ]);
  });
});

describe("a state whose schema is a stored text resource", () => {
  it("imports from a backup without a text-resources section: the id resolves in the content store", async () => {
    const key = await admin();
    const id = `${uniq("schemas")}/profile.json`;
    const schema = JSON.stringify({ type: "object", properties: { name: { type: "string" } } });
    expect((await call("POST", "/api/storage/resources", { key, body: { id, content: schema } })).status).toBe(200);
    const name = uniq("stored_schema").replace(/-/g, "_");
    const declared = await call("PUT", `/api/states/${name}`, { key, body: { description: "schema from storage", schema: { id }, subject_kinds: ["thread"] } });
    expect(declared.status, JSON.stringify(declared.body)).toBe(200);
    const doc = (await call("POST", "/api/backup/export", { key, body: { sections: ["states"] } })).body; // the bare document
    const imported = await call("POST", "/api/backup/import", { key, body: { document: doc, sections: ["states"] } });
    expect(imported.status, JSON.stringify(imported.body)).toBe(200);
  });
});

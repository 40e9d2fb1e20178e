/** Custom URL scopes: the doors, and a key listing a scope getting exactly its URLs (docs/access-control.md). */
import { describe, expect, it } from "vitest";
import { D1Counter, countedFetch } from "../helpers/d1-count";
import { admin, call, mintKey, uniq } from "../helpers/http";

const scopeId = () =>
  uniq("sc")
    .toLowerCase()
    .replace(/[^a-z0-9_.-]/g, "-");

async function addUrl(scope_id: string, url: string, pattern?: boolean) {
  const r = await call("POST", "/api/auth/scopes", { key: await admin(), body: { scope_id, url, ...(pattern === undefined ? {} : { pattern }) } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data;
}

describe("custom scope doors", () => {
  it("adds URLs (creating the scope), lists, removes a URL everywhere, deletes a scope", async () => {
    const key = await admin();
    const a = scopeId();
    const b = scopeId();
    const first = await addUrl(a, "/api/tools");
    expect(first).toMatchObject({ scope_id: a, added: true, scope: { scope_id: a, urls: [{ url: "/api/tools", pattern: false }] } });
    expect((await addUrl(a, "/api/tools")).added).toBe(false);
    const repattern = await addUrl(a, "/api/presets/**", true);
    expect(repattern.scope.urls.map((u: { url: string; pattern: boolean }) => [u.url, u.pattern])).toEqual([
      ["/api/presets/**", true],
      ["/api/tools", false],
    ]);
    await addUrl(b, "/api/tools");

    const list = await call("GET", "/api/auth/scopes?pageSize=200", { key });
    const ids = list.body.data.items.map((s: { scope_id: string }) => s.scope_id);
    expect(ids).toEqual(expect.arrayContaining([a, b]));

    const gone = await call("DELETE", `/api/auth/scopes/urls?url=${encodeURIComponent("/api/tools")}`, { key });
    expect(gone.body.data.removed_from).toEqual(expect.arrayContaining([a, b]));
    // b had only that URL, so b no longer exists.
    expect((await call("DELETE", `/api/auth/scopes/${b}`, { key })).status).toBe(404);
    expect((await call("DELETE", `/api/auth/scopes/urls?url=${encodeURIComponent("/api/tools")}`, { key })).status).toBe(404);
    expect((await call("DELETE", `/api/auth/scopes/${a}`, { key })).body.data).toEqual({ scope_id: a, removed: true, urls: 1 });
  });

  it("refuses ids that collide with the tag grammar and malformed URLs (400, never echoing them)", async () => {
    const key = await admin();
    for (const scope_id of ["tools", "auth", "*", "tool:echo", "tools:read", "urls", "Caps"]) {
      const r = await call("POST", "/api/auth/scopes", { key, body: { scope_id, url: "/api/tools" } });
      expect(r.status, scope_id).toBe(400);
      expect(r.body.error).toContain("scope_id");
    }
    for (const [url, pattern] of [
      ["/api/x*", true],
      ["/api/*", false],
      ["no-slash-url-zz", false],
      ["/api/**/x", true],
    ] as const) {
      const r = await call("POST", "/api/auth/scopes", { key, body: { scope_id: scopeId(), url, pattern } });
      expect(r.status, url).toBe(400);
      expect(r.body.error).toContain("url");
      expect(r.body.error).not.toContain(url);
    }
  });

  it("changes are admin-only; the listing needs auth:read", async () => {
    const writer = await mintKey({ scopes: ["auth"] });
    expect((await call("POST", "/api/auth/scopes", { key: writer.key, body: { scope_id: scopeId(), url: "/api/tools" } })).status).toBe(403);
    expect((await call("DELETE", `/api/auth/scopes/${scopeId()}`, { key: writer.key })).status).toBe(403);
    expect((await call("GET", "/api/auth/scopes", { key: writer.key })).status).toBe(200);
    expect((await call("GET", "/api/auth/scopes", { key: (await mintKey({ scopes: ["tools"] })).key })).status).toBe(403);
  });
});

describe("a key listing a custom scope", () => {
  it("gets exactly the scope's URLs, with any method, and nothing else", async () => {
    const id = scopeId();
    await addUrl(id, "/api/resources/get");
    await addUrl(id, "/api/tools/*/schema", true);
    const k = await mintKey({ scopes: [id] });
    expect((await call("GET", "/api/resources/get?id=absent", { key: k.key })).status).toBe(404);
    expect((await call("POST", "/api/resources/get", { key: k.key, body: { id: "absent" } })).status).toBe(404);
    expect((await call("GET", "/api/tools/echo/schema", { key: k.key })).status).toBe(200);
    // Not listed: refused.
    expect((await call("GET", "/api/tools", { key: k.key })).status).toBe(403);
    expect((await call("GET", "/api/tools/echo/schema/extra", { key: k.key })).status).toBe(404);
    expect((await call("GET", "/api/presets", { key: k.key })).status).toBe(403);
    expect((await call("POST", "/api/storage/resources", { key: k.key, body: { content: "x" } })).status).toBe(403);
  });

  it("never opens an admin-only door", async () => {
    const id = scopeId();
    await addUrl(id, "/api/run-tool");
    await addUrl(id, "/api/auth/roles");
    const k = await mintKey({ scopes: [id] });
    expect((await call("POST", "/api/run-tool", { key: k.key, body: { tool_name: "echo", arguments: { message: "x" } } })).status).toBe(403);
    expect((await call("POST", "/api/auth/roles", { key: k.key, body: { name: "nope" } })).status).toBe(403);
    // The non-admin door at the same path is open.
    expect((await call("GET", "/api/auth/roles", { key: k.key })).status).toBe(200);
  });

  it("is bounded by the key's role, condition and owner like any grant", async () => {
    const id = scopeId();
    await addUrl(id, "/api/tools");
    const conditioned = await mintKey({ scopes: [id], condition: '.request.method == "POST"' });
    expect((await call("GET", "/api/tools", { key: conditioned.key })).status).toBe(403);
    const owner = await mintKey({ scopes: ["auth"] });
    // The owner can hand out only scopes it holds: a custom scope it lacks is refused.
    expect((await call("POST", "/api/auth/api-keys", { key: owner.key, body: { user_id: uniq("u"), scopes: [id] } })).status).toBe(403);
    await call("POST", `/api/auth/api-keys/${owner.user_id}/scopes`, { key: await admin(), body: { add: [id] } });
    const owned = await mintKey({ scopes: [id] }, owner.key);
    expect((await call("GET", "/api/tools", { key: owned.key })).status).toBe(200);
    // The owner loses the scope: the owned key loses the URL with it.
    await call("POST", `/api/auth/api-keys/${owner.user_id}/scopes`, { key: await admin(), body: { remove: [id] } });
    expect((await call("GET", "/api/tools", { key: owned.key })).status).toBe(403);
  });

  it("is live: a URL added or removed reaches the key's next request; a deleted scope grants nothing", async () => {
    const id = scopeId();
    await addUrl(id, "/api/resources/get");
    const k = await mintKey({ scopes: [id] });
    expect((await call("GET", "/api/tools", { key: k.key })).status).toBe(403);
    await addUrl(id, "/api/tools");
    expect((await call("GET", "/api/tools", { key: k.key })).status).toBe(200);
    await call("DELETE", `/api/auth/scopes/${id}`, { key: await admin() });
    expect((await call("GET", "/api/tools", { key: k.key })).status).toBe(403);
    // The key keeps the id.
    expect((await call("GET", "/api/auth/me", { key: k.key })).body.data.scopes).toEqual([id]);
  });

  it("mint, edit and scope adds refuse scope ids that do not exist (400)", async () => {
    const key = await admin();
    const missing = scopeId();
    const mint = await call("POST", "/api/auth/api-keys", { key, body: { user_id: uniq("u"), scopes: ["tools:read", missing] } });
    expect(mint.status).toBe(400);
    expect(mint.body.error).toContain("scopes.1");
    const k = await mintKey({ scopes: [] });
    expect((await call("PUT", `/api/auth/api-keys/${k.user_id}`, { key, body: { scopes: [missing] } })).status).toBe(400);
    expect((await call("POST", `/api/auth/api-keys/${k.user_id}/scopes`, { key, body: { add: [missing] } })).status).toBe(400);
    // Removing an id that no longer exists is fine.
    expect((await call("POST", `/api/auth/api-keys/${k.user_id}/scopes`, { key, body: { remove: [missing] } })).status).toBe(200);
  });

  it("costs no extra D1 round trip", async () => {
    const id = scopeId();
    await addUrl(id, "/api/auth/validate-condition");
    const k = await mintKey({ scopes: [id] });
    const counter = new D1Counter();
    const answer = await countedFetch(counter, "POST", "/api/auth/validate-condition", {
      headers: { "x-api-key": k.key, "content-type": "application/json" },
      body: JSON.stringify({ condition: "true", sample_context: {} }),
    });
    expect(answer.status, answer.text).toBe(200);
    expect(counter.count("worker"), counter.describe()).toEqual({ roundTrips: 1, statements: 1 });
  });

  it("shows in the route listing for the doors its URLs reach", async () => {
    const id = scopeId();
    await addUrl(id, "/api/tools/**", true);
    const routes = await call("GET", "/api/auth/routes", { key: await admin() });
    const at = (method: string, path: string) => routes.body.data.find((r: { method: string; path: string }) => r.method === method && r.path === path);
    expect(at("GET", "/api/tools/{tool_name}/schema").scopes).toContain(id);
    expect(at("GET", "/api/tools").scopes).toContain(id);
    expect(at("GET", "/api/presets").scopes).not.toContain(id);
    // An admin-only door lists only "*".
    expect(at("POST", "/api/tools-config/entries").scopes).toEqual(["*"]);
  });
});

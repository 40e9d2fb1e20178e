import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { bindExecutionKey, authorizeTurn } from "../../src/access-control/pass-role";
import { authenticate } from "../../src/access-control/principal";
import { sha256Hex } from "../../src/access-control/crypto";
import { BOOTSTRAP_TOKEN, admin, call, mintKey, uniq } from "../helpers/http";

describe("bootstrap", () => {
  it("mints one admin, then 409; wrong tokens 403 then back off with 429", async () => {
    const key = await admin();
    expect(key).toMatch(/^sk-[A-Za-z0-9_-]{43}$/);
    const again = await call("POST", "/api/keys/bootstrap", { body: { user_id: "x", bootstrap_token: BOOTSTRAP_TOKEN } });
    expect(again.status).toBe(409);
    expect(again.body).toEqual({ error: "Already initialized" });
    const ip = { "cf-connecting-ip": `10.9.${Math.floor(Math.random() * 200)}.1` };
    const wrong = await call("POST", "/api/keys/bootstrap", { headers: ip, body: { user_id: "x", bootstrap_token: "nope" } });
    expect(wrong.status).toBe(403);
    expect(wrong.body).toEqual({ error: "Forbidden" });
    const throttled = await call("POST", "/api/keys/bootstrap", { headers: ip, body: { user_id: "x", bootstrap_token: "nope" } });
    expect(throttled.status).toBe(429);
    expect(Number(throttled.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
  });

  it("stores only the SHA-256 of the key", async () => {
    const key = await admin();
    const rows = await env.DB.prepare("SELECT * FROM api_keys").all();
    const dump = JSON.stringify(rows.results);
    expect(dump).not.toContain(key);
    expect(dump).toContain(await sha256Hex(key));
  });
});

describe("401/403 matrix", () => {
  it("missing key → 401 Authentication required; bad key → 401 Unauthorized", async () => {
    expect(await call("GET", "/api/auth/me")).toMatchObject({ status: 401, body: { error: "Authentication required" } });
    expect(await call("GET", "/api/auth/me", { key: "sk-not-a-key" })).toMatchObject({ status: 401, body: { error: "Unauthorized" } });
  });

  it("accepts Authorization: Bearer", async () => {
    const r = await call("GET", "/api/auth/me", { key: await admin(), bearer: true });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ user_id: "root", admin: true, scopes: ["*"], owner_user_id: null });
  });

  it("revoked key → 401; re-minting the same user_id gives a new fingerprint", async () => {
    const k = await mintKey({ scopes: ["resources:read"] });
    expect((await call("GET", "/api/auth/me", { key: k.key })).status).toBe(200);
    const del = await call("DELETE", `/api/auth/api-keys/${k.user_id}`, { key: await admin() });
    expect(del).toMatchObject({ status: 200, body: { data: { user_id: k.user_id, revoked: true } } });
    expect((await call("GET", "/api/auth/me", { key: k.key })).status).toBe(401);
    const again = await mintKey({ user_id: k.user_id, scopes: ["resources:read"] });
    expect(again.fingerprint).not.toBe(k.fingerprint);
  });

  it("duplicate user_id → 409", async () => {
    const k = await mintKey({ scopes: [] });
    const r = await call("POST", "/api/auth/api-keys", { key: await admin(), body: { user_id: k.user_id, scopes: [] } });
    expect(r.status).toBe(409);
  });

  it("scope too narrow → 403; write implies read", async () => {
    const reader = await mintKey({ scopes: ["resources:read"] });
    expect((await call("GET", "/api/resources/get?id=x", { key: reader.key })).status).toBe(404);
    const w = await call("POST", "/api/storage/resources", { key: reader.key, body: { content: "x" } });
    expect(w).toMatchObject({ status: 403, body: { error: "Forbidden" } });
  });

  it("condition false → 403; condition erroring → 403; condition true → allowed", async () => {
    const allow = await mintKey({ scopes: ["resources"], condition: '.request.method == "GET"' });
    const deny = await mintKey({ scopes: ["resources"], condition: '.sub == "someone-else"' });
    const broken = await mintKey({ scopes: ["resources"], condition: 'error("boom")' });
    expect((await call("GET", "/api/resources/get?id=x", { key: allow.key })).status).toBe(404);
    expect((await call("POST", "/api/resources/get", { key: allow.key, body: { id: "x" } })).status).toBe(403);
    expect((await call("GET", "/api/resources/get?id=x", { key: deny.key })).status).toBe(403);
    expect((await call("GET", "/api/resources/get?id=x", { key: broken.key })).status).toBe(403);
  });

  it("a condition that does not compile is refused at mint", async () => {
    const r = await call("POST", "/api/auth/api-keys", { key: await admin(), body: { user_id: uniq("u"), scopes: [], condition: ".a |" } });
    expect(r.status).toBe(400);
    expect(r.body.error).toContain("condition");
  });

  it("disabled key → 401; disabled owner → owned key 401", async () => {
    const owner = await mintKey({ scopes: ["auth", "resources"] });
    const owned = await mintKey({ scopes: ["resources:read"] }, owner.key);
    expect((await call("GET", "/api/auth/me", { key: owned.key })).body.data).toMatchObject({ owner_user_id: owner.user_id, admin: false });
    expect((await call("GET", "/api/resources/get?id=x", { key: owned.key })).status).toBe(404);
    const off = await call("PUT", `/api/auth/api-keys/${owner.user_id}`, { key: await admin(), body: { disabled: true } });
    expect(off.status).toBe(200);
    expect(off.body.data.disabled).toBe(true);
    expect((await call("GET", "/api/auth/me", { key: owner.key })).status).toBe(401);
    expect((await call("GET", "/api/resources/get?id=x", { key: owned.key })).status).toBe(401);
  });

  it("owned key's scopes are bounded by the owner's current scopes", async () => {
    const owner = await mintKey({ scopes: ["auth", "resources"] });
    const owned = await mintKey({ scopes: ["resources:read"] }, owner.key);
    expect((await call("GET", "/api/resources/get?id=x", { key: owned.key })).status).toBe(404);
    const narrowed = await call("POST", `/api/auth/api-keys/${owner.user_id}/scopes`, { key: await admin(), body: { remove: ["resources"] } });
    expect(narrowed.body.data.scopes).toEqual(["auth"]);
    expect((await call("GET", "/api/resources/get?id=x", { key: owned.key })).status).toBe(403);
  });

  it("an owner's own condition bounds its owned keys, over the owner's input with the owned key's request", async () => {
    const key = await admin();
    const owner = await mintKey({ scopes: ["auth", "tools", "presets"] });
    const owned = await mintKey({ scopes: ["tools:read", "presets:read"] }, owner.key);
    expect((await call("GET", "/api/presets", { key: owned.key })).status).toBe(200);
    // A path limit on the owner: its keys get no door outside it either.
    await call("PUT", `/api/auth/api-keys/${owner.user_id}`, { key, body: { condition: '.request.path | startswith("/api/tools")' } });
    expect((await call("GET", "/api/tools", { key: owned.key })).status).toBe(200);
    expect(await call("GET", "/api/presets", { key: owned.key })).toMatchObject({ status: 403, body: { error: "Forbidden" } });
    // me runs the same authorizer on every door: it lists the tools doors, not the presets ones.
    const me = await call("GET", "/api/auth/me", { key: owned.key });
    const paths = me.body.data.routes.map((r: { path: string }) => r.path);
    expect(paths).toContain("/api/tools");
    expect(paths).not.toContain("/api/presets");
    // A time window that has closed for the owner has closed for its keys.
    await call("PUT", `/api/auth/api-keys/${owner.user_id}`, { key, body: { condition: '.system.time < "2000-01-01"' } });
    expect((await call("GET", "/api/tools", { key: owned.key })).status).toBe(403);
    expect((await call("GET", "/api/auth/me", { key: owned.key })).body.data.routes.filter((r: { path: string }) => r.path === "/api/tools")).toEqual([]);
    // The condition reads the owner's own identity: written about the owner, it still lets its keys in.
    await call("PUT", `/api/auth/api-keys/${owner.user_id}`, {
      key,
      body: { condition: `.sub == "${owner.user_id}" and (.scopes | index("presets") != null)` },
    });
    expect((await call("GET", "/api/presets", { key: owned.key })).status).toBe(200);
    // The owned key's own condition still applies alongside.
    await call("PUT", `/api/auth/api-keys/${owned.user_id}`, { key, body: { condition: "false" } });
    expect((await call("GET", "/api/presets", { key: owned.key })).status).toBe(403);
  });

  it("admin-only door with a non-admin key → 403", async () => {
    const wide = await mintKey({ scopes: ["auth"] });
    // Minting for another owner is admin-only.
    const other = await mintKey({ scopes: [] });
    const r = await call("POST", "/api/auth/api-keys", { key: wide.key, body: { user_id: uniq("u"), scopes: [], owner_user_id: other.user_id } });
    expect(r.status).toBe(403);
  });

  it("a non-admin cannot mint scopes it lacks; an owned key cannot mint at all", async () => {
    const minter = await mintKey({ scopes: ["auth", "resources:read"] });
    expect((await call("POST", "/api/auth/api-keys", { key: minter.key, body: { user_id: uniq("u"), scopes: ["resources"] } })).status).toBe(403);
    const child = await mintKey({ scopes: ["auth"] }, minter.key);
    expect((await call("POST", "/api/auth/api-keys", { key: child.key, body: { user_id: uniq("u"), scopes: [] } })).status).toBe(403);
  });

  it("a non-admin manages only keys it owns (uniform 403 otherwise)", async () => {
    const a = await mintKey({ scopes: ["auth"] });
    const stranger = await mintKey({ scopes: [] });
    expect((await call("DELETE", `/api/auth/api-keys/${stranger.user_id}`, { key: a.key })).status).toBe(403);
    expect((await call("DELETE", `/api/auth/api-keys/absent-${uniq("x")}`, { key: a.key })).status).toBe(403);
    expect((await call("DELETE", `/api/auth/api-keys/absent-${uniq("x")}`, { key: await admin() })).status).toBe(404);
    const mine = await mintKey({ scopes: [] }, a.key);
    expect((await call("PUT", `/api/auth/api-keys/${mine.user_id}`, { key: a.key, body: { description: "renamed" } })).body.data.description).toBe("renamed");
    expect((await call("PUT", `/api/auth/api-keys/${mine.user_id}`, { key: a.key, body: { owner_user_id: null } })).status).toBe(403);
  });

  it("revoking an owner also revokes its owned keys", async () => {
    const owner = await mintKey({ scopes: ["auth", "resources"] });
    const owned = await mintKey({ scopes: ["resources:read"] }, owner.key);
    await call("DELETE", `/api/auth/api-keys/${owner.user_id}`, { key: await admin() });
    await mintKey({ user_id: owner.user_id, scopes: ["auth", "resources"] });
    expect((await call("GET", "/api/auth/me", { key: owned.key })).status).toBe(401);
  });
});

describe("pass-role bind and the live turn authorizer", () => {
  async function principal(key: string) {
    return authenticate(env, key);
  }

  it("admin binds any existing key (absent → 404); returns the fingerprint", async () => {
    const k = await mintKey({ scopes: ["tool:echo"] });
    const p = await principal(await admin());
    expect(await bindExecutionKey(env.DB, p, k.user_id)).toBe(k.fingerprint);
    await expect(bindExecutionKey(env.DB, p, "absent-key")).rejects.toMatchObject({ status: 404 });
  });

  it("a non-admin binds itself or keys it owns; otherwise a uniform 403", async () => {
    const me = await mintKey({ scopes: ["auth", "tools"] });
    const mine = await mintKey({ scopes: ["tool:echo"] }, me.key);
    const foreign = await mintKey({ scopes: ["tool:echo"] });
    const p = await principal(me.key);
    expect(await bindExecutionKey(env.DB, p, me.user_id)).toBe(me.fingerprint);
    expect(await bindExecutionKey(env.DB, p, mine.user_id)).toBe(mine.fingerprint);
    await expect(bindExecutionKey(env.DB, p, foreign.user_id)).rejects.toMatchObject({ status: 403, message: "Forbidden" });
    await expect(bindExecutionKey(env.DB, p, "absent-key")).rejects.toMatchObject({ status: 403, message: "Forbidden" });
  });

  it("refuses a key whose condition needs a request (400)", async () => {
    const k = await mintKey({ scopes: ["tool:echo"], condition: '.request.path | startswith("/api")' });
    await expect(bindExecutionKey(env.DB, await principal(await admin()), k.user_id)).rejects.toMatchObject({ status: 400 });
  });

  it("authorizeTurn re-reads the key live and denies each attenuation", async () => {
    const k = await mintKey({ scopes: ["tool:echo"], condition: '.sub | startswith("user")' });
    const grant = { kind: "tool" as const, name: "echo" };
    expect((await authorizeTurn(env.DB, k.user_id, k.fingerprint, grant)).ok).toBe(true);
    expect(await authorizeTurn(env.DB, k.user_id, k.fingerprint, { kind: "tool", name: "other" })).toMatchObject({ ok: false });
    expect(await authorizeTurn(env.DB, k.user_id, "stale-fingerprint", grant)).toMatchObject({ ok: false, reason: expect.stringContaining("re-minted") });
    const adminKey = await admin();
    await call("PUT", `/api/auth/api-keys/${k.user_id}`, { key: adminKey, body: { condition: 'error("x")' } });
    expect(await authorizeTurn(env.DB, k.user_id, k.fingerprint, grant)).toMatchObject({ ok: false, reason: expect.stringContaining("condition") });
    await call("PUT", `/api/auth/api-keys/${k.user_id}`, { key: adminKey, body: { condition: null, disabled: true } });
    expect(await authorizeTurn(env.DB, k.user_id, k.fingerprint, grant)).toMatchObject({ ok: false, reason: expect.stringContaining("disabled") });
    await call("DELETE", `/api/auth/api-keys/${k.user_id}`, { key: adminKey });
    expect(await authorizeTurn(env.DB, k.user_id, k.fingerprint, grant)).toMatchObject({ ok: false, reason: expect.stringContaining("no longer exists") });
  });

  it("an owned key's turns are bounded by its owner's condition; binding refuses one whose owner's condition needs a request", async () => {
    const adminKey = await admin();
    const owner = await mintKey({ scopes: ["auth", "tools"] });
    const owned = await mintKey({ scopes: ["tool:echo"] }, owner.key);
    const grant = { kind: "tool" as const, name: "echo" };
    await call("PUT", `/api/auth/api-keys/${owner.user_id}`, { key: adminKey, body: { condition: `.sub == "${owner.user_id}"` } });
    expect((await authorizeTurn(env.DB, owned.user_id, owned.fingerprint, grant)).ok).toBe(true);
    await call("PUT", `/api/auth/api-keys/${owner.user_id}`, { key: adminKey, body: { condition: '.system.time < "2000-01-01"' } });
    expect(await authorizeTurn(env.DB, owned.user_id, owned.fingerprint, grant)).toMatchObject({
      ok: false,
      reason: expect.stringContaining("owner's condition"),
    });
    await call("PUT", `/api/auth/api-keys/${owner.user_id}`, { key: adminKey, body: { condition: '.request.path | startswith("/api")' } });
    const bind = bindExecutionKey(env.DB, await principal(adminKey), owned.user_id);
    await expect(bind).rejects.toMatchObject({ status: 400, message: expect.stringContaining("owner's condition") });
  });

  it("authorizeTurn denies when the owner loses the grant or is disabled", async () => {
    const owner = await mintKey({ scopes: ["auth", "tools"] });
    const owned = await mintKey({ scopes: ["tool:echo"] }, owner.key);
    const grant = { kind: "tool" as const, name: "echo" };
    expect((await authorizeTurn(env.DB, owned.user_id, owned.fingerprint, grant)).ok).toBe(true);
    await call("POST", `/api/auth/api-keys/${owner.user_id}/scopes`, { key: await admin(), body: { remove: ["tools"] } });
    expect((await authorizeTurn(env.DB, owned.user_id, owned.fingerprint, grant)).ok).toBe(false);
  });
});

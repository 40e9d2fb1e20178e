/**
 * Login (docs/login.md): `GET /api/login/methods` (public, with the bootstrap flag) and
 * `POST /api/auth/logout` (the calling key revokes itself).
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { BASE, admin, call, fetchWithEnv, mintKey } from "../helpers/http";

async function methodsWith(vars: Record<string, unknown>) {
  const res = await fetchWithEnv({ ...env, ...vars }, new Request(`${BASE}/api/login/methods`));
  return { status: res.status, body: (await res.json()) as any };
}

describe("GET /api/login/methods", () => {
  // First in the file: this file's D1 holds no key until admin() bootstraps one.
  it("is public; bootstrap is true while the token is set and no key exists, false after bootstrap", async () => {
    const before = await call("GET", "/api/login/methods");
    expect(before).toMatchObject({ status: 200, body: { data: { methods: ["api-key", "claim-link"], bootstrap: true } } });
    // Without a bootstrap token, bootstrap is closed even on an empty database.
    expect(await methodsWith({ ACCESS_CONTROL_BOOTSTRAP_TOKEN: "" })).toMatchObject({ status: 200, body: { data: { bootstrap: false } } });
    expect(await methodsWith({ ACCESS_CONTROL_BOOTSTRAP_TOKEN: undefined })).toMatchObject({ status: 200, body: { data: { bootstrap: false } } });

    await admin();
    expect((await call("GET", "/api/login/methods")).body.data).toEqual({ methods: ["api-key", "claim-link"], bootstrap: false });
    expect((await methodsWith({})).body.data.bootstrap).toBe(false);
    // A key changes nothing on a public door.
    expect((await call("GET", "/api/login/methods", { key: await admin() })).body.data.bootstrap).toBe(false);
  });
});

describe("POST /api/auth/logout", () => {
  it("revokes the calling key and the keys it owns; the next request is 401", async () => {
    const k = await mintKey({ scopes: ["auth", "tools:read"] });
    const owned = await mintKey({ scopes: ["tools:read"] }, k.key);
    const out = await call("POST", "/api/auth/logout", { key: k.key, body: { user_id: k.user_id } });
    expect(out).toMatchObject({ status: 200, body: { data: { user_id: k.user_id, revoked: true } } });
    expect(await call("GET", "/api/auth/me", { key: k.key })).toMatchObject({ status: 401, body: { error: "Unauthorized" } });
    expect((await call("GET", "/api/auth/me", { key: owned.key })).status).toBe(401);
    // Recorded in the history, by itself.
    const v = await call("GET", `/api/auth/api-keys/${k.user_id}/policy/versions`, { key: await admin() });
    expect(v.body.data.items[0]).toMatchObject({ action: "revoke", actor: k.user_id });
    const vo = await call("GET", `/api/auth/api-keys/${owned.user_id}/policy/versions`, { key: await admin() });
    expect(vo.body.data.items[0]).toMatchObject({ action: "revoke", actor: k.user_id });
  });

  it("any valid key may log out, a narrow or owned one included", async () => {
    const narrow = await mintKey({ scopes: [], condition: "false" });
    expect((await call("POST", "/api/auth/logout", { key: narrow.key, body: { user_id: narrow.user_id } })).status).toBe(200);
    const owner = await mintKey({ scopes: ["auth", "tools"] });
    const owned = await mintKey({ scopes: ["tools:read"] }, owner.key);
    expect((await call("POST", "/api/auth/logout", { key: owned.key, body: { user_id: owned.user_id } })).status).toBe(200);
    expect((await call("GET", "/api/auth/me", { key: owned.key })).status).toBe(401);
    expect((await call("GET", "/api/auth/me", { key: owner.key })).status).toBe(200);
  });

  it("needs no body: an empty body or {} revokes the calling key", async () => {
    const bare = await mintKey({ scopes: ["tools:read"] });
    // No body and no content type, as a client sends a bodiless POST.
    const out = await call("POST", "/api/auth/logout", { key: bare.key });
    expect(out).toMatchObject({ status: 200, body: { data: { user_id: bare.user_id, revoked: true } } });
    expect((await call("GET", "/api/auth/me", { key: bare.key })).status).toBe(401);
    const empty = await mintKey({ scopes: ["tools:read"] });
    expect(await call("POST", "/api/auth/logout", { key: empty.key, body: {} })).toMatchObject({
      status: 200,
      body: { data: { user_id: empty.user_id, revoked: true } },
    });
    expect((await call("GET", "/api/auth/me", { key: empty.key })).status).toBe(401);
  });

  it("a user_id, when given, must name the calling key; unknown fields are refused (400, nothing revoked); no key is 401", async () => {
    const k = await mintKey({ scopes: ["tools:read"] });
    const other = await mintKey({ scopes: ["tools:read"] });
    const wrong = await call("POST", "/api/auth/logout", { key: k.key, body: { user_id: other.user_id } });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error).toContain("user_id");
    expect(wrong.body.error).not.toContain(other.user_id);
    const unknown = await call("POST", "/api/auth/logout", { key: k.key, body: { everything: true } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toContain("everything");
    expect((await call("POST", "/api/auth/logout", { key: k.key, rawBody: "not json", headers: { "content-type": "application/json" } })).status).toBe(400);
    expect((await call("GET", "/api/auth/me", { key: k.key })).status).toBe(200);
    expect((await call("GET", "/api/auth/me", { key: other.key })).status).toBe(200);
    expect(await call("POST", "/api/auth/logout", {})).toMatchObject({ status: 401, body: { error: "Authentication required" } });
    // Naming itself still works, for clients that send the confirmation.
    expect((await call("POST", "/api/auth/logout", { key: k.key, body: { user_id: k.user_id } })).status).toBe(200);
  });

  it("an admin may log out (the keys it owns go with it)", async () => {
    const second = await mintKey({ scopes: ["*"] });
    expect((await call("GET", "/api/auth/me", { key: second.key })).body.data.admin).toBe(true);
    const link = await call("POST", "/api/auth/claim-links", { key: second.key, body: { user_id: "handed-out", scopes: ["tools:read"] } });
    const claimed = await call("POST", "/api/login/claim", { headers: { "cf-connecting-ip": "10.78.0.1" }, body: { token: link.body.data.token } });
    expect(claimed.status).toBe(200);
    expect((await call("POST", "/api/auth/logout", { key: second.key, body: { user_id: second.user_id } })).status).toBe(200);
    expect((await call("GET", "/api/auth/me", { key: second.key })).status).toBe(401);
    expect((await call("GET", "/api/auth/me", { key: claimed.body.data.api_key })).status).toBe(401);
    expect((await call("GET", "/api/auth/me", { key: await admin() })).status).toBe(200);
  });
});

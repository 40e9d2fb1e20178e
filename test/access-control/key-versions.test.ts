/** Key policy history: a version per change, and rollback with and without a re-mint (docs/access-control.md). */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { authorizeTurn } from "../../src/access-control/pass-role";
import { admin, call, mintKey, uniq } from "../helpers/http";

const versionsOf = async (userId: string, key?: string) => call("GET", `/api/auth/api-keys/${userId}/policy/versions`, { key: key ?? (await admin()) });

describe("key policy history", () => {
  it("records mint, edit, scopes change and revoke, newest first, with the actor", async () => {
    const key = await admin();
    const k = await mintKey({ scopes: ["tools:read"] });
    await call("PUT", `/api/auth/api-keys/${k.user_id}`, { key, body: { description: "renamed", condition: ".sub != null" } });
    await call("POST", `/api/auth/api-keys/${k.user_id}/scopes`, { key, body: { add: ["presets"], remove: ["tools:read"] } });
    const live = await versionsOf(k.user_id);
    expect(live.body.data.items.map((v: { version: number; action: string }) => [v.version, v.action])).toEqual([
      [3, "scopes"],
      [2, "edit"],
      [1, "mint"],
    ]);
    expect(live.body.data.items[0]).toMatchObject({
      scopes: ["presets"],
      description: "renamed",
      condition: ".sub != null",
      key_fingerprint: k.fingerprint,
      actor: "root",
    });
    expect(live.body.data.items[2]).toMatchObject({ scopes: ["tools:read"], description: "test", condition: null, disabled: false });

    await call("DELETE", `/api/auth/api-keys/${k.user_id}`, { key });
    const after = await versionsOf(k.user_id);
    expect(after.body.data.items[0]).toMatchObject({ version: 4, action: "revoke", scopes: ["presets"] });
    // Never-seen keys have no history.
    expect((await versionsOf(uniq("absent"))).status).toBe(404);
  });

  it("a revoke is recorded for the owned keys it takes along", async () => {
    const owner = await mintKey({ scopes: ["auth", "tools"] });
    const owned = await mintKey({ scopes: ["tools:read"] }, owner.key);
    await call("DELETE", `/api/auth/api-keys/${owner.user_id}`, { key: await admin() });
    const v = await versionsOf(owned.user_id);
    expect(v.body.data.items[0]).toMatchObject({ action: "revoke", owner_user_id: owner.user_id });
  });

  it("rollback restores an old policy as a new version and keeps the fingerprint and the raw key", async () => {
    const key = await admin();
    const k = await mintKey({ scopes: ["tool:echo", "tools:read"] });
    await call("PUT", `/api/auth/api-keys/${k.user_id}`, { key, body: { scopes: ["presets:read"], disabled: true } });
    expect((await call("GET", "/api/tools", { key: k.key })).status).toBe(401);
    const back = await call("POST", `/api/auth/api-keys/${k.user_id}/policy/rollback`, { key, body: { version: 1 } });
    expect(back.status, JSON.stringify(back.body)).toBe(200);
    expect(back.body.data).toMatchObject({ version: 3, key: { scopes: ["tool:echo", "tools:read"], disabled: false, key_fingerprint: k.fingerprint } });
    expect(back.body.data.api_key).toBeUndefined();
    // The same raw key works again, and a route bound to the fingerprint still authorizes.
    expect((await call("GET", "/api/tools", { key: k.key })).status).toBe(200);
    expect((await authorizeTurn(env.DB, k.user_id, k.fingerprint, { kind: "tool", name: "echo" })).ok).toBe(true);
    const history = await versionsOf(k.user_id);
    expect(history.body.data.items[0]).toMatchObject({ version: 3, action: "rollback", scopes: ["tool:echo", "tools:read"] });
    expect((await call("POST", `/api/auth/api-keys/${k.user_id}/policy/rollback`, { key, body: { version: 42 } })).status).toBe(404);
  });

  it("rollback with remint: a new raw key shown once and a new fingerprint; the old key and bindings stop working", async () => {
    const key = await admin();
    const k = await mintKey({ scopes: ["tool:echo", "tools:read"] });
    await call("PUT", `/api/auth/api-keys/${k.user_id}`, { key, body: { description: "changed" } });
    const back = await call("POST", `/api/auth/api-keys/${k.user_id}/policy/rollback`, { key, body: { version: 1, remint: true } });
    expect(back.status).toBe(200);
    const fresh = back.body.data.api_key as string;
    expect(fresh).toMatch(/^sk-[A-Za-z0-9_-]{43}$/);
    expect(back.body.data.key.key_fingerprint).not.toBe(k.fingerprint);
    expect(back.body.data.key.description).toBe("test");
    expect((await call("GET", "/api/tools", { key: k.key })).status).toBe(401);
    expect((await call("GET", "/api/tools", { key: fresh })).status).toBe(200);
    expect(await authorizeTurn(env.DB, k.user_id, k.fingerprint, { kind: "tool", name: "echo" })).toMatchObject({
      ok: false,
      reason: expect.stringContaining("re-minted"),
    });
    const v = await versionsOf(k.user_id);
    expect(v.body.data.items[0]).toMatchObject({ action: "rollback", key_fingerprint: back.body.data.key.key_fingerprint });
  });

  it("a rollback is checked like an edit: a vanished role or custom scope is 400", async () => {
    const key = await admin();
    await call("POST", "/api/auth/roles", { key, body: { name: "short-lived", grants: { tools: "read" } } });
    await call("POST", "/api/auth/scopes", { key, body: { scope_id: "short-scope", url: "/api/tools" } });
    const k = (await call("POST", "/api/auth/api-keys", { key, body: { user_id: uniq("u"), scopes: ["short-scope"], role: "short-lived" } })).body.data;
    const userId = (await call("GET", "/api/auth/me", { key: k.api_key })).body.data.user_id;
    await call("PUT", `/api/auth/api-keys/${userId}`, { key, body: { role: null, scopes: [] } });
    await call("DELETE", "/api/auth/roles/short-lived", { key });
    const noRole = await call("POST", `/api/auth/api-keys/${userId}/policy/rollback`, { key, body: { version: 1 } });
    expect(noRole.status).toBe(400);
    expect(noRole.body.error).toContain("role");
    await call("POST", "/api/auth/roles", { key, body: { name: "short-lived" } });
    await call("DELETE", "/api/auth/scopes/short-scope", { key });
    const noScope = await call("POST", `/api/auth/api-keys/${userId}/policy/rollback`, { key, body: { version: 1 } });
    expect(noScope.status).toBe(400);
    expect(noScope.body.error).toContain("scope");
  });

  it("an owner reads and rolls back the keys it owns; others get 404 on reads and 403 on rollback", async () => {
    const owner = await mintKey({ scopes: ["auth", "tools"] });
    const mine = await mintKey({ scopes: ["tools:read"] }, owner.key);
    const stranger = await mintKey({ scopes: ["auth", "tools"] });
    const foreign = await mintKey({ scopes: ["tools:read"] }, stranger.key);
    expect((await versionsOf(mine.user_id, owner.key)).status).toBe(200);
    expect((await versionsOf(foreign.user_id, owner.key)).status).toBe(404);
    expect((await versionsOf(uniq("absent"), owner.key)).status).toBe(404);
    // An owned key reads no history (even with auth:read), not even its own: 404, as if absent.
    const ownedWithAuth = await mintKey({ scopes: ["auth:read"] }, owner.key);
    expect((await versionsOf(mine.user_id, ownedWithAuth.key)).status).toBe(404);
    expect((await versionsOf(ownedWithAuth.user_id, ownedWithAuth.key)).status).toBe(404);

    await call("PUT", `/api/auth/api-keys/${mine.user_id}`, { key: owner.key, body: { description: "edited by owner" } });
    const back = await call("POST", `/api/auth/api-keys/${mine.user_id}/policy/rollback`, { key: owner.key, body: { version: 1 } });
    expect(back.body.data.key.description).toBe("test");
    expect((await call("POST", `/api/auth/api-keys/${foreign.user_id}/policy/rollback`, { key: owner.key, body: { version: 1 } })).status).toBe(403);
    // A rollback cannot restore scopes beyond the caller's current own.
    const runner = await mintKey({ scopes: ["tool:echo"] }, owner.key);
    await call("PUT", `/api/auth/api-keys/${runner.user_id}`, { key: owner.key, body: { scopes: [] } });
    await call("PUT", `/api/auth/api-keys/${owner.user_id}`, { key: await admin(), body: { scopes: ["auth", "tools:read"] } });
    expect((await call("POST", `/api/auth/api-keys/${runner.user_id}/policy/rollback`, { key: owner.key, body: { version: 1 } })).status).toBe(403);
    expect((await call("POST", `/api/auth/api-keys/${runner.user_id}/policy/rollback`, { key: await admin(), body: { version: 1 } })).status).toBe(200);
  });
});

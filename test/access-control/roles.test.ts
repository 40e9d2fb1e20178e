/** Roles: the doors, versions and rollback, and a role bounding keys live (docs/access-control.md). */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { authenticate } from "../../src/access-control/principal";
import { authorizeTurn, bindExecutionKey } from "../../src/access-control/pass-role";
import { createRoute, readRecord, send } from "../helpers/bridge";
import { D1Counter, countedFetch } from "../helpers/d1-count";
import { admin, call, mintKey, uniq } from "../helpers/http";

async function role(name: string, grants: Record<string, string>, condition?: string) {
  const r = await call("POST", "/api/auth/roles", {
    key: await admin(),
    body: { name, description: "test role", grants, ...(condition ? { condition } : {}) },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data;
}

async function mintWithRole(scopes: string[], roleName: string | null, as?: string, extra: Record<string, unknown> = {}) {
  const user_id = uniq("user");
  const r = await call("POST", "/api/auth/api-keys", { key: as ?? (await admin()), body: { user_id, scopes, role: roleName, ...extra } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return { key: r.body.data.api_key as string, user_id, fingerprint: r.body.data.key_fingerprint as string };
}

const roleName = () =>
  uniq("role")
    .toLowerCase()
    .replace(/[^a-z0-9_-]/g, "-");

describe("role doors", () => {
  it("creates, lists, edits, merges grants, and versions every write", async () => {
    const key = await admin();
    const name = roleName();
    const created = await role(name, { tools: "read", presets: "write", states: "none" });
    expect(created).toMatchObject({ name, grants: { tools: "read", presets: "write" }, condition: null, version: 1 });
    expect((await call("POST", "/api/auth/roles", { key, body: { name } })).status).toBe(409);

    const list = await call("GET", "/api/auth/roles?pageSize=200", { key });
    expect(list.body.data.items.map((r: { name: string }) => r.name)).toContain(name);

    const edited = await call("PUT", `/api/auth/roles/${name}`, { key, body: { grants: { agents: "read" }, condition: ".sub != null" } });
    expect(edited.body.data).toMatchObject({ grants: { agents: "read" }, condition: ".sub != null", version: 2 });
    const merged = await call("POST", `/api/auth/roles/${name}/grants`, { key, body: { grants: { tools: "write", agents: "none" } } });
    expect(merged.body.data).toMatchObject({ grants: { tools: "write" }, version: 3 });

    const versions = await call("GET", `/api/auth/roles/${name}/versions`, { key });
    expect(versions.body.data.total).toBe(3);
    expect(versions.body.data.items.map((v: { version: number; action: string }) => [v.version, v.action])).toEqual([
      [3, "grants"],
      [2, "edit"],
      [1, "create"],
    ]);
    expect(versions.body.data.items[2]).toMatchObject({ grants: { tools: "read", presets: "write" }, actor: "root" });

    // Rollback writes a new version equal to the old one; history is never rewritten.
    const back = await call("POST", `/api/auth/roles/${name}/rollback`, { key, body: { version: 1 } });
    expect(back.body.data).toMatchObject({ grants: { tools: "read", presets: "write" }, condition: null, version: 4 });
    const after = await call("GET", `/api/auth/roles/${name}/versions?pageSize=1`, { key });
    expect(after.body.data).toMatchObject({ total: 4, next_page: 2, items: [{ version: 4, action: "rollback" }] });
    expect((await call("POST", `/api/auth/roles/${name}/rollback`, { key, body: { version: 99 } })).status).toBe(404);
    expect((await call("POST", `/api/auth/roles/absent-role/rollback`, { key, body: { version: 1 } })).status).toBe(404);
  });

  it("refuses unknown tags, bad levels, bad names and non-compiling conditions with 400s that name the field", async () => {
    const key = await admin();
    const unknownTag = await call("POST", "/api/auth/roles", { key, body: { name: roleName(), grants: { "secret-area-xyz": "read" } } });
    expect(unknownTag.status).toBe(400);
    expect(unknownTag.body.error).toContain("grants");
    expect(unknownTag.body.error).not.toContain("secret-area-xyz");
    expect((await call("POST", "/api/auth/roles", { key, body: { name: roleName(), grants: { tools: "admin" } } })).status).toBe(400);
    expect((await call("POST", "/api/auth/roles", { key, body: { name: "Bad Name" } })).status).toBe(400);
    const badCondition = await call("POST", "/api/auth/roles", { key, body: { name: roleName(), condition: ".a |" } });
    expect(badCondition.status).toBe(400);
    expect(badCondition.body.error).toContain("condition");
    expect((await call("PUT", `/api/auth/roles/${roleName()}`, { key, body: { description: "x" } })).status).toBe(404);
    expect((await call("PUT", `/api/auth/roles/${roleName()}`, { key, body: {} })).status).toBe(400);
  });

  it("writes are admin-only; reads need auth:read", async () => {
    const name = roleName();
    await role(name, { tools: "read" });
    const authWriter = await mintKey({ scopes: ["auth"] });
    const outsider = await mintKey({ scopes: ["tools"] });
    expect((await call("POST", "/api/auth/roles", { key: authWriter.key, body: { name: roleName() } })).status).toBe(403);
    expect((await call("PUT", `/api/auth/roles/${name}`, { key: authWriter.key, body: { description: "x" } })).status).toBe(403);
    expect((await call("DELETE", `/api/auth/roles/${name}`, { key: authWriter.key })).status).toBe(403);
    expect((await call("GET", "/api/auth/roles", { key: authWriter.key })).status).toBe(200);
    expect((await call("GET", `/api/auth/roles/${name}/versions`, { key: authWriter.key })).status).toBe(200);
    expect((await call("GET", "/api/auth/roles", { key: outsider.key })).status).toBe(403);
  });
});

describe("a role bounds the keys that name it", () => {
  it("in addition to the key's scopes, and live: an edit reaches the same key's next request", async () => {
    const name = roleName();
    await role(name, { tools: "read" });
    const k = await mintWithRole(["tools", "presets"], name);
    const me = await call("GET", "/api/auth/me", { key: k.key });
    expect(me.body.data).toMatchObject({ role: name, admin: false });
    expect((await call("GET", "/api/tools", { key: k.key })).status).toBe(200);
    // The scopes grant presets, the role does not.
    expect((await call("GET", "/api/presets", { key: k.key })).status).toBe(403);
    // The role grants tools:read only: a tools write is refused even though the scopes have it.
    const write = await call("POST", "/api/auth/roles", { key: k.key, body: { name: roleName() } });
    expect(write.status).toBe(403);

    await call("POST", `/api/auth/roles/${name}/grants`, { key: await admin(), body: { grants: { presets: "read" } } });
    expect((await call("GET", "/api/presets", { key: k.key })).status).toBe(200);
    await call("PUT", `/api/auth/roles/${name}`, { key: await admin(), body: { grants: {} } });
    expect((await call("GET", "/api/tools", { key: k.key })).status).toBe(403);
    expect((await call("GET", "/api/presets", { key: k.key })).status).toBe(403);
  });

  it("never widens a key: the role grants what the scopes lack and the key is still refused", async () => {
    const name = roleName();
    await role(name, { presets: "write", tools: "write" });
    const k = await mintWithRole(["tools:read"], name);
    expect((await call("GET", "/api/tools", { key: k.key })).status).toBe(200);
    expect((await call("GET", "/api/presets", { key: k.key })).status).toBe(403);
  });

  it("the role's condition is a third layer, over the key's own condition input", async () => {
    const name = roleName();
    await role(name, { tools: "read" }, '.request.method == "GET" and (.policy.role | type) == "string"');
    const k = await mintWithRole(["tools"], name);
    expect((await call("GET", "/api/tools", { key: k.key })).status).toBe(200);
    await call("PUT", `/api/auth/roles/${name}`, { key: await admin(), body: { condition: 'error("boom")' } });
    expect((await call("GET", "/api/tools", { key: k.key })).status).toBe(403);
    await call("PUT", `/api/auth/roles/${name}`, { key: await admin(), body: { condition: null } });
    expect((await call("GET", "/api/tools", { key: k.key })).status).toBe(200);
  });

  it("a key with * and a role is not an admin", async () => {
    const name = roleName();
    await role(name, { auth: "write", tools: "write" });
    const k = await mintWithRole(["*"], name);
    const me = await call("GET", "/api/auth/me", { key: k.key });
    expect(me.body.data.admin).toBe(false);
    // An admin-only door refuses it, though the scopes and the role both grant the tag.
    expect((await call("POST", "/api/auth/roles", { key: k.key, body: { name: roleName() } })).status).toBe(403);
  });

  it("the owner's role governs its owned keys too", async () => {
    const name = roleName();
    await role(name, { auth: "write", tools: "read" });
    const owner = await mintWithRole(["auth", "tools", "presets"], name);
    const owned = await mintWithRole(["tools:read", "presets:read"], null, owner.key);
    expect((await call("GET", "/api/tools", { key: owned.key })).status).toBe(200);
    expect((await call("GET", "/api/presets", { key: owned.key })).status).toBe(403);
    await call("POST", `/api/auth/roles/${name}/grants`, { key: await admin(), body: { grants: { tools: "none" } } });
    expect((await call("GET", "/api/tools", { key: owned.key })).status).toBe(403);
  });

  it("mint and edit refuse a role that does not exist (400); any caller that may mint may give an existing role", async () => {
    const key = await admin();
    const r = await call("POST", "/api/auth/api-keys", { key, body: { user_id: uniq("u"), scopes: [], role: "no-such-role" } });
    expect(r.status).toBe(400);
    expect(r.body.error).toContain("role");
    const name = roleName();
    await role(name, { tools: "read" });
    const minter = await mintKey({ scopes: ["auth", "tools"] });
    const mine = await mintWithRole(["tools:read"], name, minter.key);
    const edited = await call("PUT", `/api/auth/api-keys/${mine.user_id}`, { key: minter.key, body: { role: null } });
    expect(edited.body.data).toMatchObject({ role: null, owner_user_id: minter.user_id });
    expect((await call("PUT", `/api/auth/api-keys/${mine.user_id}`, { key: minter.key, body: { role: "nope-role" } })).status).toBe(400);
  });

  it("costs no extra D1 round trip: key, owner, both roles in one statement", async () => {
    const name = roleName();
    await role(name, { auth: "write" });
    const owner = await mintWithRole(["auth"], name);
    const owned = await mintWithRole(["auth:read"], name, owner.key);
    const counter = new D1Counter();
    // A door that reads nothing itself, so every round trip counted is authentication's.
    const answer = await countedFetch(counter, "POST", "/api/auth/validate-condition", {
      headers: { "x-api-key": owned.key, "content-type": "application/json" },
      body: JSON.stringify({ condition: ".a == 1", sample_context: { a: 1 } }),
    });
    expect(answer.status, answer.text).toBe(200);
    expect(counter.count("worker"), counter.describe()).toEqual({ roundTrips: 1, statements: 1 });
  });
});

describe("deleting a role", () => {
  it("is refused while a key names it; forced, the keys are denied everything until the role is back", async () => {
    const key = await admin();
    const name = roleName();
    await role(name, { tools: "read" });
    const k = await mintWithRole(["tools"], name);
    const refused = await call("DELETE", `/api/auth/roles/${name}`, { key });
    expect(refused).toMatchObject({ status: 409, body: { code: "role-in-use" } });
    expect((await call("GET", "/api/tools", { key: k.key })).status).toBe(200);

    const forced = await call("DELETE", `/api/auth/roles/${name}?force=true`, { key });
    expect(forced.body.data).toEqual({ name, removed: true, keys_denied: 1 });
    expect((await call("GET", "/api/tools", { key: k.key })).status).toBe(403);
    // The key still authenticates and still names the role.
    expect((await call("GET", "/api/auth/me", { key: k.key })).body.data).toMatchObject({ role: name, routes: expect.any(Array) });
    const history = await call("GET", `/api/auth/roles/${name}/versions`, { key });
    expect(history.body.data.items[0]).toMatchObject({ action: "delete" });

    // A role of that name again: the keys naming it are bound by it again.
    await role(name, { tools: "read" });
    expect((await call("GET", "/api/tools", { key: k.key })).status).toBe(200);
    expect((await call("DELETE", `/api/auth/roles/${roleName()}`, { key })).status).toBe(404);
  });

  it("an unused role deletes without force", async () => {
    const name = roleName();
    await role(name, {});
    expect((await call("DELETE", `/api/auth/roles/${name}`, { key: await admin() })).body.data).toEqual({ name, removed: true, keys_denied: 0 });
    expect((await call("GET", `/api/auth/roles?pageSize=200`, { key: await admin() })).body.data.items.map((r: { name: string }) => r.name)).not.toContain(
      name,
    );
  });
});

describe("roles at turn time", () => {
  it("the live turn authorizer applies the role's run bound, condition and existence", async () => {
    const name = roleName();
    await role(name, { tools: "read" });
    const k = await mintWithRole(["tool:echo", "agent:echo"], name);
    const tool = { kind: "tool" as const, name: "echo" };
    expect((await authorizeTurn(env.DB, k.user_id, k.fingerprint, tool)).ok).toBe(true);
    expect(await authorizeTurn(env.DB, k.user_id, k.fingerprint, { kind: "agent", name: "echo" })).toMatchObject({
      ok: false,
      reason: expect.stringContaining("role"),
    });
    await call("PUT", `/api/auth/roles/${name}`, { key: await admin(), body: { condition: '.sub == "someone-else"' } });
    expect(await authorizeTurn(env.DB, k.user_id, k.fingerprint, tool)).toMatchObject({ ok: false, reason: expect.stringContaining("role condition") });
    await call("DELETE", `/api/auth/roles/${name}?force=true`, { key: await admin() });
    expect(await authorizeTurn(env.DB, k.user_id, k.fingerprint, tool)).toMatchObject({ ok: false, reason: expect.stringContaining("no longer exists") });
  });

  it("a bridge turn runs under the execution key's live role (read in the door's own statement)", async () => {
    const name = roleName();
    await role(name, { tools: "read" });
    const k = await mintWithRole(["tool:echo"], name);
    const route = await createRoute({ door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id });
    const ok = await send(route.name, { external_user_id: "u", text: "hello", wait_seconds: 10 });
    expect(ok.body.data).toMatchObject({ status: "answered" });
    await call("PUT", `/api/auth/roles/${name}`, { key: await admin(), body: { grants: { presets: "read" } } });
    const denied = await send(route.name, { external_user_id: "u", text: "again", wait_seconds: 10 });
    expect(denied.body.data.status).toBe("error");
    expect((await readRecord(route.name, denied.body.data.message_id)).body.data.error).toContain("role does not grant tools");
  });

  it("binding refuses a key whose role's condition needs a request", async () => {
    const name = roleName();
    await role(name, { tools: "read" }, '.request.method == "GET"');
    const k = await mintWithRole(["tool:echo"], name);
    await expect(bindExecutionKey(env.DB, await authenticate(env, await admin()), k.user_id)).rejects.toMatchObject({ status: 400 });
  });
});

/** Introspection: capabilities, the route listing, tokens-payload, validate-condition and `me`'s role, routes, tools, agents and mintable. */
import { describe, expect, it } from "vitest";
import { SCOPE_TAGS } from "../../src/access-control/scopes";
import { registry } from "../../src/platform/http/route";
import { admin, call, mintKey, uniq } from "../helpers/http";
import { must } from "../../src/platform/must";

describe("GET /api/auth/capabilities", () => {
  it("admin: any owner, every scope, custom scope, role and run grant", async () => {
    const key = await admin();
    await call("POST", "/api/auth/roles", { key, body: { name: "cap-role" } });
    await call("POST", "/api/auth/scopes", { key, body: { scope_id: "cap-scope", url: "/api/tools" } });
    const c = (await call("GET", "/api/auth/capabilities", { key })).body.data;
    expect(c).toMatchObject({ can_mint: true, owner: "any", owner_user_id: null, condition: true });
    expect(c.scopes).toContain("*");
    expect(c.scopes).toEqual(expect.arrayContaining(SCOPE_TAGS.map((t) => `${t}:read`)));
    expect(c.custom_scopes).toContain("cap-scope");
    expect(c.roles).toContain("cap-role");
    expect(c.tools).toContain("echo");
    expect(c.agents).toContain("echo");
  });

  it("non-admin: keys it owns, scopes within its own; owned key and a refusing condition: nothing", async () => {
    const k = await mintKey({ scopes: ["auth", "presets:read", "tool:echo"] });
    const c = (await call("GET", "/api/auth/capabilities", { key: k.key })).body.data;
    expect(c).toMatchObject({ can_mint: true, owner: "self", owner_user_id: k.user_id, tools: ["echo"], agents: [], custom_scopes: [] });
    expect(c.scopes.sort()).toEqual(["auth", "auth:read", "auth:write", "presets:read"].sort());
    // What it advertises, the mint door accepts; one step wider, it refuses.
    const ok = await call("POST", "/api/auth/api-keys", {
      key: k.key,
      body: { user_id: uniq("u"), scopes: [...c.scopes, ...c.tools.map((t: string) => `tool:${t}`)] },
    });
    expect(ok.status).toBe(200);
    expect((await call("POST", "/api/auth/api-keys", { key: k.key, body: { user_id: uniq("u"), scopes: ["presets"] } })).status).toBe(403);

    const owned = await mintKey({ scopes: ["auth:read"] }, k.key);
    expect((await call("GET", "/api/auth/capabilities", { key: owned.key })).body.data).toMatchObject({ can_mint: false, owner: "none", scopes: [] });
    const readOnly = await mintKey({ scopes: ["auth:read"] });
    expect((await call("GET", "/api/auth/capabilities", { key: readOnly.key })).body.data.can_mint).toBe(false);
    const getsOnly = await mintKey({ scopes: ["auth"], condition: '.request.method == "GET"' });
    expect((await call("GET", "/api/auth/capabilities", { key: getsOnly.key })).body.data.can_mint).toBe(false);
  });
});

describe("GET /api/auth/routes", () => {
  it("lists every door of the route table with its declaration and mapping scopes", async () => {
    const listed = (await call("GET", "/api/auth/routes", { key: await admin() })).body.data as Array<Record<string, any>>;
    expect(listed.map((r) => `${r.method} ${r.path}`)).toEqual(registry.map((r) => `${r.method.toUpperCase()} ${r.path}`));
    const at = (m: string, p: string) =>
      must(
        listed.find((r) => r.method === m && r.path === p),
        "the item found",
      );
    expect(at("GET", "/api/tools")).toEqual({
      method: "GET",
      path: "/api/tools",
      tag: "tools",
      action: "read",
      admin: false,
      public: false,
      pinnable: true,
      any_key: false,
      scopes: expect.any(Array),
    });
    // The tag forms, then the custom scopes whose URLs reach it (the capabilities test added one).
    expect(at("GET", "/api/tools").scopes).toEqual(["*", "tools", "tools:write", "tools:read", "cap-scope"]);
    expect(at("POST", "/api/presets")).toMatchObject({ tag: "presets", action: "write", pinnable: false, scopes: ["*", "presets", "presets:write"] });
    expect(at("POST", "/api/run-tool")).toMatchObject({ admin: true, scopes: ["*"] });
    expect(at("GET", "/api/auth/me")).toMatchObject({ tag: null, action: null, any_key: true, scopes: [] });
    expect(at("GET", "/api/health")).toMatchObject({ public: true, any_key: false });
    // An explicit action wins over the method's default.
    expect(at("POST", "/api/auth/validate-condition")).toMatchObject({ tag: "auth", action: "read" });
  });

  it("needs auth:read", async () => {
    expect((await call("GET", "/api/auth/routes", { key: (await mintKey({ scopes: ["auth:read"] })).key })).status).toBe(200);
    expect((await call("GET", "/api/auth/routes", { key: (await mintKey({ scopes: ["tools"] })).key })).status).toBe(403);
  });
});

describe("GET /api/auth/tokens-payload", () => {
  it("answers exactly what a condition sees, for any key", async () => {
    const owner = await mintKey({ scopes: ["auth", "tools"] });
    const k = await mintKey({ scopes: ["tools:read"] }, owner.key);
    const r = await call("GET", "/api/auth/tokens-payload", { key: k.key });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({
      sub: k.user_id,
      scopes: ["tools:read"],
      identity: { owner_user_id: owner.user_id },
      policy: { description: "test", disabled: false, key_fingerprint: k.fingerprint, role: null },
      request: { method: "GET", path: "/api/auth/tokens-payload" },
      system: { time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) },
    });
    // And a condition over that object decides as validate-condition says it would.
    const cond = `.identity.owner_user_id == "${owner.user_id}" and .request.method == "GET"`;
    const check = await call("POST", "/api/auth/validate-condition", { key: await admin(), body: { condition: cond, sample_context: r.body.data } });
    expect(check.body.data).toEqual({ ok: true, result: true, allowed: true });
  });
});

describe("POST /api/auth/validate-condition", () => {
  it("ok with true, false and non-boolean results; 400 for author errors", async () => {
    const key = await admin();
    const ask = (condition: string, sample_context?: unknown) =>
      call("POST", "/api/auth/validate-condition", { key, body: { condition, ...(sample_context === undefined ? {} : { sample_context }) } });
    expect((await ask(".a == 1", { a: 1 })).body.data).toEqual({ ok: true, result: true, allowed: true });
    expect((await ask(".a == 1", { a: 2 })).body.data).toEqual({ ok: true, result: false, allowed: false });
    expect((await ask(".a", { a: "yes" })).body.data).toEqual({ ok: true, result: null, allowed: false });
    expect((await ask(".[]", { a: true, b: true })).body.data).toEqual({ ok: true, result: null, allowed: false });
    expect((await ask('error("no")', {})).body.data).toEqual({ ok: true, result: null, allowed: false });
    // Without a sample, the caller's own context.
    expect((await ask('.sub == "root"')).body.data.result).toBe(true);
    const broken = await ask(".a |", {});
    expect(broken.status).toBe(400);
    expect(broken.body.error).toContain("condition");
    const endless = await ask("def f: f + 1; f", {});
    expect(endless.status).toBe(400);
    expect(endless.body.error).toContain("budget");
    expect((await call("POST", "/api/auth/validate-condition", { key, body: { condition: "true", sample_context: [1] } })).status).toBe(400);
    expect((await call("POST", "/api/auth/validate-condition", { key, body: { condition: "true", extra: 1 } })).status).toBe(400);
  });
});

describe("GET /api/auth/me", () => {
  it("keeps the old fields and adds role, routes, tools, agents and mintable", async () => {
    const key = await admin();
    const me = (await call("GET", "/api/auth/me", { key })).body.data;
    expect(me).toMatchObject({ user_id: "root", owner_user_id: null, admin: true, scopes: ["*"], role: null });
    expect(typeof me.key_fingerprint).toBe("string");
    // The admin passes every door.
    const doors = me.routes.flatMap((r: { path: string; methods: string[] }) => r.methods.map((m) => `${m} ${r.path}`)).sort();
    expect(doors).toEqual(registry.map((r) => `${r.method.toUpperCase()} ${r.path}`).sort());
    expect(me.tools).toContain("echo");
    expect(me.agents).toContain("echo");
    expect(me.mintable.can_mint).toBe(true);
  });

  it("a narrow key: only the doors it passes, the runs it holds", async () => {
    await call("POST", "/api/auth/roles", { key: await admin(), body: { name: "me-role", grants: { tools: "read", presets: "read", agents: "read" } } });
    const k = (
      await call("POST", "/api/auth/api-keys", {
        key: await admin(),
        body: { user_id: uniq("u"), scopes: ["tools:read", "presets", "tool:echo", "agent:echo"], role: "me-role" },
      })
    ).body.data;
    const me = (await call("GET", "/api/auth/me", { key: k.api_key })).body.data;
    expect(me.role).toBe("me-role");
    const doors = new Set<string>(me.routes.flatMap((r: { path: string; methods: string[] }) => r.methods.map((m) => `${m} ${r.path}`)));
    expect(doors.has("GET /api/tools")).toBe(true);
    expect(doors.has("GET /api/presets")).toBe(true);
    // The scopes grant presets writes, the role does not.
    expect(doors.has("POST /api/presets")).toBe(false);
    expect(doors.has("GET /api/auth/roles")).toBe(false);
    expect(doors.has("GET /api/auth/me")).toBe(true);
    expect(doors.has("GET /api/health")).toBe(true);
    expect(me.tools).toEqual(["echo"]);
    expect(me.agents).toEqual(["echo"]);
    expect(me.mintable.can_mint).toBe(false);
  });

  it("never advertises a door that refuses: a sample of the advertised read doors all pass, the rest refuse", async () => {
    const k = await mintKey({
      scopes: ["tools:read", "presets:read", "resources"],
      condition: '.request.path | startswith("/api/tools") or startswith("/api/presets") or startswith("/api/auth")',
    });
    const me = (await call("GET", "/api/auth/me", { key: k.key })).body.data;
    const advertised = new Set<string>(me.routes.flatMap((r: { path: string; methods: string[] }) => r.methods.map((m) => `${m} ${r.path}`)));
    expect(advertised.has("GET /api/tools")).toBe(true);
    // The condition refuses resources though the scope grants them.
    expect(advertised.has("GET /api/resources/get")).toBe(false);
    const concrete: Record<string, string> = {
      "GET /api/tools": "/api/tools",
      "GET /api/tools-schema": "/api/tools-schema",
      "GET /api/tools/{tool_name}/schema": "/api/tools/echo/schema",
      "GET /api/presets": "/api/presets",
      "GET /api/resources/get": "/api/resources/get?id=x",
      "GET /api/states": "/api/states",
      "GET /api/auth/roles": "/api/auth/roles",
    };
    for (const [door, path] of Object.entries(concrete)) {
      const status = (await call("GET", path, { key: k.key })).status;
      if (advertised.has(door)) expect([401, 403], `${door} advertised but refused`).not.toContain(status);
      else expect(status, `${door} not advertised but passed`).toBe(403);
    }
  });
});

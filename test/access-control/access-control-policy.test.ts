/** The pure policy of access control: URL matching, scope ids, pins, role grants, capabilities. */
import { describe, expect, it } from "vitest";
import { capabilities, grammarScopes } from "../../src/access-control/capabilities";
import { customScopesGrantPath, scopesMappingTemplate } from "../../src/access-control/custom-scopes";
import { keyAllowsRoute, keyConditions, keyRunRefusal } from "../../src/access-control/key-grants";
import type { KeyRecord } from "../../src/access-control/key-store";
import { ANONYMOUS, type Principal } from "../../src/access-control/principal";
import { pinRefusal } from "../../src/access-control/public-routes";
import { RoleGrantsInput, normalizeGrants, roleAllows } from "../../src/access-control/roles";
import { isAdminKey, isCustomScopeId, isKeyScope, isValidScope, scopeCovered } from "../../src/access-control/scopes";
import { scopeUrlMatches, scopeUrlOverlapsTemplate, scopeUrlProblem, segmentsOf } from "../../src/access-control/url-pattern";
import { must } from "../../src/platform/must";

function key(over: Partial<KeyRecord> = {}): KeyRecord {
  return {
    user_id: "k",
    description: "",
    scopes: [],
    condition: null,
    owner_user_id: null,
    disabled: false,
    key_fingerprint: "f",
    created_at: "",
    updated_at: "",
    role: null,
    role_def: null,
    scope_urls: [],
    generation: 0,
    ...over,
  };
}

describe("scope URL matching (pure)", () => {
  it("exact URLs match the same path only, a trailing slash aside", () => {
    expect(scopeUrlMatches("/api/tools", false, "/api/tools")).toBe(true);
    expect(scopeUrlMatches("/api/tools", false, "/api/tools/")).toBe(true);
    expect(scopeUrlMatches("/api/tools/", false, "/api/tools")).toBe(true);
    expect(scopeUrlMatches("/api/tools", false, "/api/tools/echo")).toBe(false);
    expect(scopeUrlMatches("/api/tools", false, "/api/tool")).toBe(false);
    expect(scopeUrlMatches("/api/tools/echo", false, "/api/tools/{tool_name}")).toBe(false);
    expect(scopeUrlMatches("/", false, "/")).toBe(true);
  });

  it("a * segment is exactly one non-empty segment", () => {
    expect(scopeUrlMatches("/api/tools/*/schema", true, "/api/tools/echo/schema")).toBe(true);
    expect(scopeUrlMatches("/api/tools/*/schema", true, "/api/tools/{tool_name}/schema")).toBe(true);
    expect(scopeUrlMatches("/api/tools/*/schema", true, "/api/tools/schema")).toBe(false);
    expect(scopeUrlMatches("/api/tools/*/schema", true, "/api/tools/a/b/schema")).toBe(false);
    expect(scopeUrlMatches("/api/tools/*", true, "/api/tools")).toBe(false);
    expect(scopeUrlMatches("/api/tools/*", true, "/api/tools//")).toBe(false);
  });

  it("a final ** is any rest, zero segments included", () => {
    expect(scopeUrlMatches("/api/presets/**", true, "/api/presets")).toBe(true);
    expect(scopeUrlMatches("/api/presets/**", true, "/api/presets/p/versions/2")).toBe(true);
    expect(scopeUrlMatches("/api/presets/**", true, "/api/presets-x")).toBe(false);
    expect(scopeUrlMatches("/**", true, "/api/anything")).toBe(true);
  });

  it("pattern: false takes * literally (and validation refuses it there)", () => {
    expect(scopeUrlMatches("/api/*", false, "/api/x")).toBe(false);
    expect(scopeUrlProblem("/api/*", false)).toContain("pattern: true");
  });

  it("validates URLs by rule, never echoing them", () => {
    expect(scopeUrlProblem("/api/states/profile", false)).toBeNull();
    expect(scopeUrlProblem("/api/states/*/records/**", true)).toBeNull();
    for (const [url, pattern] of [
      ["", false],
      ["api/x", false],
      ["/api//x", false],
      ["/api/../x", false],
      ["/api/**/x", true],
      ["/api/x*", true],
      ["/api/{name}", false],
      ["/api/a b", false],
      [`/${"a".repeat(600)}`, false],
      ["https://host/api", false],
    ] as const) {
      const problem = scopeUrlProblem(url, pattern);
      expect(problem, url).not.toBeNull();
      expect(must(problem, "problem").startsWith("url: ")).toBe(true);
      if (url.length > 3) expect(problem).not.toContain(url);
    }
    expect(segmentsOf("/")).toEqual([]);
    expect(segmentsOf("/a/b/")).toEqual(["a", "b"]);
  });

  it("overlap with a route template: a parameter takes any one segment", () => {
    expect(scopeUrlOverlapsTemplate("/api/tools/echo/schema", false, "/api/tools/{tool_name}/schema")).toBe(true);
    expect(scopeUrlOverlapsTemplate("/api/tools/*/schema", true, "/api/tools/{tool_name}/schema")).toBe(true);
    expect(scopeUrlOverlapsTemplate("/api/tools/**", true, "/api/tools/{tool_name}/schema")).toBe(true);
    expect(scopeUrlOverlapsTemplate("/api/tools", false, "/api/tools/{tool_name}/schema")).toBe(false);
    expect(scopeUrlOverlapsTemplate("/api/tools/echo", false, "/api/tools/{tool_name}/schema")).toBe(false);
    expect(scopeUrlOverlapsTemplate("/api/presets/**", true, "/api/tools")).toBe(false);
    const urls = [
      { scope_id: "b", url: "/api/tools/**", pattern: true },
      { scope_id: "a", url: "/api/tools", pattern: false },
      { scope_id: "c", url: "/api/presets", pattern: false },
    ];
    expect(scopesMappingTemplate(urls, "/api/tools")).toEqual(["a", "b"]);
  });

  it("a key's custom URLs count only for scope ids the key lists", () => {
    const urls = [{ scope_id: "readers", url: "/api/tools", pattern: false }];
    expect(customScopesGrantPath(["readers"], urls, "/api/tools")).toBe(true);
    expect(customScopesGrantPath(["other"], urls, "/api/tools")).toBe(false);
  });
});

describe("custom scope ids in the scope grammar (pure)", () => {
  it("never collide with the tag grammar", () => {
    for (const s of ["my-scope", "ops.readers", "a", "x_1"]) expect(isCustomScopeId(s), s).toBe(true);
    for (const s of ["tools", "auth", "*", "tool:echo", "tools:read", "urls", "Upper", "1abc", "", "a b", `a${"b".repeat(64)}`]) {
      expect(isCustomScopeId(s), s).toBe(false);
    }
    expect(isKeyScope("my-scope")).toBe(true);
    expect(isKeyScope("tools:read")).toBe(true);
    expect(isKeyScope("tools:admin")).toBe(false);
    // The tag grammar itself is unchanged: a custom id is not a tag scope.
    expect(isValidScope("my-scope")).toBe(false);
  });

  it("a custom scope is handed out only by its holder (or *)", () => {
    expect(scopeCovered(["my-scope"], "my-scope")).toBe(true);
    expect(scopeCovered(["tools"], "my-scope")).toBe(false);
    expect(scopeCovered(["*"], "my-scope")).toBe(true);
  });
});

describe("roles (pure)", () => {
  it("write implies read; absent and none deny", () => {
    const g = normalizeGrants({ tools: "write", states: "read", presets: "none" });
    expect(g).toEqual({ tools: "write", states: "read" });
    expect(roleAllows(g, "tools", "write")).toBe(true);
    expect(roleAllows(g, "tools", "read")).toBe(true);
    expect(roleAllows(g, "states", "read")).toBe(true);
    expect(roleAllows(g, "states", "write")).toBe(false);
    expect(roleAllows(g, "presets", "read")).toBe(false);
    expect(roleAllows(g, "auth", "read")).toBe(false);
  });

  it("the grants input refuses unknown tags and levels without naming them", () => {
    const bad = RoleGrantsInput.safeParse({ "MARKER-tag": "read" });
    expect(bad.success).toBe(false);
    expect(JSON.stringify(must(bad.error, "bad.error").issues)).not.toContain("MARKER");
    expect(RoleGrantsInput.safeParse({ tools: "admin" }).success).toBe(false);
    expect(RoleGrantsInput.safeParse({ tools: "write", auth: "none" }).success).toBe(true);
  });

  it("a role bounds a key's doors and runs; a missing role denies everything", () => {
    const viewer = key({ scopes: ["*"], role: "viewer", role_def: { grants: { tools: "read" }, condition: null } });
    expect(keyAllowsRoute(viewer, "tools", "read", "/api/tools")).toBe(true);
    expect(keyAllowsRoute(viewer, "tools", "write", "/api/tools")).toBe(false);
    expect(keyAllowsRoute(viewer, "presets", "read", "/api/presets")).toBe(false);
    expect(keyRunRefusal(viewer, "tool", "echo")).toBeNull();
    expect(keyRunRefusal(viewer, "agent", "echo")).toBe("role");
    const orphan = key({ scopes: ["*"], role: "gone", role_def: null });
    expect(keyAllowsRoute(orphan, "tools", "read", "/api/tools")).toBe(false);
    expect(keyRunRefusal(orphan, "tool", "echo")).toBe("role-missing");
    expect(keyConditions(key({ condition: "true", role: "r", role_def: { grants: {}, condition: ".sub != null" } }))).toEqual(["true", ".sub != null"]);
  });

  it("a key with a role is never an admin", () => {
    expect(isAdminKey({ scopes: ["*"], condition: null, owner_user_id: null, role: "editor" })).toBe(false);
    expect(isAdminKey({ scopes: ["*"], condition: null, owner_user_id: null, role: null })).toBe(true);
  });
});

describe("public pins (pure)", () => {
  const get = (path: string, auth: Record<string, unknown> = { tag: "tools" }) => ({ method: "get", path, auth: auth as { tag: string } });
  it("only non-admin tagged GET doors outside the never-public set are pinnable", () => {
    expect(pinRefusal(get("/api/tools"))).toBeNull();
    expect(pinRefusal(get("/api/conversations/{route_name}/messages/{message_id}", { tag: "conversations" }))).toBeNull();
    expect(pinRefusal(get("/api/tools", { tag: "tools", admin: true }))).toContain("admin");
    expect(pinRefusal(get("/api/auth/roles", { tag: "auth" }))).toContain("access-control");
    expect(pinRefusal(get("/api/keys/x"))).toContain("access-control");
    expect(pinRefusal(get("/api/auth/me", { authenticated: true }))).not.toBeNull();
    expect(pinRefusal(get("/api/health", { public: true }))).toContain("public already");
    expect(pinRefusal({ method: "post", path: "/api/conversations/{route_name}/messages", auth: { tag: "conversations" }, pinnable: true })).toContain(
      "bridge",
    );
    expect(pinRefusal({ method: "post", path: "/api/run-tool", auth: { tag: "tools" }, pinnable: true })).toContain("run-tool");
    expect(pinRefusal({ method: "post", path: "/api/presets", auth: { tag: "presets" } })).toContain("GET");
    expect(pinRefusal({ method: "post", path: "/api/presets", auth: { tag: "presets" }, pinnable: true })).toBeNull();
    expect(pinRefusal({ method: "get", path: "/api/notifications", auth: { tag: "notifications" }, pinnable: false })).toContain("identity");
  });
});

describe("capabilities (pure)", () => {
  const known = { roles: ["viewer"], scopeIds: ["mine", "theirs"], tools: ["echo", "weather"], agents: ["echo"] };
  const p = (k: Partial<KeyRecord>, extra: Partial<Principal> = {}): Principal => ({ key: key(k), owner: null, admin: false, restricted: false, ...extra });

  it("admin: everything, for any owner", () => {
    const c = capabilities(p({ scopes: ["*"] }, { admin: true }), true, known);
    expect(c).toMatchObject({
      can_mint: true,
      owner: "any",
      owner_user_id: null,
      custom_scopes: ["mine", "theirs"],
      tools: ["echo", "weather"],
      agents: ["echo"],
      roles: ["viewer"],
    });
    expect(c.scopes).toEqual(grammarScopes());
  });

  it("non-admin: its own keys, scopes covered by its own, any role", () => {
    const c = capabilities(p({ user_id: "svc", scopes: ["auth", "tools:read", "tool:echo", "mine"] }), true, known);
    expect(c.owner).toBe("self");
    expect(c.owner_user_id).toBe("svc");
    expect(c.scopes).toEqual(["tools:read", "auth", "auth:read", "auth:write"]);
    expect(c.custom_scopes).toEqual(["mine"]);
    expect(c.tools).toEqual(["echo"]);
    expect(c.agents).toEqual([]);
    expect(c.roles).toEqual(["viewer"]);
  });

  it("owned, anonymous or refused by the authorizer: nothing", () => {
    expect(capabilities(p({ scopes: ["*"] }, { restricted: true }), true, known)).toMatchObject({ can_mint: false, scopes: [], roles: [] });
    expect(capabilities(ANONYMOUS, true, known).can_mint).toBe(false);
    expect(capabilities(p({ scopes: ["*"] }), false, known).can_mint).toBe(false);
  });
});

/**
 * The hooks' operator doors (docs/hooks.md): register, replace, list and delete hooks;
 * the registration's refusals in order (nothing stored on any); pass-role binding of the execution
 * key; restricted callers; the per-topic cap; topic verifiers (admin; secrets sealed, never shown);
 * trigger links (ttl rules, token shown once and stored hashed); the store gates.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { BASE, admin, call, fetchWithEnv, mintKey, uniq } from "../helpers/http";
import { bindVerifier, hook, registerHook } from "./helpers";
import { must } from "../../src/platform/must";

const topicOf = () => uniq("topic").toLowerCase();
const nameOf = () => uniq("hook").toLowerCase();
const hookCount = async () => must(await env.DB.prepare("SELECT COUNT(*) AS n FROM hooks").first<{ n: number }>(), "the row").n;

describe("POST /api/hooks", () => {
  it("registers a hook bound to a least-privilege key; an open topic's answer warns that the key is the only boundary", async () => {
    const runner = await mintKey({ scopes: ["tool:echo"] });
    const topic = topicOf();
    const name = nameOf();
    const r = await hook({
      name,
      topic,
      tool: "echo",
      execution_key: runner.user_id,
      tool_kwargs: { message: "x" },
      condition: '.action == "opened"',
      expr: "{message: .title}",
    });
    expect(r.body.data).toEqual({ registered: true, name, warning: expect.stringMatching(/no verifier.*only boundary/) });
    expect(r.body.data.warning).not.toMatch(/admin or broad/);

    const listed = await call("GET", `/api/hooks?topic=${topic}`, { key: await admin() });
    expect(listed.status).toBe(200);
    expect(listed.body.data).toEqual({
      items: [
        {
          name,
          topic,
          tool: "echo",
          execution_key: runner.user_id,
          execution_key_fingerprint: runner.fingerprint,
          tool_kwargs: { message: "x" },
          condition: '.action == "opened"',
          condition_id: null,
          condition_kwargs: null,
          expr: "{message: .title}",
          expr_id: null,
          expr_kwargs: null,
          state_binding: null,
          created_by: "root",
          created_at: expect.stringMatching(/Z$/),
          updated_at: expect.stringMatching(/Z$/),
        },
      ],
      total: 1,
      topic_verifiers: {},
      trigger_auth: { [topic]: "open" },
    });
  });

  it("warns about an admin or broad execution key; no open-topic warning once the topic has a verifier", async () => {
    const topic = topicOf();
    await bindVerifier(topic, { kind: "github", secret: "a-github-secret" });
    const broad = await mintKey({ scopes: ["tools:write"] });
    const r = await hook({ name: nameOf(), topic, tool: "echo", execution_key: broad.user_id });
    expect(r.body.data.warning).toMatch(/admin or broad/);
    expect(r.body.data.warning).not.toMatch(/no verifier/);
    const asAdmin = await hook({ name: nameOf(), topic, tool: "echo", execution_key: "root" });
    expect(asAdmin.body.data.warning).toMatch(/admin or broad/);
    const narrow = await mintKey({ scopes: ["tool:echo"] });
    expect((await hook({ name: nameOf(), topic, tool: "echo", execution_key: narrow.user_id })).body.data).not.toHaveProperty("warning");
    const listed = await call("GET", `/api/hooks?topic=${topic}`, { key: await admin() });
    expect(listed.body.data).toMatchObject({ total: 3, topic_verifiers: { [topic]: "github" }, trigger_auth: { [topic]: "verifier:github" } });
  });

  it("re-posting a name replaces the hook (created_at kept); delete removes it, then 404", async () => {
    const runner = await mintKey({ scopes: ["tool:echo"] });
    const [topic, other, name] = [topicOf(), topicOf(), nameOf()];
    await hook({ name, topic, tool: "echo", execution_key: runner.user_id, tool_kwargs: { message: "one" } });
    const first = (await call("GET", `/api/hooks?topic=${topic}`, { key: await admin() })).body.data.items[0];
    await hook({ name, topic: other, tool: "echo", execution_key: runner.user_id, expr: "{message: .m}" });
    expect((await call("GET", `/api/hooks?topic=${topic}`, { key: await admin() })).body.data.total).toBe(0);
    const second = (await call("GET", `/api/hooks?topic=${other}`, { key: await admin() })).body.data.items[0];
    expect(second).toMatchObject({ name, topic: other, tool_kwargs: {}, expr: "{message: .m}", created_at: first.created_at });
    const del = await call("DELETE", `/api/hooks/${name}`, { key: await admin() });
    expect(del.body).toEqual({ data: { removed: true, name } });
    expect((await call("DELETE", `/api/hooks/${name}`, { key: await admin() })).status).toBe(404);
  });

  it("renders condition_id / expr_id text resources with their kwargs at registration", async () => {
    const key = await admin();
    const id = uniq("cond");
    expect((await call("POST", "/api/storage/resources", { key, body: { id, content: '.action == "{{action}}"' } })).status).toBe(200);
    const name = nameOf();
    await hook({ name, topic: topicOf(), tool: "echo", execution_key: "root", condition_id: id, condition_kwargs: { action: "closed" } });
    const row = await env.DB.prepare("SELECT condition_program, condition_kwargs FROM hooks WHERE name = ?")
      .bind(name)
      .first<{ condition_program: string; condition_kwargs: string }>();
    expect(row).toEqual({ condition_program: '.action == "closed"', condition_kwargs: '{"action":"closed"}' });
  });

  it("refuses, storing nothing: body 400 (never echoing values), unknown tool 404, programs 400, pass-role 403/404/400, the key's grant 403", async () => {
    const key = await admin();
    const runner = await mintKey({ scopes: ["tool:echo"] });
    const before = await hookCount();
    const base = { name: nameOf(), topic: topicOf(), tool: "echo", execution_key: runner.user_id };
    const refused = async (body: Record<string, unknown>, status: number, text?: RegExp, as = key) => {
      const r = await registerHook(body, as);
      expect(r.status, JSON.stringify(r.body)).toBe(status);
      if (text) expect(r.body.error).toMatch(text);
      expect(JSON.stringify(r.body)).not.toContain("SECRETVALUE");
      return r;
    };
    await refused({ ...base, name: "Has-CAPS-SECRETVALUE" }, 400, /name/);
    await refused({ ...base, name: "trigger-links" }, 400, /reserved/);
    await refused({ ...base, topic: "a/b" }, 400, /topic/);
    await refused({ ...base, extra: 1 }, 400);
    await refused({ ...base, condition: "true", condition_id: "x" }, 400, /condition or condition_id/);
    await refused({ ...base, expr_kwargs: { a: 1 } }, 400, /expr_id/);
    await refused({ ...base, tool: "maintenance.prune_expired" }, 400, /tool/);
    await refused({ ...base, tool: "no-such-tool" }, 404, /tool not found/);
    await refused({ ...base, condition: "if SECRETVALUE" }, 400, /condition: jq program does not compile/);
    await refused({ ...base, expr: "{" }, 400, /expr: jq program does not compile/);
    await refused({ ...base, condition_id: uniq("missing") }, 400, /condition_id: its text resource does not exist/);
    // Pass-role: a non-admin may bind only its own key or one it owns (uniform 403).
    const writer = await mintKey({ scopes: ["hooks:write", "tool:echo"] });
    await refused({ ...base, execution_key: runner.user_id }, 403, /^Forbidden$/, writer.key);
    await refused({ ...base, execution_key: "nobody-at-all" }, 403, /^Forbidden$/, writer.key);
    // An admin binding an absent key: 404; a key whose condition reads .request: 400.
    await refused({ ...base, execution_key: "nobody-at-all" }, 404, /execution key not found/);
    const requestBound = await mintKey({ scopes: ["tool:echo"], condition: '.request.method == "POST"' });
    await refused({ ...base, execution_key: requestBound.user_id }, 400, /\.request/);
    // The bound key must be able to run the tool now.
    const noGrant = await mintKey({ scopes: ["hooks:write"] });
    await refused({ ...base, execution_key: noGrant.user_id }, 403, /execution_key may not run this tool/);
    expect(await hookCount()).toBe(before);
    // Its own key is fine for a non-admin.
    expect((await registerHook({ ...base, execution_key: writer.user_id }, writer.key)).status).toBe(200);
  });

  it("a topic carries at most 32 hooks (409); replacing one of them is still allowed", async () => {
    const topic = topicOf();
    const names = Array.from({ length: 32 }, () => nameOf());
    for (const name of names) await hook({ name, topic, tool: "echo", execution_key: "root" });
    const r = await registerHook({ name: nameOf(), topic, tool: "echo", execution_key: "root" });
    expect(r.status).toBe(409);
    expect((await registerHook({ name: names[0], topic, tool: "echo", execution_key: "root", tool_kwargs: { message: "again" } })).status).toBe(200);
  });

  it("restricted callers see and manage only the hooks they created", async () => {
    const owner = await mintKey({ scopes: ["hooks:write", "tool:echo"] });
    const a = await mintKey({ scopes: ["hooks:write", "tool:echo"], owner_user_id: owner.user_id }, await admin());
    const b = await mintKey({ scopes: ["hooks:write", "tool:echo"], owner_user_id: owner.user_id }, await admin());
    const topic = topicOf();
    const name = nameOf();
    expect((await registerHook({ name, topic, tool: "echo", execution_key: a.user_id }, a.key)).status).toBe(200);
    expect((await registerHook({ name, topic, tool: "echo", execution_key: b.user_id }, b.key)).status).toBe(403);
    expect((await call("DELETE", `/api/hooks/${name}`, { key: b.key })).status).toBe(403);
    expect((await call("GET", `/api/hooks?topic=${topic}`, { key: b.key })).body.data.total).toBe(0);
    expect((await call("GET", `/api/hooks?topic=${topic}`, { key: a.key })).body.data.total).toBe(1);
    expect((await call("DELETE", `/api/hooks/${name}`, { key: a.key })).status).toBe(200);
  });

  it("a state_binding is checked as a target config's: undeclared state 404; 501 states-not-configured without the states store", async () => {
    const binding = { states: [{ state: uniq("nostate").toLowerCase(), subject_expr: { content: ".who" } }] };
    const base = { name: nameOf(), topic: topicOf(), tool: "echo", execution_key: "root", state_binding: binding };
    const r = await registerHook(base);
    expect(r.status, JSON.stringify(r.body)).toBe(404);
    expect(r.body.error).toMatch(/state_binding: states\[0\] names a state that is not declared/);
    const res = await fetchWithEnv(
      { ...env, STATES_STORE_URL: "" },
      new Request(`${BASE}/api/hooks`, {
        method: "POST",
        headers: { "x-api-key": await admin(), "content-type": "application/json" },
        body: JSON.stringify(base),
      }),
    );
    expect(res.status).toBe(501);
    expect(await res.json()).toMatchObject({ code: "states-not-configured" });
  });

  it("every hooks door answers 501 tool-runs-not-configured without TOOL_RUNS_STORE_URL (the public doors too)", async () => {
    const key = await admin();
    const doors: Array<[string, string, unknown?]> = [
      ["GET", "/api/hooks"],
      ["POST", "/api/hooks", { name: "h", topic: "t", tool: "echo", execution_key: "root" }],
      ["DELETE", "/api/hooks/h"],
      ["PUT", "/api/hooks/topics/t/verifier", { kind: "github", secret: "a-github-secret" }],
      ["DELETE", "/api/hooks/topics/t/verifier"],
      ["GET", "/api/hooks/trigger-links"],
      ["POST", "/api/hooks/trigger-links", { topic: "t", execution_key: "root", ttl_seconds: 60 }],
      ["DELETE", "/api/hooks/trigger-links/l"],
      ["POST", "/api/hooks/incoming/t", {}],
      ["POST", `/api/hooks/trigger/trg-${"a".repeat(43)}`, {}],
    ];
    for (const [method, path, body] of doors) {
      const res = await fetchWithEnv(
        { ...env, TOOL_RUNS_STORE_URL: "" },
        new Request(`${BASE}${path}`, {
          method,
          headers: { "x-api-key": key, "content-type": "application/json" },
          body: body ? JSON.stringify(body) : undefined,
        }),
      );
      expect(res.status, `${method} ${path}`).toBe(501);
      expect(await res.json()).toMatchObject({ code: "tool-runs-not-configured" });
    }
    // The kinds and the ping need no store.
    const kinds = await fetchWithEnv({ ...env, TOOL_RUNS_STORE_URL: "" }, new Request(`${BASE}/api/hooks/verifiers`, { headers: { "x-api-key": key } }));
    expect(kinds.status).toBe(200);
  });
});

describe("topic verifiers", () => {
  it("lists the four kinds", async () => {
    const r = await call("GET", "/api/hooks/verifiers", { key: await admin() });
    expect(r.body.data.items.map((k: any) => k.kind)).toEqual(["github", "stripe", "standard_webhooks", "hmac_sha256"]);
    expect(r.body.data.items.find((k: any) => k.kind === "stripe")).toMatchObject({ timestamp_tolerance: true, signature_headers: ["Stripe-Signature"] });
  });

  it("binds with the secret sealed at rest and never shown; re-binds; unbinds (then 404)", async () => {
    const topic = topicOf();
    const secret = "it-is-the-SECRETVALUE-of-this-topic";
    const r = await bindVerifier(topic, { kind: "github", secret });
    expect(r.body.data).toEqual({
      topic,
      kind: "github",
      secret: "<redacted>",
      signature_header: null,
      delivery_header: null,
      created_by: "root",
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const row = await env.DB.prepare("SELECT * FROM hook_verifiers WHERE topic = ?").bind(topic).first<Record<string, unknown>>();
    expect(JSON.stringify(row)).not.toContain("SECRETVALUE");
    expect(must(row, "row").secret_sealed).toEqual(expect.any(String));
    const generic = await bindVerifier(topic, { kind: "hmac_sha256", secret: { env: "SECRET_HOOK_TEST" }, signature_header: "X-Sig", delivery_header: null });
    expect(generic.body.data).toMatchObject({ kind: "hmac_sha256", secret: { env: "SECRET_HOOK_TEST" }, signature_header: "X-Sig", delivery_header: null });
    const defaults = await bindVerifier(topic, { kind: "hmac_sha256", secret: "generic-secret" });
    expect(defaults.body.data).toMatchObject({ signature_header: "X-Signature-256", delivery_header: "X-Delivery-Id" });
    const key = await admin();
    expect((await call("DELETE", `/api/hooks/topics/${topic}/verifier`, { key })).body).toEqual({ data: { removed: true, topic } });
    expect((await call("DELETE", `/api/hooks/topics/${topic}/verifier`, { key })).status).toBe(404);
  });

  it("refuses a Standard Webhooks secret that is not base64, an env reference outside the secret scope, a short secret, a header option on another kind", async () => {
    const key = await admin();
    const put = (body: unknown) => call("PUT", `/api/hooks/topics/${topicOf()}/verifier`, { key, body });
    expect((await put({ kind: "standard_webhooks", secret: "whsec_not base64 at all" })).status).toBe(400);
    expect((await put({ kind: "standard_webhooks", secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" })).status).toBe(200);
    const outside = await put({ kind: "github", secret: { env: "CONVERSATIONS_STORE_URL" } });
    expect(outside.status).toBe(400);
    expect(outside.body.error).toMatch(/secret: references an env var outside the secret-reference scope/);
    expect((await put({ kind: "github", secret: "short" })).status).toBe(400);
    expect((await put({ kind: "github", secret: "long-enough-secret", signature_header: "X-Sig" })).status).toBe(400);
    expect((await put({ kind: "nope", secret: "long-enough-secret" })).status).toBe(400);
  });

  it("sealing needs SETTINGS_ENCRYPTION_KEY (501); an env reference does not", async () => {
    const key = await admin();
    const put = (body: unknown) =>
      fetchWithEnv(
        { ...env, SETTINGS_ENCRYPTION_KEY: "" },
        new Request(`${BASE}/api/hooks/topics/${topicOf()}/verifier`, {
          method: "PUT",
          headers: { "x-api-key": key, "content-type": "application/json" },
          body: JSON.stringify(body),
        }),
      );
    const sealed = await put({ kind: "github", secret: "a-github-secret" });
    expect(sealed.status).toBe(501);
    expect(await sealed.json()).toMatchObject({ code: "settings-encryption-not-configured" });
    expect((await put({ kind: "github", secret: { env: "SECRET_HOOK_TEST" } })).status).toBe(200);
  });

  it("is admin only", async () => {
    const writer = await mintKey({ scopes: ["hooks:write"] });
    expect(
      (await call("PUT", `/api/hooks/topics/${topicOf()}/verifier`, { key: writer.key, body: { kind: "github", secret: "a-github-secret" } })).status,
    ).toBe(403);
  });
});

describe("trigger links", () => {
  it("create answers the token once (only its SHA-256 is stored); the listing never shows it; delete (then 404)", async () => {
    const key = await admin();
    const runner = await mintKey({ scopes: ["tool:echo"] });
    const topic = topicOf();
    const r = await call("POST", "/api/hooks/trigger-links", {
      key,
      body: { topic, execution_key: runner.user_id, name: "build-link", ttl_seconds: 3600, tool_kwargs: { message: "m" } },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const { token } = r.body.data;
    expect(r.body.data).toEqual({
      name: "build-link",
      trigger_path: `/api/hooks/trigger/${token}`,
      token: expect.stringMatching(/^trg-[A-Za-z0-9_-]{43}$/),
      topic,
      expires_at: expect.stringMatching(/Z$/),
    });
    expect(Date.parse(r.body.data.expires_at) - Date.now()).toBeGreaterThan(3_500_000);
    const stored = await env.DB.prepare("SELECT * FROM hook_trigger_links WHERE name = 'build-link'").first<Record<string, unknown>>();
    expect(JSON.stringify(stored)).not.toContain(token);
    const listed = await call("GET", "/api/hooks/trigger-links", { key });
    expect(JSON.stringify(listed.body)).not.toContain(token);
    expect(listed.body.data.items.find((l: any) => l.name === "build-link")).toEqual({
      name: "build-link",
      topic,
      execution_key: runner.user_id,
      execution_key_fingerprint: runner.fingerprint,
      tool_kwargs: { message: "m" },
      require_api_key: false,
      created_by: "root",
      created_at: expect.any(String),
      expires_at: r.body.data.expires_at,
    });
    // A live link's name is taken.
    expect(
      (await call("POST", "/api/hooks/trigger-links", { key, body: { topic, execution_key: "root", name: "build-link", ttl_seconds: null } })).status,
    ).toBe(409);
    expect((await call("DELETE", "/api/hooks/trigger-links/build-link", { key })).body).toEqual({ data: { removed: true, name: "build-link" } });
    expect((await call("DELETE", "/api/hooks/trigger-links/build-link", { key })).status).toBe(404);
  });

  it("ttl_seconds is required: a positive whole number or null (kept until deleted)", async () => {
    const key = await admin();
    const create = (ttl: unknown, omit = false) =>
      call("POST", "/api/hooks/trigger-links", {
        key,
        body: omit ? { topic: "t", execution_key: "root" } : { topic: "t", execution_key: "root", ttl_seconds: ttl },
      });
    expect((await create(undefined, true)).status).toBe(400);
    for (const bad of [0, -5, 1.5, "60", true]) expect((await create(bad)).status, String(bad)).toBe(400);
    const forever = await create(null);
    expect(forever.status).toBe(200);
    expect(forever.body.data.expires_at).toBeNull();
    expect(forever.body.data.name).toMatch(/^link-[0-9a-f]{12}$/);
  });

  it("pass-role binds the link's key: a non-admin gets a uniform 403 for a key not its own; an admin 404 for an absent one", async () => {
    const writer = await mintKey({ scopes: ["hooks:write"] });
    const other = await mintKey({ scopes: ["tool:echo"] });
    expect(
      (await call("POST", "/api/hooks/trigger-links", { key: writer.key, body: { topic: "t", execution_key: other.user_id, ttl_seconds: 60 } })).status,
    ).toBe(403);
    expect(
      (await call("POST", "/api/hooks/trigger-links", { key: writer.key, body: { topic: "t", execution_key: "absent-key", ttl_seconds: 60 } })).status,
    ).toBe(403);
    expect(
      (await call("POST", "/api/hooks/trigger-links", { key: await admin(), body: { topic: "t", execution_key: "absent-key", ttl_seconds: 60 } })).status,
    ).toBe(404);
    expect(
      (await call("POST", "/api/hooks/trigger-links", { key: writer.key, body: { topic: "t", execution_key: writer.user_id, ttl_seconds: 60 } })).status,
    ).toBe(200);
  });
});

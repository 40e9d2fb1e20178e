/**
 * Import rules: the document's version, every section validated before any
 * writes (a refusal names the section, the row and the field, never the value, and writes
 * nothing, not even the sections that were fine), each section applied atomically, and the
 * callback secret of a route imported without its own.
 */
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { admin, call, mintKey, uniq } from "../helpers/http";
import { count, exported, importDoc } from "./helpers";
import { must } from "../../src/platform/must";

const NOW = "2026-01-01T00:00:00.000Z";

function tool(title: string, extra: Record<string, unknown> = {}) {
  return { declaration: { title, kind: "http", url: "https://tools.example.com/run", ...extra }, created_at: NOW, updated_at: NOW };
}

function route(name: string, extra: Record<string, unknown> = {}) {
  return {
    route_name: name,
    door: "api",
    target_kind: "tool",
    target_name: "echo",
    execution_key: "root",
    execution_key_fingerprint: "from-the-source",
    payload_expr: null,
    payload_program: null,
    reply_expr: null,
    reply_program: null,
    initial_mode: "agent",
    channel: null,
    our_identity: null,
    callback_url: null,
    turns_per_hour_override: null,
    created_at: NOW,
    updated_at: NOW,
    ...extra,
  };
}

const doc = (sections: Record<string, unknown[]>) => ({ version: 1, exported_at: NOW, sections });

async function toolCount(title: string) {
  return count("SELECT COUNT(*) AS n FROM tool_declarations WHERE title = ?", title);
}

describe("the document", () => {
  it("refuses any version but 1, an unknown section and an unknown field, writing nothing", async () => {
    const title = uniq("t");
    for (const bad of [
      { version: 2, exported_at: NOW, sections: { tools: [tool(title)] } },
      { version: "1", exported_at: NOW, sections: { tools: [tool(title)] } },
      { exported_at: NOW, sections: { tools: [tool(title)] } },
      doc({ tools: [tool(title)], widgets: [] }),
      { ...doc({ tools: [tool(title)] }), extra: true },
      doc({ tools: [{ ...tool(title), colour: "red" }] }),
    ]) {
      const r = await importDoc(bad);
      expect(r.status, JSON.stringify(bad)).toBe(400);
      expect(r.body.error).toContain("document");
    }
    const v2 = await importDoc({ version: 2, exported_at: NOW, sections: {} });
    expect(v2.body.error).toContain("document.version: must be 1");
    expect(await toolCount(title)).toBe(0);
  });

  it("imports only the named sections; naming one the document lacks is 400 by position", async () => {
    const [a, b] = [uniq("t"), uniq("t")];
    const d = doc({ tools: [tool(a)], "text-resources": [{ id: b, content: "x", created_at: NOW, updated_at: NOW }] });
    const missing = await importDoc(d, ["tools", "routes"]);
    expect(missing.status).toBe(400);
    expect(missing.body.error).toContain("sections.1");
    const r = await importDoc(d, ["text-resources"]);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data).toEqual({ ok: true, sections: [{ name: "text-resources", applied: 1 }] });
    expect(await toolCount(a)).toBe(0);
    expect(await count("SELECT COUNT(*) AS n FROM text_resources WHERE id = ?", b)).toBe(1);
  });

  it("an empty document imports nothing", async () => {
    const r = await importDoc(doc({}));
    expect(r.body).toEqual({ data: { ok: true, sections: [] } });
  });
});

describe("validation before any write", () => {
  it.each([
    ["a route whose target exists nowhere", { routes: [route("r-x", { target_name: "NOSUCHTOOLANYWHERE" })] }, "sections.routes.0.target_name"],
    ["a route whose execution key exists nowhere", { routes: [route("r-x", { execution_key: "no-such-key-here" })] }, "sections.routes.0.execution_key"],
    ["a route callback to a private host", { routes: [route("r-x", { callback_url: "https://127.0.0.1/hook" })] }, "sections.routes.0"],
    ["a route callback over http", { routes: [route("r-x", { callback_url: "http://hooks.example.com/h" })] }, "sections.routes.0.callback_url"],
    ["a route program that does not compile", { routes: [route("r-x", { payload_expr: "{", payload_program: "{" })] }, "sections.routes.0.payload_program"],
    ["a program without its expression", { routes: [route("r-x", { payload_program: ".message" })] }, "sections.routes.0.payload_program"],
    ["two routes of one name", { routes: [route("r-x"), route("r-x")] }, "sections.routes.1"],
    ["a tool url on a private host", { tools: [tool("t-x", { url: "https://10.0.0.1/run" })] }, "sections.tools.0"],
    ["a tool named as a built-in", { tools: [tool("echo")] }, "sections.tools.0.declaration.title"],
    ["a withheld header without its value", { tools: [{ ...tool("t-x"), withheld_headers: ["authorization"] }] }, "sections.tools.0.withheld_headers.0"],
    [
      "a secret for a header the tool did not withhold",
      { tools: [tool("t-x")], "target-secrets": [{ kind: "tool", title: "t-x", headers: { authorization: "Bearer SECRETVALUE" } }] },
      "sections.target-secrets.0.headers.0",
    ],
    [
      "a key with a malformed hash",
      {
        keys: [
          {
            user_id: "k-x",
            key_hash: "SECRETVALUE",
            description: "",
            scopes: "[]",
            condition: null,
            owner_user_id: null,
            disabled: 0,
            key_fingerprint: "f",
            created_at: NOW,
            updated_at: NOW,
            role: null,
            versions: [],
          },
        ],
      },
      "sections.keys.0.key_hash",
    ],
    [
      "a key naming a role that exists nowhere",
      {
        keys: [
          {
            user_id: "k-x",
            key_hash: "a".repeat(64),
            description: "",
            scopes: "[]",
            condition: null,
            owner_user_id: null,
            disabled: 0,
            key_fingerprint: "f",
            created_at: NOW,
            updated_at: NOW,
            role: "no-such-role",
            versions: [],
          },
        ],
      },
      "sections.keys.0.role",
    ],
    [
      "a role with a bad grant map",
      { roles: [{ name: "r-x", description: "", grants: '{"tools":"admin"}', condition: null, version: 1, created_at: NOW, updated_at: NOW, versions: [] }] },
      "sections.roles.0.grants",
    ],
    ["a scope url that is not a path", { scopes: [{ scope_id: "s-x", url: "no-slash", pattern: 0, created_at: NOW }] }, "sections.scopes.0.url"],
    [
      "a pin of an admin-only door",
      { "public-routes": [{ method: "GET", path: "/api/backup/sections", pinned_by: null, created_at: NOW }] },
      "sections.public-routes.0",
    ],
    [
      "a preset on a base tool that exists nowhere",
      {
        presets: [
          {
            name: "p-x",
            current_version: 1,
            latest_version: 1,
            created_at: NOW,
            updated_at: NOW,
            versions: [
              {
                version: 1,
                body: { base_tool: "NOSUCHBASE", description: "", fixed_kwargs: {}, input_schema: null, output_schema: null },
                tags: [],
                created_at: NOW,
              },
            ],
          },
        ],
      },
      "sections.presets.0.base_tool",
    ],
    [
      "a config for a target that exists nowhere",
      { "target-configs": [{ target_kind: "agent", target_name: "NOSUCHAGENT" }] },
      "sections.target-configs.0.target_name",
    ],
    [
      "an overlay setting the overlay may not set",
      { "settings-overlay": [{ name: "ACCESS_CONTROL_BOOTSTRAP_TOKEN", value: "SECRETVALUE" }] },
      "sections.settings-overlay.0.name",
    ],
    [
      "an overlay value the settings refuse",
      { "settings-overlay": [{ name: "CONVERSATIONS_PER_ADDRESS_TURNS_PER_HOUR", value: "-5" }] },
      "CONVERSATIONS_PER_ADDRESS_TURNS_PER_HOUR",
    ],
    [
      "a secret setting among the non-secret ones",
      { "settings-overlay": [{ name: "CHANNEL_WHATSAPP_VERIFY_TOKEN", value: "SECRETVALUE" }] },
      "sections.settings-overlay.0.name",
    ],
    [
      "a profile secret whose value is missing",
      { profiles: [{ name: "p-x", versions: [{ version: 1, description: "", env: {}, secret_keys: ["CHANNEL_WHATSAPP_VERIFY_TOKEN"], created_at: NOW }] }] },
      "sections.profiles.0.versions.0.secret_keys.0",
    ],
    [
      "a profile secret without its profile",
      { "settings-secrets": [{ kind: "profile", profile: "p-x", version: 1, name: "CHANNEL_WHATSAPP_VERIFY_TOKEN", value: "SECRETVALUE" }] },
      "sections.settings-secrets.0.profile",
    ],
    [
      "a route secret for a route without a callback",
      { routes: [route("r-x")], "route-secrets": [{ route_name: "r-x", callback_secret: "SECRETVALUE-long-enough" }] },
      "sections.route-secrets.0.route_name",
    ],
    [
      "business hours for a route that will not exist",
      { "route-hours": [{ route_name: "NOSUCH-route", hours: { time_zone: "UTC", weekly: {} }, updated_at: NOW, updated_by: null }] },
      "sections.route-hours.0.route_name",
    ],
    [
      "business hours in a time zone nobody knows",
      { routes: [route("r-x")], "route-hours": [{ route_name: "r-x", hours: { time_zone: "NOSUCH/Zone", weekly: {} }, updated_at: NOW, updated_by: null }] },
      "sections.route-hours.0.hours.time_zone",
    ],
  ])("400 for %s, naming where, never the value, writing nothing", async (_what, sections, where) => {
    const fine = uniq("fine");
    // A section that would be fine on its own comes first: it must not be written either.
    const r = await importDoc(doc({ "text-resources": [{ id: fine, content: "x", created_at: NOW, updated_at: NOW }], ...sections }));
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.error).toContain(where);
    expect(r.body.error).not.toContain("SECRETVALUE");
    expect(r.body.error).not.toMatch(/NOSUCH/);
    expect(await count("SELECT COUNT(*) AS n FROM text_resources WHERE id = ?", fine)).toBe(0);
    expect(await toolCount("t-x")).toBe(0);
    expect(await count("SELECT COUNT(*) AS n FROM routes WHERE route_name = 'r-x'")).toBe(0);
  });

  it("a reference may point into the document itself: a route on a tool and key the same import brings", async () => {
    const title = uniq("t");
    const user = uniq("k");
    const key = {
      user_id: user,
      key_hash: "b".repeat(63) + "1",
      description: "",
      scopes: JSON.stringify([`tool:${title}`]),
      condition: null,
      owner_user_id: null,
      disabled: 0,
      key_fingerprint: "fp-imported",
      created_at: NOW,
      updated_at: NOW,
      role: null,
      versions: [],
    };
    const name = uniq("r").toLowerCase();
    const r = await importDoc(doc({ keys: [key], tools: [tool(title)], routes: [route(name, { target_name: title, execution_key: user })] }));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    // Bound as the route door binds: the fingerprint is the key's in this deployment.
    const stored = await env.DB.prepare("SELECT execution_key, execution_key_fingerprint FROM routes WHERE route_name = ?").bind(name).first();
    expect(stored).toEqual({ execution_key: user, execution_key_fingerprint: "fp-imported" });
  });

  it("business hours restore onto a route the same import brings, and the hours door reads them", async () => {
    const name = uniq("r").toLowerCase();
    const hours = { time_zone: "Asia/Tokyo", weekly: { fri: [["22:00", "02:00"]] }, reply_time_seconds: 900, agent_out_of_hours: "handoff_note" };
    const r = await importDoc(doc({ routes: [route(name)], "route-hours": [{ route_name: name, hours, updated_at: NOW, updated_by: "someone" }] }));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data.sections.find((x: any) => x.name === "route-hours")).toEqual({ name: "route-hours", applied: 1 });
    const read = await call("GET", `/api/conversations/${name}/hours`, { key: await admin() });
    expect(read.body.data).toMatchObject({ hours: { ...hours, locale: "en", away_message: null }, updated_at: NOW, updated_by: "someone" });
  });

  it("a key whose condition needs a request cannot be a route's execution key", async () => {
    const user = uniq("k");
    const key = {
      user_id: user,
      key_hash: "c".repeat(63) + "2",
      description: "",
      scopes: '["tool:echo"]',
      condition: '.request.method == "GET"',
      owner_user_id: null,
      disabled: 0,
      key_fingerprint: "f",
      created_at: NOW,
      updated_at: NOW,
      role: null,
      versions: [],
    };
    const r = await importDoc(doc({ keys: [key], routes: [route(uniq("r").toLowerCase(), { execution_key: user })] }));
    expect(r.status).toBe(400);
    expect(r.body.error).toContain("sections.routes.0.execution_key");
    expect(await count("SELECT COUNT(*) AS n FROM api_keys WHERE user_id = ?", user)).toBe(0);
  });
});

describe("applying", () => {
  it("applies each section atomically: a section refused while applying writes none of its rows, earlier sections stay", async () => {
    const title = uniq("t");
    const state = uniq("st").toLowerCase();
    const key = await admin();
    expect(
      (
        await call("PUT", `/api/states/${state}`, {
          key,
          body: { schema: { type: "object", properties: { a: { type: "string" } } }, subject_kinds: ["thread"] },
        })
      ).status,
    ).toBe(200);
    const good = { target_kind: "tool", target_name: "echo", multichannel: true };
    // The binding names a declared state (so validation passes), but its subject_expr does not
    // compile: the binding check the config door runs refuses it when the section applies.
    const bad = { target_kind: "tool", target_name: title, state_binding: { states: [{ state, subject_expr: { content: "{" } }] } };
    const r = await importDoc(doc({ tools: [tool(title)], "target-configs": [good, bad] }));
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.error).toContain("import stopped at section target-configs");
    expect(r.body.error).toContain("sections.target-configs.1");
    expect(r.body.applied).toEqual([{ name: "tools", applied: 1 }]);
    expect(await toolCount(title)).toBe(1);
    expect(await count("SELECT COUNT(*) AS n FROM conversation_configs WHERE target_name IN ('echo', ?)", title)).toBe(0);
  });

  it("upserts by natural key and leaves what the document does not name", async () => {
    const [kept, replaced] = [uniq("t"), uniq("t")];
    const key = await admin();
    for (const title of [kept, replaced])
      expect((await call("POST", "/api/tools-config/entries", { key, body: { title, kind: "http", url: "https://old.example.com/run" } })).status).toBe(200);
    const r = await importDoc(doc({ tools: [tool(replaced, { url: "https://new.example.com/run" })] }));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const urls = await env.DB.prepare("SELECT title, json_extract(spec, '$.url') AS url FROM tool_declarations WHERE title IN (?, ?) ORDER BY title")
      .bind(kept, replaced)
      .all();
    expect(Object.fromEntries(urls.results.map((u: any) => [u.title, u.url]))).toEqual({
      [kept]: "https://old.example.com/run",
      [replaced]: "https://new.example.com/run",
    });
  });

  it("a route without its secret keeps the deployment's, or gets a new one shown once in the answer", async () => {
    const key = await admin();
    const hook = "https://hooks.example.com/import";
    const existing = uniq("r").toLowerCase();
    const created = await call("POST", `/api/conversations/${existing}`, {
      key,
      body: { door: "api", target_kind: "tool", target_name: "echo", execution_key: "root", callback_url: hook },
    });
    const oldSecret = created.body.data.callback_secret;
    const fresh = uniq("r").toLowerCase();
    const r = await importDoc(doc({ routes: [route(existing, { callback_url: hook }), route(fresh, { callback_url: hook })] }));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const outcome = r.body.data.sections[0];
    expect(outcome).toEqual({
      name: "routes",
      applied: 2,
      callback_secrets: [{ route_name: fresh, callback_secret: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/) }],
    });
    const secretOf = (name: string) => env.DB.prepare("SELECT callback_secret FROM routes WHERE route_name = ?").bind(name).first<string>("callback_secret");
    expect(await secretOf(existing)).toBe(oldSecret);
    expect(await secretOf(fresh)).toBe(outcome.callback_secrets[0].callback_secret);
    // Never shown again: the route reads withhold it.
    expect(JSON.stringify((await call("GET", `/api/conversations/${fresh}`, { key })).body)).not.toContain(outcome.callback_secrets[0].callback_secret);
  });

  it("secret sections apply on their own to what the deployment has", async () => {
    const key = await admin();
    const title = uniq("t");
    expect(
      (
        await call("POST", "/api/tools-config/entries", {
          key,
          body: { title, kind: "http", url: "https://t.example.com/run", headers: { authorization: "old" } },
        })
      ).status,
    ).toBe(200);
    const name = uniq("r").toLowerCase();
    expect(
      (
        await call("POST", `/api/conversations/${name}`, {
          key,
          body: { door: "api", target_kind: "tool", target_name: "echo", execution_key: "root", callback_url: "https://hooks.example.com/x" },
        })
      ).status,
    ).toBe(200);
    const secret = "restored-secret-0123456789";
    const r = await importDoc(
      doc({ "target-secrets": [{ kind: "tool", title, headers: { authorization: "new" } }], "route-secrets": [{ route_name: name, callback_secret: secret }] }),
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(
      await env.DB.prepare("SELECT json_extract(spec, '$.headers.authorization') AS a FROM tool_declarations WHERE title = ?").bind(title).first("a"),
    ).toBe("new");
    expect(await env.DB.prepare("SELECT callback_secret FROM routes WHERE route_name = ?").bind(name).first("callback_secret")).toBe(secret);
    // A secret for a header the deployment's declaration does not hold as a literal is refused.
    const refused = await importDoc(doc({ "target-secrets": [{ kind: "tool", title, headers: { "x-other": "v" } }] }));
    expect(refused.status).toBe(400);
    expect(refused.body.error).toContain("sections.target-secrets.0.headers.0");
  });

  it("the importing key's own row is skipped; another key's row may not take a hash the deployment gives someone else", async () => {
    const other = await mintKey({ scopes: ["tools:read"] });
    const keys = (await exported(["keys"])).sections.keys;
    const root = keys.find((k: any) => k.user_id === "root");
    const victim = keys.find((k: any) => k.user_id === other.user_id);
    const stolen = { ...victim, user_id: uniq("k"), versions: [] };
    const r = await importDoc(doc({ keys: [stolen] }));
    expect(r.status).toBe(400);
    expect(r.body.error).toContain("sections.keys.0.key_hash");
    const own = await importDoc(doc({ keys: [{ ...root, disabled: 1, scopes: "[]" }] }));
    expect(own.status, JSON.stringify(own.body)).toBe(200);
    expect(own.body.data.sections[0]).toMatchObject({ name: "keys", applied: 0, skipped: [{ index: 0 }] });
    // Still an admin.
    expect((await call("GET", "/api/backup/sections", { key: await admin() })).status).toBe(200);
  });
});

describe("the settings overlay", () => {
  afterEach(async () => {
    await env.DB.prepare("DELETE FROM settings_overlay").run();
    expect((await call("POST", "/api/config/reload", { key: await admin() })).status).toBe(200);
  });

  it("non-secret and secret values are validated as one candidate and written in one batch with one generation bump", async () => {
    const generation = () => env.DB.prepare("SELECT generation FROM settings_generation WHERE id = 1").first<number>("generation");
    const before = must(await generation(), "generation()");
    const r = await importDoc(
      doc({
        "settings-overlay": [{ name: "CONVERSATIONS_PER_ADDRESS_TURNS_PER_HOUR", value: "40" }],
        "settings-secrets": [
          { kind: "overlay", name: "CHANNEL_WHATSAPP_VERIFY_TOKEN", value: "verify-VALUE" },
          { kind: "overlay", name: "CHANNEL_WHATSAPP_ACCESS_TOKEN", value: "access-VALUE" },
        ],
      }),
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data.sections).toEqual([
      { name: "settings-overlay", applied: 1 },
      { name: "settings-secrets", applied: 2 },
    ]);
    expect(await generation()).toBe(before + 1);
    const rows = (await env.DB.prepare("SELECT name, value, secret FROM settings_overlay ORDER BY name").all<{ name: string; value: string; secret: number }>())
      .results;
    expect(rows.map((x) => [x.name, x.secret])).toEqual([
      ["CHANNEL_WHATSAPP_ACCESS_TOKEN", 1],
      ["CHANNEL_WHATSAPP_VERIFY_TOKEN", 1],
      ["CONVERSATIONS_PER_ADDRESS_TURNS_PER_HOUR", 0],
    ]);
    expect(JSON.stringify(rows)).not.toContain("-VALUE");
    // The env view shows the setting in force from the overlay, and the secrets only as set.
    const view = await call("GET", "/api/config/env", { key: await admin() });
    expect(JSON.stringify(view.body)).not.toContain("-VALUE");
    // A secret named twice is refused before anything is written.
    const twice = await importDoc(
      doc({
        "settings-secrets": [
          { kind: "overlay", name: "CHANNEL_WHATSAPP_VERIFY_TOKEN", value: "a" },
          { kind: "overlay", name: "CHANNEL_WHATSAPP_VERIFY_TOKEN", value: "b" },
        ],
      }),
    );
    expect(twice.status).toBe(400);
    expect(twice.body.error).toContain("sections.settings-secrets.1");
    expect(await generation()).toBe(before + 1);
  });
});

/**
 * Backup sections: the sections door, the export of every section, secret
 * sections only when named (and no secret in a non-secret one), and a round trip: what an export
 * wrote comes back, row for row, after the deployment is wiped and the document imported.
 */
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE, admin, call, fetchWithEnv, mintKey } from "../helpers/http";
import { count, exportDoc, exported, importDoc, wipeDeployment } from "./helpers";
import { must } from "../../src/platform/must";

const SECRET_SECTIONS = ["keys", "target-secrets", "route-secrets", "hook-secrets", "settings-secrets"];
const APPLY_ORDER = [
  "keys",
  "roles",
  "scopes",
  "public-routes",
  "text-resources",
  "tools",
  "agents",
  "target-secrets",
  "presets",
  "state-templates",
  "states",
  "target-configs",
  "routes",
  "route-secrets",
  "route-hours",
  "hooks",
  "hook-secrets",
  "settings-overlay",
  "settings-secrets",
  "profiles",
  "tool-meta",
  "canned-responses",
];

const TOOL_LITERAL = "Bearer TOOLLITERALVALUE";
const AGENT_LITERAL = "AGENTLITERALVALUE";
const SECRET_SETTING_VALUE = "VERIFYTOKENSECRETVALUE";
const PROFILE_SECRET_VALUE = "PROFILESECRETVALUE";
const HOOK_VERIFIER_SECRET = "HOOKVERIFIERSECRETVALUE";

const fx = { callerKey: "", callerHash: "", callbackSecret: "", folderIds: [] as string[] };

/** A secret value as an export writes it: sealed, never the value. */
const SEALED = { sealed: { kid: expect.any(String), iv: expect.any(String), ct: expect.any(String) } };

/** The document with every sealed value blanked: each seal has a fresh IV, so two exports differ there only. */
function withoutSeals(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(withoutSeals);
  if (v && typeof v === "object") {
    if ("sealed" in v) return "<sealed>";
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, withoutSeals(x)]));
  }
  return v;
}

async function ok(r: { status: number; body: any }, what: string) {
  if (r.status !== 200) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.data;
}

beforeAll(async () => {
  const key = await admin();
  await ok(
    await call("POST", "/api/auth/roles", { key, body: { name: "reader", description: "reads tools", grants: { tools: "read", conversations: "write" } } }),
    "role",
  );
  await ok(await call("PUT", "/api/auth/roles/reader", { key, body: { description: "reads tools, edited" } }), "role edit");
  await ok(await call("POST", "/api/auth/scopes", { key, body: { scope_id: "tool-docs", url: "/api/tools/*/schema", pattern: true } }), "scope");
  await ok(await call("POST", "/api/auth/public-routes", { key, body: { method: "GET", path: "/api/tools" } }), "pin");
  await ok(await call("POST", "/api/storage/resources", { key, body: { id: "greeting-text", content: "hello {{name}}" } }), "resource");
  await ok(
    await call("POST", "/api/tools-config/entries", {
      key,
      body: {
        title: "crm",
        kind: "http",
        url: "https://crm.example.com/run",
        headers: { authorization: TOOL_LITERAL, "x-api-key": { env: "TOOL_SECRET" } },
        input_schema: { type: "object" },
      },
    }),
    "tool",
  );
  await ok(
    await call("POST", "/api/agents-config/entries", {
      key,
      body: { title: "helper", kind: "http", config: { url: "https://agent.example.com/run", headers: { "x-token": AGENT_LITERAL } } },
    }),
    "http agent",
  );
  await ok(
    await call("POST", "/api/agents-config/entries", {
      key,
      body: { title: "thinker", kind: "llm", config: { base_url: "https://llm.example.com/v1", model: "m", api_key: { env: "LLM_KEY" } } },
    }),
    "llm agent",
  );
  await ok(await call("POST", "/api/presets", { key, body: { name: "crm-lookup", base_tool: "crm", fixed_kwargs: { mode: "lookup" } } }), "preset");
  await ok(await call("POST", "/api/presets/crm-lookup/versions", { key, body: { description: "second" } }), "preset v2");
  await ok(await call("PUT", "/api/presets/crm-lookup/versions/1/tags", { key, body: { tags: ["stable"] } }), "preset tags");
  await ok(
    await call("PUT", "/api/conversation-configs/tool/crm-lookup", {
      key,
      body: { target_kind: "tool", target_name: "crm-lookup", multichannel: true, greeting_template: "hi, your code is {pairing_code}" },
    }),
    "config",
  );
  const runner = await mintKey({ user_id: "svc-runner", scopes: ["tool:crm-lookup"] });
  const caller = await mintKey({ user_id: "svc-caller", scopes: ["conversations", "tool-docs"] });
  fx.callerKey = caller.key;
  fx.callerHash = must(await env.DB.prepare("SELECT key_hash FROM api_keys WHERE user_id = 'svc-caller'").first<string>("key_hash"), "the row");
  await ok(await call("PUT", "/api/auth/api-keys/svc-runner", { key, body: { role: "reader" } }), "give role");
  const route = await ok(
    await call("POST", "/api/conversations/crm-api", {
      key,
      body: {
        door: "api",
        target_kind: "tool",
        target_name: "crm-lookup",
        execution_key: runner.user_id,
        payload_expr: "{q: .message}",
        callback_url: "https://hooks.example.com/crm",
      },
    }),
    "route",
  );
  fx.callbackSecret = route.callback_secret;
  await ok(
    await call("POST", "/api/conversations/crm-chat", {
      key,
      body: { door: "channel", channel: "telegram", our_identity: "555", target_kind: "tool", target_name: "crm-lookup", execution_key: runner.user_id },
    }),
    "channel route",
  );
  await ok(
    await call("PUT", "/api/conversations/crm-chat/hours", {
      key,
      body: { time_zone: "Europe/Berlin", weekly: { mon: [["09:00", "17:00"]] }, away_message: "Back {next_opening}.", agent_out_of_hours: "handoff_note" },
    }),
    "route hours",
  );
  await ok(
    await call("POST", "/api/config/env", {
      key,
      body: { set: { CONVERSATIONS_PER_ADDRESS_TURNS_PER_HOUR: 50, CHANNEL_WHATSAPP_VERIFY_TOKEN: SECRET_SETTING_VALUE } },
    }),
    "overlay",
  );
  await ok(
    await call("PUT", "/api/config/profiles/calm", {
      key,
      body: { description: "calm", env: { CONVERSATIONS_PER_ADDRESS_TURNS_PER_HOUR: "10", CHANNEL_WHATSAPP_VERIFY_TOKEN: PROFILE_SECRET_VALUE } },
    }),
    "profile",
  );
  await ok(
    await call("PUT", "/api/config/profiles/calm", { key, body: { description: "calm v2", env: { CONVERSATIONS_PER_ADDRESS_TURNS_PER_HOUR: "12" } } }),
    "profile v2",
  );
  const sales = await ok(await call("POST", "/api/tool-meta/folders", { key, body: { name: "Sales" } }), "folder");
  const crmFolder = await ok(await call("POST", "/api/tool-meta/folders", { key, body: { name: "CRM", parent_id: sales.folder_id } }), "subfolder");
  fx.folderIds = [sales.folder_id, crmFolder.folder_id];
  const canned = await call("PUT", "/api/inbox/canned-responses/refund", {
    key,
    body: { title: "Refunds", template: "Hi {{customer.address}}, refunds take 5 days." },
  });
  if (canned.status !== 201) throw new Error(`canned response: ${canned.status} ${JSON.stringify(canned.body)}`);
  await ok(
    await call("PATCH", "/api/tool-meta/tools/crm", { key, body: { tags: ["crm"], badges: ["beta"], hidden: false, folder_id: crmFolder.folder_id } }),
    "tool meta",
  );
  await ok(await call("PUT", "/api/hooks/topics/crm-events/verifier", { key, body: { kind: "github", secret: HOOK_VERIFIER_SECRET } }), "verifier");
  await ok(
    await call("POST", "/api/hooks", {
      key,
      body: { name: "crm-sync", topic: "crm-events", tool: "crm-lookup", execution_key: runner.user_id, expr: "{q: .id}" },
    }),
    "hook",
  );
  await ok(
    await call("POST", "/api/hooks/trigger-links", {
      key,
      body: { topic: "crm-events", execution_key: runner.user_id, name: "crm-manual", ttl_seconds: null },
    }),
    "trigger link",
  );
});

afterAll(async () => {
  await env.DB.prepare("DELETE FROM settings_overlay").run();
  await call("POST", "/api/config/reload", { key: await admin() });
});

describe("the sections door", () => {
  it("lists every section in apply order with its secret flag; admin only", async () => {
    const r = await call("GET", "/api/backup/sections", { key: await admin() });
    expect(r.status).toBe(200);
    expect(r.body.data.map((s: any) => s.name)).toEqual(APPLY_ORDER);
    expect(r.body.data.filter((s: any) => s.secret).map((s: any) => s.name)).toEqual(SECRET_SECTIONS);
    for (const s of r.body.data) expect(s).toEqual({ name: expect.any(String), secret: expect.any(Boolean), description: expect.any(String) });
    const writer = await mintKey({ scopes: ["backup"] });
    expect((await call("GET", "/api/backup/sections", { key: writer.key })).status).toBe(403);
    expect((await exportDoc(undefined, writer.key)).status).toBe(403);
    expect((await importDoc({ version: 1, exported_at: "x", sections: {} }, undefined, writer.key)).status).toBe(403);
  });
});

describe("export", () => {
  it("answers the raw document as an attachment, not enveloped", async () => {
    const r = await exportDoc();
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toContain("application/json");
    expect(r.headers.get("content-disposition")).toMatch(/^attachment; filename="bridge-backup-\d{8}T\d{6}Z\.json"$/);
    expect(r.body).not.toHaveProperty("data");
    expect(r.body).toEqual({ version: 1, exported_at: expect.stringMatching(/Z$/), sections: expect.any(Object) });
  });

  it("exports every section's rows", async () => {
    const doc = await exported(APPLY_ORDER);
    const s = doc.sections;
    expect(Object.keys(s)).toEqual(APPLY_ORDER);
    const caller = s.keys.find((k: any) => k.user_id === "svc-caller");
    expect(caller).toMatchObject({ key_hash: fx.callerHash, owner_user_id: null, disabled: 0, role: null });
    expect(JSON.parse(caller.scopes)).toEqual(["conversations", "tool-docs"]);
    expect(caller.versions.map((v: any) => v.action)).toEqual(["mint"]);
    expect(s.keys.find((k: any) => k.user_id === "svc-runner").versions.map((v: any) => v.action)).toEqual(["mint", "edit"]);
    const role = s.roles.find((r: any) => r.name === "reader");
    expect(role).toMatchObject({ description: "reads tools, edited", version: 2 });
    expect(JSON.parse(role.grants)).toEqual({ tools: "read", conversations: "write" });
    expect(role.versions.map((v: any) => v.action)).toEqual(["create", "edit"]);
    expect(s.scopes).toEqual([{ scope_id: "tool-docs", url: "/api/tools/*/schema", pattern: 1, created_at: expect.any(String) }]);
    expect(s["public-routes"]).toEqual([{ method: "GET", path: "/api/tools", pinned_by: "root", created_at: expect.any(String) }]);
    expect(s["text-resources"]).toContainEqual(expect.objectContaining({ id: "greeting-text", content: "hello {{name}}" }));
    expect(s.tools).toEqual([
      {
        declaration: {
          title: "crm",
          kind: "http",
          description: "",
          url: "https://crm.example.com/run",
          method: "POST",
          headers: { "x-api-key": { env: "TOOL_SECRET" } },
          input_schema: { type: "object" },
          timeout_seconds: 30,
        },
        withheld_headers: ["authorization"],
        created_at: expect.any(String),
        updated_at: expect.any(String),
      },
    ]);
    expect(s.agents.map((a: any) => [a.declaration.title, a.withheld_headers])).toEqual([
      ["helper", ["x-token"]],
      ["thinker", []],
    ]);
    expect(s.agents[0].declaration.config.headers).toEqual({});
    // Secret values travel sealed (docs/backup.md "Where the secrets are"), never in the clear.
    expect(s["target-secrets"]).toEqual([
      { kind: "tool", title: "crm", headers: { authorization: SEALED } },
      { kind: "agent", title: "helper", headers: { "x-token": SEALED } },
    ]);
    const preset = s.presets[0];
    expect(preset).toMatchObject({ name: "crm-lookup", current_version: 2, latest_version: 2 });
    expect(preset.versions.map((v: any) => [v.version, v.tags, v.body.description])).toEqual([
      [1, ["stable"], ""],
      [2, [], "second"],
    ]);
    expect(preset.versions[0].body).toMatchObject({ base_tool: "crm", fixed_kwargs: { mode: "lookup" } });
    expect(s["target-configs"]).toEqual([
      { target_kind: "tool", target_name: "crm-lookup", multichannel: true, greeting_template: "hi, your code is {pairing_code}", state_binding: null },
    ]);
    const api = s.routes.find((r: any) => r.route_name === "crm-api");
    expect(api).toMatchObject({
      door: "api",
      execution_key: "svc-runner",
      payload_expr: "{q: .message}",
      payload_program: "{q: .message}",
      callback_url: "https://hooks.example.com/crm",
    });
    expect(api).not.toHaveProperty("callback_secret");
    expect(s.routes.find((r: any) => r.route_name === "crm-chat")).toMatchObject({ door: "channel", channel: "telegram", our_identity: "555" });
    expect(s["route-secrets"]).toEqual([{ route_name: "crm-api", callback_secret: SEALED }]);
    expect(s["route-hours"]).toEqual([
      {
        route_name: "crm-chat",
        hours: {
          time_zone: "Europe/Berlin",
          weekly: { mon: [["09:00", "17:00"]] },
          away_message: "Back {next_opening}.",
          reply_time_text: null,
          reply_time_seconds: null,
          locale: "en",
          agent_out_of_hours: "handoff_note",
        },
        updated_at: expect.any(String),
        updated_by: "root",
      },
    ]);
    expect(s["settings-overlay"]).toEqual([{ name: "CONVERSATIONS_PER_ADDRESS_TURNS_PER_HOUR", value: "50" }]);
    expect(s["settings-secrets"]).toEqual([
      { kind: "overlay", name: "CHANNEL_WHATSAPP_VERIFY_TOKEN", value: SEALED },
      { kind: "profile", profile: "calm", version: 1, name: "CHANNEL_WHATSAPP_VERIFY_TOKEN", value: SEALED },
    ]);
    expect(s.profiles).toEqual([
      {
        name: "calm",
        versions: [
          {
            version: 1,
            description: "calm",
            env: { CONVERSATIONS_PER_ADDRESS_TURNS_PER_HOUR: "10" },
            secret_keys: ["CHANNEL_WHATSAPP_VERIFY_TOKEN"],
            created_at: expect.any(String),
          },
          { version: 2, description: "calm v2", env: { CONVERSATIONS_PER_ADDRESS_TURNS_PER_HOUR: "12" }, secret_keys: [], created_at: expect.any(String) },
        ],
      },
    ]);
    expect(s.hooks).toEqual([
      {
        type: "verifier",
        topic: "crm-events",
        kind: "github",
        secret: "<redacted>",
        signature_header: null,
        delivery_header: null,
        created_by: "root",
        created_at: expect.any(String),
        updated_at: expect.any(String),
      },
      expect.objectContaining({
        type: "hook",
        name: "crm-sync",
        topic: "crm-events",
        tool: "crm-lookup",
        execution_key: "svc-runner",
        expr: "{q: .id}",
        expr_program: "{q: .id}",
        condition_program: null,
      }),
    ]);
    expect(s["hook-secrets"]).toEqual([{ topic: "crm-events", secret: SEALED }]);
    const text = JSON.stringify(doc);
    for (const secret of [TOOL_LITERAL, AGENT_LITERAL, fx.callbackSecret, SECRET_SETTING_VALUE, PROFILE_SECRET_VALUE, HOOK_VERIFIER_SECRET])
      expect(text).not.toContain(secret);
    // Trigger links are capabilities: never in a backup.
    expect(JSON.stringify(doc)).not.toContain("crm-manual");
    const [sales, crm] = fx.folderIds;
    expect(s["tool-meta"]).toEqual([
      { kind: "folder", folder_id: sales, name: "Sales", parent_id: null, created_at: expect.any(String), updated_at: expect.any(String) },
      { kind: "folder", folder_id: crm, name: "CRM", parent_id: sales, created_at: expect.any(String), updated_at: expect.any(String) },
      { kind: "tool", name: "crm", tags: ["crm"], badges: ["beta"], hidden: false, folder_id: crm, updated_at: expect.any(String) },
    ]);
    expect(s["canned-responses"]).toEqual([
      {
        shortcode: "refund",
        title: "Refunds",
        template: "Hi {{customer.address}}, refunds take 5 days.",
        created_at: expect.any(String),
        updated_at: expect.any(String),
        updated_by: "root",
      },
    ]);
  });

  it("without sections: every non-secret section, and no secret value anywhere in it", async () => {
    const r = await exportDoc();
    expect(Object.keys(r.body.sections)).toEqual(APPLY_ORDER.filter((n) => !SECRET_SECTIONS.includes(n)));
    const text = JSON.stringify(r.body);
    for (const secret of [
      fx.callerHash,
      fx.callbackSecret,
      TOOL_LITERAL,
      AGENT_LITERAL,
      SECRET_SETTING_VALUE,
      PROFILE_SECRET_VALUE,
      HOOK_VERIFIER_SECRET,
      '"ct"',
      "key_hash",
    ])
      expect(text).not.toContain(secret);
  });

  it("a secret section only when named, alone if named alone", async () => {
    const doc = await exported(["keys"]);
    expect(Object.keys(doc.sections)).toEqual(["keys"]);
    expect(JSON.stringify(doc)).toContain(fx.callerHash);
    // Named in any order, repeated: exported once each, in apply order.
    const two = await exported(["route-secrets", "routes", "routes"]);
    expect(Object.keys(two.sections)).toEqual(["routes", "route-secrets"]);
  });

  it("400 for an unknown section name (by position, never echoed); 501 for a section whose store is off", async () => {
    const r = await exportDoc(["routes", "UNKNOWNSECTIONNAME"]);
    expect(r.status).toBe(400);
    expect(r.body.error).toContain("sections.1");
    expect(r.body.error).not.toContain("UNKNOWNSECTIONNAME");
    const key = await admin();
    const post = (body: unknown) =>
      fetchWithEnv(
        { ...env, STATES_STORE_URL: "" },
        new Request(`${BASE}/api/backup/export`, {
          method: "POST",
          headers: { "x-api-key": key, "content-type": "application/json" },
          body: JSON.stringify(body),
        }),
      );
    const all = await post({});
    expect(all.status).toBe(200);
    const names = Object.keys(((await all.json()) as any).sections);
    expect(names).not.toContain("states");
    expect(names).not.toContain("state-templates");
    expect(names).toContain("routes");
    const named = await post({ sections: ["states"] });
    expect(named.status).toBe(501);
    expect(await named.json()).toMatchObject({ code: "states-not-configured" });
  });
});

describe("round trip into a fresh deployment", () => {
  it("restores every section row for row; the same raw keys work; importing again changes nothing", async () => {
    const before = await exported(APPLY_ORDER);
    await wipeDeployment();
    expect(await count("SELECT COUNT(*) AS n FROM api_keys")).toBe(1);
    expect((await call("GET", "/api/tools/crm/schema", { key: fx.callerKey })).status).toBe(401);

    const r = await importDoc(before);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data.sections.map((s: any) => s.name)).toEqual(APPLY_ORDER);
    // Nothing was minted: every api route's secret came with the document.
    expect(r.body.data.sections.find((s: any) => s.name === "routes")).toEqual({ name: "routes", applied: 2 });
    const after = await exported(APPLY_ORDER);
    expect(withoutSeals(after.sections)).toEqual(withoutSeals(before.sections));
    // The caller's raw key and its custom URL scope work again.
    expect((await call("GET", "/api/tools/crm/schema", { key: fx.callerKey })).status).toBe(200);
    // The secret setting is sealed again under this deployment's key, never stored in plain text.
    const stored = await env.DB.prepare("SELECT value, secret FROM settings_overlay WHERE name = 'CHANNEL_WHATSAPP_VERIFY_TOKEN'").first<{
      value: string;
      secret: number;
    }>();
    expect(must(stored, "stored").secret).toBe(1);
    expect(must(stored, "stored").value).not.toContain(SECRET_SETTING_VALUE);
    const profile = await env.DB.prepare("SELECT sealed FROM config_profiles WHERE name = 'calm' AND version = 1").first<string>("sealed");
    expect(profile).not.toContain(PROFILE_SECRET_VALUE);

    const again = await importDoc(before);
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(withoutSeals((await exported(APPLY_ORDER)).sections)).toEqual(withoutSeals(before.sections));
  });
});

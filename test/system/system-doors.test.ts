/**
 * System status doors: the runtime's honest identity, the isolate census, the
 * fleet reload, and the pluggable-kinds table (platform-facts B8, B9).
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { systemKinds } from "../../src/system/status";
import { parseSettings } from "../../src/platform/settings/settings";
import { BASE, admin, call, fetchWithEnv, mintKey } from "../helpers/http";

const KINDS = [
  "backend",
  "identity",
  "conversations",
  "states",
  "tool_runs",
  "interactions",
  "connectors",
  "marketplace",
  "storage",
  "channels",
  "webhook_verifiers",
  "checkpoints",
  "config",
];

async function kindsWith(vars: Record<string, unknown>) {
  const res = await fetchWithEnv(vars, new Request(`${BASE}/api/system/kinds`, { headers: { "x-api-key": await admin() } }));
  expect(res.status).toBe(200);
  const rows = ((await res.json()) as { data: Array<{ kind: string; state: string; plugin: string | null; detail: string }> }).data;
  return Object.fromEntries(rows.map((r) => [r.kind, r]));
}

describe("GET /api/backend", () => {
  it("names the runtime: Cloudflare Workers on workerd", async () => {
    const r = await call("GET", "/api/backend", { key: await admin() });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ present: true, backend: "cloudflare-workers", module: "workerd" });
    expect(typeof r.body.data.detail).toBe("string");
  });
});

describe("the fleet doors", () => {
  it("lists only the isolate that answered, with its settings generation, and the bound object namespaces", async () => {
    const key = await admin();
    const r = await call("GET", "/api/fleet/workers", { key });
    expect(r.status).toBe(200);
    const { workers, objects, note } = r.body.data;
    expect(workers).toHaveLength(1);
    const w = workers[0];
    expect(w).toMatchObject({ kind: "isolate", pid: null, state: "running", stale: false });
    expect(w.name).toMatch(/^isolate-[0-9a-f-]{36}$/);
    expect(Date.parse(w.joined_at)).toBeLessThanOrEqual(Date.parse(w.beat_at));
    const mode = await call("GET", "/api/config/mode", { key });
    expect(w.generation).toBe(mode.body.data.in_force_generation);
    // The same isolate answers again under the same name.
    expect((await call("GET", "/api/fleet/workers", { key })).body.data.workers[0].name).toBe(w.name);
    const bindings = Object.keys(env).filter(
      (k) =>
        typeof (env as unknown as Record<string, unknown>)[k] === "object" &&
        typeof ((env as unknown as Record<string, unknown>)[k] as DurableObjectNamespace)?.idFromName === "function",
    );
    expect(objects.map((o: { binding: string }) => o.binding)).toEqual(bindings.sort());
    expect(objects.map((o: { binding: string }) => o.binding)).toEqual(expect.arrayContaining(["THREADS", "INDEX_SHARDS", "ADDRESS_BUCKETS"]));
    expect(note).toContain("cannot enumerate");
  });

  it("reload-config bumps the settings generation (admin only); this isolate applies it at once", async () => {
    const key = await admin();
    const before = (await call("GET", "/api/config/mode", { key })).body.data.generation;
    const r = await call("POST", "/api/fleet/reload-config", { key });
    expect(r.status).toBe(200);
    expect(r.body.data.generation).toBe(before + 1);
    const w = (await call("GET", "/api/fleet/workers", { key })).body.data.workers[0];
    expect(w).toMatchObject({ generation: before + 1, last_op: "settings-write" });
    const systemWriter = await mintKey({ scopes: ["system"] });
    expect((await call("POST", "/api/fleet/reload-config", { key: systemWriter.key })).status).toBe(403);
    expect((await call("POST", "/api/fleet/reload-config", { key, body: { targets: ["x"] } })).status).toBe(400);
  });
});

describe("GET /api/system/kinds", () => {
  it("has one row per pluggable kind, saying what is configured and never a value", async () => {
    const r = await call("GET", "/api/system/kinds", { key: await admin() });
    expect(r.status).toBe(200);
    const rows = r.body.data as Array<{ kind: string; state: string; plugin: string | null; detail: string }>;
    expect(rows.map((x) => x.kind)).toEqual(KINDS);
    for (const row of rows) {
      expect(Object.keys(row).sort()).toEqual(["detail", "kind", "plugin", "state"]);
      expect(["active", "default", "off"]).toContain(row.state);
    }
    const by = Object.fromEntries(rows.map((x) => [x.kind, x]));
    expect(by.conversations).toMatchObject({ state: "active", plugin: "d1" });
    expect(by.conversations.detail).toContain("CONVERSATIONS_STORE_URL configured");
    expect(by.channels).toMatchObject({ state: "active", plugin: "twilio,whatsapp,telegram,slack,web" });
    expect(by.checkpoints).toMatchObject({ state: "default", plugin: "kv" });
    expect(by.identity.detail).toContain("ACCESS_CONTROL_BOOTSTRAP_TOKEN configured");
    expect(by.config.detail).toContain("SETTINGS_ENCRYPTION_KEY configured");
    const text = JSON.stringify(rows);
    for (const value of [
      "d1://DB",
      String(env.ACCESS_CONTROL_BOOTSTRAP_TOKEN),
      "twilio-test-token",
      "ACtest",
      String((env as unknown as Record<string, unknown>).SETTINGS_ENCRYPTION_KEY),
    ])
      expect(text).not.toContain(value);
  });

  it("follows the settings: stores off, no provider channels, an explicit checkpoint provider", async () => {
    const bare = Object.fromEntries(Object.entries(env).filter(([k]) => !k.startsWith("CHANNEL_")));
    const by = await kindsWith({
      ...bare,
      STATES_STORE_URL: "",
      MARKETPLACE_STORE_URL: "",
      LLM_PROVIDER_CHECKPOINT: "d1",
      LLM_PROVIDER_CHECKPOINT_TTL_MINUTES: "30",
    });
    expect(by.states).toMatchObject({ state: "off", plugin: null });
    expect(by.states.detail).toContain("STATES_STORE_URL not configured");
    expect(by.marketplace).toMatchObject({ state: "off" });
    // The web channel needs no secret: it stays on with every provider unset.
    expect(by.channels).toMatchObject({ state: "active", plugin: "web" });
    expect(by.checkpoints).toMatchObject({ state: "active", plugin: "d1" });
    expect(by.checkpoints.detail).toContain("LLM_PROVIDER_CHECKPOINT_TTL_MINUTES configured");
    expect(by.conversations.state).toBe("active");
  });

  it("is a pure function of settings, env and the overlay state", () => {
    const vars = { DB: {}, CONVERSATIONS_STORE_URL: "d1://DB" };
    const r = parseSettings(vars);
    if (!r.ok) throw new Error(r.errors.join());
    const rows = systemKinds(r.settings, vars, { generation: 4, names: 2 });
    const by = Object.fromEntries(rows.map((x) => [x.kind, x]));
    expect(by.config).toMatchObject({ state: "active", plugin: "d1-overlay" });
    expect(by.config.detail).toContain("generation 4, 2 overlaid setting(s)");
    expect(by.config.detail).toContain("SETTINGS_ENCRYPTION_KEY not configured");
    expect(by.identity.detail).toContain("ACCESS_CONTROL_BOOTSTRAP_TOKEN not configured");
    expect(by.states).toMatchObject({ state: "off" });
    expect(by.interactions).toMatchObject({ state: "off" });
    expect(by.connectors).toMatchObject({ state: "off" });
    expect(by.storage).toMatchObject({ state: "default" });
    expect(systemKinds(r.settings, vars, { generation: 0, names: 0 }).find((x) => x.kind === "config")?.state).toBe("default");
  });

  it("system:read reads the status doors; other grants do not", async () => {
    const reader = await mintKey({ scopes: ["system:read"] });
    for (const path of ["/api/backend", "/api/fleet/workers", "/api/system/kinds"])
      expect((await call("GET", path, { key: reader.key })).status, path).toBe(200);
    const other = await mintKey({ scopes: ["config:read"] });
    expect((await call("GET", "/api/system/kinds", { key: other.key })).status).toBe(403);
  });
});

/**
 * The marketplace doors against the built-in catalog (`MARKETPLACE_REGISTRY_URL = "builtin:"`, the
 * wrangler.toml default the workers tests run with): the reads, preview (writes nothing), install
 * and running what it installed, the collision with a declaration made by hand, uninstall, admin-only
 * writes, bad input, and the 501s without a store or a registry.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { BASE, admin, call, fetchWithEnv, mintKey } from "../helpers/http";
import { must } from "../../src/platform/must";

const M = "/api/marketplace";

async function tableCounts(): Promise<Record<string, number>> {
  const count = async (table: string) => must(await env.DB.prepare(`SELECT COUNT(*) AS n FROM ${table}`).first<{ n: number }>(), "the row").n;
  return {
    tools: await count("tool_declarations"),
    agents: await count("agent_declarations"),
    presets: await count("presets"),
    versions: await count("preset_versions"),
    installs: await count("marketplace_installs"),
    owned: await count("marketplace_owned"),
  };
}

describe("registry reads (built-in catalog)", () => {
  it("search lists the catalog by ref, with compatibility and filters", async () => {
    const key = await admin();
    const all = await call("GET", `${M}/search`, { key });
    expect(all.status, JSON.stringify(all.body)).toBe(200);
    expect(all.body.data).toMatchObject({ total: 4, page: 1, page_size: 50, next_page: null, truncated: false });
    expect(all.body.data.items.map((p: any) => p.ref)).toEqual(["examples/greetings", "examples/profile-memory", "examples/support-desk", "examples/weather"]);
    const weather = all.body.data.items.find((p: any) => p.ref === "examples/weather");
    expect(weather).toEqual({
      ref: "examples/weather",
      namespace: "examples",
      name: "weather",
      description: "An HTTP weather tool and a preset for one city.",
      categories: ["examples", "data"],
      kinds: ["http_tool", "preset", "state_template"],
      latest_version: "1.0.0",
      newest_version: "2.0.0",
      compatible: true,
      installed_version: null,
      advisory_count: 1,
    });
    const future = all.body.data.items.find((p: any) => p.ref === "examples/profile-memory");
    expect(future).toMatchObject({ latest_version: null, newest_version: "1.0.0", compatible: false });

    const q = async (query: string) => (await call("GET", `${M}/search?${query}`, { key })).body.data.items.map((p: any) => p.ref);
    expect(await q("q=WEATHER")).toEqual(["examples/weather"]);
    expect(await q("q=echo")).toEqual(["examples/greetings"]); // matches the description
    expect(await q("category=agents")).toEqual(["examples/support-desk"]);
    expect(await q("kind=preset")).toEqual(["examples/greetings", "examples/weather"]);
    expect(await q("compatible=false")).toEqual(["examples/profile-memory"]);
    expect(await q("kind=preset&category=data")).toEqual(["examples/weather"]);
    const paged = await call("GET", `${M}/search?pageSize=3&page=2`, { key });
    expect(paged.body.data).toMatchObject({ total: 4, page: 2, page_size: 3, next_page: null });
    expect(paged.body.data.items.map((p: any) => p.ref)).toEqual(["examples/weather"]);
    expect((await call("GET", `${M}/search?pageSize=3`, { key })).body.data.next_page).toBe(2);
  });

  it("categories and kinds count plugins; kinds name the contract and what this build installs", async () => {
    const key = await admin();
    const cats = await call("GET", `${M}/categories`, { key });
    expect(cats.body.data).toEqual({
      items: [
        { category: "agents", plugins: 1 },
        { category: "data", plugins: 1 },
        { category: "examples", plugins: 4 },
        { category: "states", plugins: 1 },
        { category: "text", plugins: 1 },
      ],
      total: 5,
    });
    const kinds = await call("GET", `${M}/kinds`, { key });
    expect(kinds.body.data.contract).toEqual({ name: "bridge-declarations", version: 1, label: "bridge-declarations 1" });
    expect(kinds.body.data.items.map((k: any) => [k.kind, k.supported, k.plugins])).toEqual([
      ["agent", true, 1],
      ["http_tool", true, 1],
      ["preset", true, 2],
      ["state_template", false, 2],
    ]);
    expect(kinds.body.data.items[0].description).toContain("/api/agents-config/entries");
  });

  it("plugin detail: versions newest first with their bundles, advisories; any case; unknown 404 without echo", async () => {
    const key = await admin();
    const r = await call("GET", `${M}/plugins/Examples/WEATHER`, { key });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data.versions).toEqual([
      { version: "2.0.0", prerelease: false, contracts: { "bridge-declarations": [2] }, bundle: "incompatible", declarations: null, advisories: [] },
      {
        version: "1.0.0",
        prerelease: false,
        contracts: { "bridge-declarations": [1] },
        bundle: "ok",
        declarations: { http_tools: ["weather-lookup"], agents: [], presets: ["weather-berlin"] },
        advisories: [],
      },
      {
        version: "0.9.0",
        prerelease: false,
        contracts: { "bridge-declarations": [1] },
        bundle: "ok",
        declarations: { http_tools: ["weather-lookup"], agents: [], presets: [] },
        advisories: ["EXAMPLE-2026-001"],
      },
    ]);
    expect(r.body.data.advisories).toEqual([
      expect.objectContaining({
        ref: "examples/weather",
        id: "EXAMPLE-2026-001",
        severity: "low",
        affected_versions: ["0.9.0"],
        fixed_in: "1.0.0",
        url: null,
        installed_version: null,
        affects_installed: false,
      }),
    ]);
    const missing = await call("GET", `${M}/plugins/examples/zzqmarker`, { key });
    expect(missing.status).toBe(404);
    expect(JSON.stringify(missing.body)).not.toContain("zzqmarker");
    expect((await call("GET", `${M}/plugins/-bad/x`, { key })).status).toBe(400);
  });

  it("advisories: all, by ref, and only those affecting what is installed", async () => {
    const key = await admin();
    const all = await call("GET", `${M}/advisories`, { key });
    expect(all.body.data.total).toBe(1);
    expect(all.body.data.items[0]).toMatchObject({ ref: "examples/weather", id: "EXAMPLE-2026-001" });
    expect((await call("GET", `${M}/advisories?ref=examples/greetings`, { key })).body.data.total).toBe(0);
    expect((await call("GET", `${M}/advisories?severity=critical`, { key })).body.data.total).toBe(0);
    expect((await call("GET", `${M}/advisories?installed=true`, { key })).body.data.total).toBe(0);
  });
});

describe("install, preview and uninstall (built-in catalog)", () => {
  it("preview shows exactly what install adds and writes nothing", async () => {
    const key = await admin();
    const before = await tableCounts();
    const r = await call("POST", `${M}/install/preview`, { key, body: { ref: "examples/weather" } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data).toMatchObject({ operation: "install", ref: "examples/weather", version: "1.0.0", previous_version: null, advisories: [] });
    expect(r.body.data.changes.replace).toEqual([]);
    expect(r.body.data.changes.remove).toEqual([]);
    expect(r.body.data.changes.add).toEqual([
      {
        kind: "http_tool",
        name: "weather-lookup",
        declaration: expect.objectContaining({
          title: "weather-lookup",
          kind: "http",
          url: "https://example.com/weather",
          method: "POST",
          headers: {},
          timeout_seconds: 10,
        }),
      },
      {
        kind: "preset",
        name: "weather-berlin",
        declaration: expect.objectContaining({ name: "weather-berlin", base_tool: "weather-lookup", fixed_kwargs: { city: "Berlin" } }),
      },
    ]);
    // An explicit older version carries its advisory.
    const old = await call("POST", `${M}/install/preview`, { key, body: { ref: "examples/weather", version: "0.9.0" } });
    expect(old.body.data.advisories.map((a: any) => a.id)).toEqual(["EXAMPLE-2026-001"]);
    expect(await tableCounts()).toEqual(before);
    expect((await call("GET", "/api/tools/weather-lookup/schema", { key })).status).toBe(404);
  });

  it("installs greetings: its presets run, installed lists it, search shows the version; a second install is 409", async () => {
    const key = await admin();
    const r = await call("POST", `${M}/install`, { key, body: { ref: "Examples/Greetings" } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data).toMatchObject({ operation: "install", ref: "examples/greetings", version: "1.1.0", previous_version: null });
    expect(r.body.data.installed).toMatchObject({
      ref: "examples/greetings",
      namespace: "examples",
      name: "greetings",
      version: "1.1.0",
      declarations: { http_tools: [], agents: [], presets: ["good-morning", "hello-world"] },
    });
    const ran = await call("POST", "/api/run-tool", { key, body: { tool_name: "hello-world", arguments: {} } });
    expect(ran.body).toEqual({ data: "hello, world" });
    const installed = await call("GET", `${M}/installed`, { key });
    expect(installed.body.data.items.map((p: any) => [p.ref, p.version])).toContainEqual(["examples/greetings", "1.1.0"]);
    const found = await call("GET", `${M}/search?installed=true`, { key });
    expect(found.body.data.items.map((p: any) => [p.ref, p.installed_version])).toEqual([["examples/greetings", "1.1.0"]]);

    const again = await call("POST", `${M}/install`, { key, body: { ref: "examples/greetings" } });
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({ code: "PLUGIN_ALREADY_INSTALLED", ref: "examples/greetings", installed_version: "1.1.0" });
    // Preview of an installed plugin previews its update: nothing to add, both presets replaced.
    const pv = await call("POST", `${M}/install/preview`, { key, body: { ref: "examples/greetings", version: "1.0.0" } });
    expect(pv.body.data).toMatchObject({ operation: "update", version: "1.0.0", previous_version: "1.1.0" });
    expect(pv.body.data.changes.replace.map((c: any) => c.name)).toEqual(["hello-world"]);
    expect(pv.body.data.changes.remove).toEqual([{ kind: "preset", name: "good-morning" }]);

    const un = await call("POST", `${M}/uninstall`, { key, body: { ref: "examples/greetings" } });
    expect(un.body.data).toEqual({
      ref: "examples/greetings",
      version: "1.1.0",
      removed: [
        { kind: "preset", name: "good-morning" },
        { kind: "preset", name: "hello-world" },
      ],
    });
    expect((await call("GET", "/api/presets/hello-world", { key })).status).toBe(404);
    expect((await call("POST", `${M}/uninstall`, { key, body: { ref: "examples/greetings" } })).status).toBe(404);
  });

  it("a declaration made by hand under a plugin's name is a 409 collision naming it, and nothing is written", async () => {
    const key = await admin();
    expect(
      (await call("POST", "/api/tools-config/entries", { key, body: { title: "weather-lookup", kind: "http", url: "https://example.com/mine" } })).status,
    ).toBe(200);
    const before = await tableCounts();
    const r = await call("POST", `${M}/install`, { key, body: { ref: "examples/weather" } });
    expect(r.status).toBe(409);
    expect(r.body).toMatchObject({
      code: "DECLARATION_COLLISION",
      ref: "examples/weather",
      collisions: [{ kind: "http_tool", name: "weather-lookup", owner: "operator" }],
    });
    expect(r.body.error).toContain("weather-lookup");
    expect(await tableCounts()).toEqual(before);
    expect((await call("GET", "/api/presets/weather-berlin", { key })).status).toBe(404);
    // The preview refuses alike.
    expect((await call("POST", `${M}/install/preview`, { key, body: { ref: "examples/weather" } })).body.code).toBe("DECLARATION_COLLISION");
    await call("DELETE", "/api/tools-config/entries/weather-lookup", { key });
    // With the name free again, the plugin installs; the explicit incompatible version does not.
    const incompatible = await call("POST", `${M}/install`, { key, body: { ref: "examples/weather", version: "2.0.0" } });
    expect(incompatible.status).toBe(409);
    expect(incompatible.body).toMatchObject({ code: "VERSION_INCOMPATIBLE", version: "2.0.0", contract: "bridge-declarations 1" });
    expect((await call("POST", `${M}/install`, { key, body: { ref: "examples/weather", version: "9.9.9" } })).status).toBe(404);
    expect((await call("POST", `${M}/install`, { key, body: { ref: "examples/profile-memory" } })).body.code).toBe("NO_COMPATIBLE_VERSION");
    const ok = await call("POST", `${M}/install`, { key, body: { ref: "examples/weather", version: "0.9.0" } });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.data.advisories.map((a: any) => [a.id, a.affects_installed])).toEqual([["EXAMPLE-2026-001", false]]);
    const adv = await call("GET", `${M}/advisories?installed=true`, { key });
    expect(adv.body.data.items.map((a: any) => [a.ref, a.installed_version, a.affects_installed])).toEqual([["examples/weather", "0.9.0", true]]);
    expect((await call("POST", `${M}/uninstall`, { key, body: { ref: "examples/weather" } })).status).toBe(200);
  });
});

describe("who may, and what is refused", () => {
  const writes: Array<[string, unknown]> = [
    [`${M}/install`, { ref: "examples/greetings" }],
    [`${M}/install/preview`, { ref: "examples/greetings" }],
    [`${M}/update`, { ref: "examples/greetings" }],
    [`${M}/uninstall`, { ref: "examples/greetings" }],
    [`${M}/upgrade-all`, {}],
  ];

  it("every write is admin-only; reads need marketplace:read", async () => {
    const writer = await mintKey({ scopes: ["marketplace:write", "tools:write", "presets:write"] });
    const reader = await mintKey({ scopes: ["marketplace:read"] });
    for (const [path, body] of writes) {
      const r = await call("POST", path, { key: writer.key, body });
      expect(r.status, path).toBe(403);
      expect(r.body).toEqual({ error: "Forbidden" });
    }
    for (const path of ["/search", "/categories", "/kinds", "/advisories", "/plugins/examples/weather", "/installed"]) {
      expect((await call("GET", `${M}${path}`, { key: reader.key })).status, path).toBe(200);
    }
    const other = await mintKey({ scopes: ["tools:read"] });
    expect((await call("GET", `${M}/installed`, { key: other.key })).status).toBe(403);
    expect((await call("GET", `${M}/installed`)).status).toBe(401);
  });

  it.each([
    ["a ref without a namespace", `${M}/install`, { ref: "greetings" }, "ref"],
    ["a ref with three parts", `${M}/install`, { ref: "a/b/c" }, "ref"],
    ["a version that is not semver", `${M}/install`, { ref: "examples/greetings", version: "1.0" }, "version"],
    ["an unknown field", `${M}/install`, { ref: "examples/greetings", force: true }, "force"],
    ["force as a string", `${M}/update`, { ref: "examples/greetings", force: "yes" }, "force"],
    ["a missing ref", `${M}/uninstall`, {}, "ref"],
    ["a body on upgrade-all", `${M}/upgrade-all`, { dry_run: true }, "dry_run"],
  ])("400 for %s, naming the field", async (_what, path, body, field) => {
    const r = await call("POST", path, { key: await admin(), body });
    expect(r.status).toBe(400);
    expect(r.body.error).toContain(field);
  });

  it("400 for bad query values, naming them", async () => {
    const key = await admin();
    for (const [query, field] of [
      ["category=Bad!", "category"],
      ["kind=1x", "kind"],
      ["compatible=yes", "compatible"],
      ["pageSize=0", "pageSize"],
    ]) {
      const r = await call("GET", `${M}/search?${query}`, { key });
      expect(r.status, query).toBe(400);
      expect(r.body.error).toContain(field);
    }
    expect((await call("GET", `${M}/advisories?ref=nope`, { key })).status).toBe(400);
  });

  it("an unknown plugin is 404 and the message never echoes the ref", async () => {
    const r = await call("POST", `${M}/install`, { key: await admin(), body: { ref: "zzqmarker/zzqmarker" } });
    expect(r.status).toBe(404);
    expect(JSON.stringify(r.body)).not.toContain("zzqmarker");
    expect((await call("POST", `${M}/update`, { key: await admin(), body: { ref: "examples/greetings" } })).body).toEqual({ error: "plugin is not installed" });
  });

  it("without MARKETPLACE_STORE_URL every door is 501 marketplace-not-configured", async () => {
    const key = await admin();
    const doors: Array<[string, string, unknown?]> = [
      ["GET", `${M}/search`],
      ["GET", `${M}/categories`],
      ["GET", `${M}/kinds`],
      ["GET", `${M}/advisories`],
      ["GET", `${M}/plugins/examples/weather`],
      ["GET", `${M}/installed`],
      ...writes.map(([path, body]) => ["POST", path, body] as [string, string, unknown]),
    ];
    for (const [method, path, body] of doors) {
      const res = await fetchWithEnv(
        { ...env, MARKETPLACE_STORE_URL: "" },
        new Request(`${BASE}${path}`, {
          method,
          headers: { "x-api-key": key, "content-type": "application/json" },
          body: body ? JSON.stringify(body) : undefined,
        }),
      );
      expect(res.status, `${method} ${path}`).toBe(501);
      const json = (await res.json()) as any;
      expect(json.code).toBe("marketplace-not-configured");
      expect(json.error).toContain("MARKETPLACE_STORE_URL");
    }
  });

  it("without MARKETPLACE_REGISTRY_URL the registry doors are 501; installed and upgrade-all still answer", async () => {
    const key = await admin();
    const noRegistry = { ...env, MARKETPLACE_REGISTRY_URL: "" };
    const send = (method: string, path: string, body?: unknown) =>
      fetchWithEnv(
        noRegistry,
        new Request(`${BASE}${path}`, {
          method,
          headers: { "x-api-key": key, "content-type": "application/json" },
          body: body ? JSON.stringify(body) : undefined,
        }),
      );
    for (const [method, path, body] of [
      ["GET", `${M}/search`],
      ["GET", `${M}/kinds`],
      ["POST", `${M}/install`, { ref: "examples/greetings" }],
      ["POST", `${M}/install/preview`, { ref: "examples/greetings" }],
      ["POST", `${M}/update`, { ref: "examples/greetings" }],
    ] as Array<[string, string, unknown?]>) {
      const res = await send(method, path, body);
      expect(res.status, path).toBe(501);
      expect(((await res.json()) as any).code).toBe("marketplace-registry-not-configured");
    }
    expect((await send("GET", `${M}/installed`)).status).toBe(200);
    const all = await send("POST", `${M}/upgrade-all`);
    expect(all.status).toBe(200);
  });
});

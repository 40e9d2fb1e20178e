/**
 * Marketplace end to end: against a real `wrangler dev` whose
 * MARKETPLACE_REGISTRY_URL is a fake registry served over HTTPS under the test CA. Plugins install
 * from it (an HTTP tool that then runs, presets over echo); the registry publishes a newer
 * compatible version of one plugin and versions of two others that support no compatible contract;
 * one upgrade-all moves the first and reports the others with the documented outcomes
 * (docs/marketplace.md "upgrade-all"), without aborting the batch. A registry that goes down is a
 * 502 on the doors that read it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BOOTSTRAP_TOKEN, type DevServer, http, startDev } from "./harness";
import { type FakeRegistry, startFakeRegistry } from "./support/fake-registry";
import { type TestPki, makeTestPki, trustEnv } from "./support/tls";
import { type ToolServer, startToolServer } from "./support/tool-server";

const M = "/api/marketplace";
const V1 = { "bridge-declarations": [1] };
const V2 = { "bridge-declarations": [2] };

const hello = (message: string) => ({ name: "e2e-hello", base_tool: "echo", description: "greets", fixed_kwargs: { message } });

let pki: TestPki;
let registry: FakeRegistry;
let tool: ToolServer;
let dev: DevServer;
let base: string;
let key: string;

type Version = { version: string; contracts: Record<string, number[]>; declarations: Record<string, unknown> };
type Plugin = { namespace: string; name: string; description: string; categories: string[]; kinds: string[]; versions: Version[] };

/** The index as first published: three plugins, each at 1.0.0 for bridge-declarations 1. */
function firstIndex(): { format: string; plugins: Plugin[] } {
  return {
    format: "bridge-marketplace-index/1",
    plugins: [
      {
        namespace: "Acme",
        name: "greeter",
        description: "A greeting preset",
        categories: ["e2e"],
        kinds: ["preset"],
        versions: [{ version: "1.0.0", contracts: V1, declarations: { presets: [hello("hello from 1.0.0")] } }],
      },
      {
        namespace: "Acme",
        name: "shouter",
        description: "An HTTP tool served by the test",
        categories: ["e2e"],
        kinds: ["http_tool"],
        versions: [{ version: "1.0.0", contracts: V1, declarations: { http_tools: [{ title: "e2e-shout", kind: "http", url: tool.url }] } }],
      },
      {
        namespace: "Acme",
        name: "orphan",
        description: "A preset whose publisher moves to a newer contract",
        categories: ["e2e"],
        kinds: ["preset"],
        versions: [
          { version: "1.0.0", contracts: V1, declarations: { presets: [{ name: "e2e-orphan", base_tool: "echo", fixed_kwargs: { message: "orphan" } }] } },
        ],
      },
    ],
  };
}

beforeAll(async () => {
  pki = makeTestPki();
  tool = await startToolServer();
  registry = await startFakeRegistry(pki, { format: "bridge-marketplace-index/1", plugins: [] });
  registry.publish(firstIndex());
  dev = await startDev({ vars: { MARKETPLACE_REGISTRY_URL: registry.url }, env: trustEnv(pki) });
  base = dev.baseUrl;
  const boot = await http(base, "POST", "/api/keys/bootstrap", { body: { user_id: "root", description: "e2e admin", bootstrap_token: BOOTSTRAP_TOKEN } });
  expect(boot.status).toBe(200);
  key = boot.body.data.token;
}, 180_000);

afterAll(async () => {
  await dev?.close();
  await registry?.stop();
  await tool?.stop();
  pki?.cleanup();
});

describe("marketplace against a real wrangler dev and an HTTPS registry", () => {
  it("installs from the registry, then upgrade-all moves what can move and reports the rest", async () => {
    const found = await http(base, "GET", `${M}/search?category=e2e`, { key });
    expect(found.status, JSON.stringify(found.body)).toBe(200);
    expect(found.body.data.items.map((p: any) => [p.ref, p.latest_version])).toEqual([
      ["acme/greeter", "1.0.0"],
      ["acme/orphan", "1.0.0"],
      ["acme/shouter", "1.0.0"],
    ]);
    expect(registry.requests.at(-1)).toEqual({ method: "GET", path: "/index.json", accept: "application/json" });

    // The preview names what install adds and writes nothing.
    const preview = await http(base, "POST", `${M}/install/preview`, { key, body: { ref: "acme/greeter" } });
    expect(preview.status, JSON.stringify(preview.body)).toBe(200);
    expect(preview.body.data.changes.add.map((c: any) => [c.kind, c.name])).toEqual([["preset", "e2e-hello"]]);
    expect((await http(base, "GET", "/api/presets/e2e-hello", { key })).status).toBe(404);

    for (const ref of ["acme/greeter", "Acme/Shouter", "acme/orphan"]) {
      const r = await http(base, "POST", `${M}/install`, { key, body: { ref } });
      expect(r.status, `${ref}: ${JSON.stringify(r.body)}`).toBe(200);
      expect(r.body.data.installed.version).toBe("1.0.0");
    }
    const run = (tool_name: string, args: Record<string, unknown> = {}) => http(base, "POST", "/api/run-tool", { key, body: { tool_name, arguments: args } });
    expect((await run("e2e-hello")).body).toEqual({ data: "hello from 1.0.0" });
    expect((await run("e2e-shout", { message: "hi" })).body).toEqual({ data: "tool:HI" });
    expect(tool.calls.length).toBeGreaterThan(0);

    // The registry publishes: greeter 1.1.0 (compatible); shouter 2.0.0 for a newer contract only;
    // orphan's publisher re-lists every version for the newer contract.
    const next = firstIndex();
    next.plugins[0].versions.push({ version: "1.1.0", contracts: V1, declarations: { presets: [hello("hello from 1.1.0")] } });
    next.plugins[1].versions.push({ version: "2.0.0", contracts: V2, declarations: { state_templates: [{ name: "shout-log" }] } });
    next.plugins[2].versions = [
      { version: "1.0.0", contracts: V2, declarations: {} },
      { version: "1.1.0", contracts: V2, declarations: {} },
    ];
    registry.publish(next);

    const up = await http(base, "POST", `${M}/upgrade-all`, { key });
    expect(up.status, JSON.stringify(up.body)).toBe(200);
    expect(up.body).toEqual({
      data: {
        results: [
          { ref: "acme/greeter", outcome: "upgraded", detail: "1.0.0 -> 1.1.0" },
          {
            ref: "acme/orphan",
            outcome: "no-compatible-version",
            detail: "no published version supports bridge-declarations 1 (1.1.0 exists but does not support bridge-declarations 1)",
          },
          {
            ref: "acme/shouter",
            outcome: "up-to-date",
            detail: "1.0.0 is the latest compatible version (2.0.0 exists but does not support bridge-declarations 1)",
          },
        ],
      },
    });
    // greeter moved through the ordinary update flow; the others stayed where they were and still run.
    expect((await run("e2e-hello")).body).toEqual({ data: "hello from 1.1.0" });
    expect((await http(base, "GET", "/api/presets/e2e-hello", { key })).body.data).toMatchObject({ current_version: 2, latest_version: 2 });
    const installed = await http(base, "GET", `${M}/installed`, { key });
    expect(installed.body.data.items.map((p: any) => [p.ref, p.version])).toEqual([
      ["acme/greeter", "1.1.0"],
      ["acme/orphan", "1.0.0"],
      ["acme/shouter", "1.0.0"],
    ]);
    expect((await run("e2e-orphan")).body).toEqual({ data: "orphan" });
    expect((await run("e2e-shout", { message: "again" })).body).toEqual({ data: "tool:AGAIN" });
  });

  it("a registry that went down is a 502 on the doors that read it; installed and uninstall still answer", async () => {
    await registry.stop();
    try {
      const r = await http(base, "GET", `${M}/search`, { key });
      expect(r.status).toBe(502);
      expect(r.body).toEqual({ error: "marketplace registry unavailable: it could not be reached", code: "marketplace-registry-unavailable" });
      expect((await http(base, "GET", `${M}/installed`, { key })).body.data.total).toBe(3);
      const un = await http(base, "POST", `${M}/uninstall`, { key, body: { ref: "acme/orphan" } });
      expect(un.status, JSON.stringify(un.body)).toBe(200);
      expect(un.body.data.removed).toEqual([{ kind: "preset", name: "e2e-orphan" }]);
      expect((await http(base, "GET", "/api/presets/e2e-orphan", { key })).status).toBe(404);
    } finally {
      await registry.start();
    }
    expect((await http(base, "GET", `${M}/search`, { key })).status).toBe(200);
  });
});

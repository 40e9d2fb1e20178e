/**
 * An https registry answered at the network edge (test/helpers/network.ts, the only fake): the read
 * doors serve what it publishes (fetched on every call, GET, no redirects followed), and a registry
 * that cannot be read answers a clear 502 on every door that needs it: unreachable, a non-2xx, a
 * redirect, a timeout, a document that is not JSON, too large, too deep or not a valid index, and
 * a host the outbound address guard refuses (never fetched). No message names the registry URL.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { answerOnly, fakeNetwork } from "../helpers/network";
import { admin } from "../helpers/http";
import { marketplaceLockStub } from "../../src/marketplace/rpc";
import { REGISTRY_URL, V2, dn, indexOf, mcall, ns, pluginEntry, serveIndex, tool, version } from "./registry-fixtures";

const M = "/api/marketplace";

/** Every door that reads the registry, with a body for the writes. */
const REGISTRY_DOORS: Array<[string, string, unknown?]> = [
  ["GET", `${M}/search`],
  ["GET", `${M}/categories`],
  ["GET", `${M}/kinds`],
  ["GET", `${M}/advisories`],
  ["GET", `${M}/plugins/acme/tools`],
  ["POST", `${M}/install/preview`, { ref: "acme/tools" }],
  ["POST", `${M}/install`, { ref: "acme/tools" }],
];

async function expect502(code: string, fragment: string, vars: Record<string, unknown> = {}) {
  const key = await admin();
  for (const [method, path, body] of REGISTRY_DOORS) {
    const r = await mcall(method, path, { key, body, vars });
    expect(r.status, `${method} ${path}`).toBe(502);
    expect(r.body.code, `${method} ${path}`).toBe(code);
    expect(r.body.error, `${method} ${path}`).toContain(fragment);
    // Neither the URL nor its host: a registry URL may carry a token.
    expect(JSON.stringify(r.body)).not.toContain("registry.fake");
  }
  // The writes released the fleet lock when the registry failed under it.
  expect(await marketplaceLockStub(env).current()).toBeNull();
}

describe("an https registry", () => {
  it("the reads serve what it publishes, fetched with GET on every call", async () => {
    const key = await admin();
    const n = ns();
    const t = dn("t");
    let index = indexOf(
      pluginEntry(n, "Tools", [version("1.0.0", { http_tools: [tool(t)] }), version("2.0.0", {}, V2)], {
        description: "Acme's tools",
        categories: ["dev", "testing"],
        kinds: ["http_tool", "widget"],
        advisories: [{ id: "ACME-1", severity: "high", summary: "leaks", affected_versions: ["1.0.0"], url: "https://acme.example/a/1" }],
      }),
    );
    const calls = serveIndex(() => index);

    const found = await mcall("GET", `${M}/search?q=acme`, { key });
    expect(found.status, JSON.stringify(found.body)).toBe(200);
    expect(found.body.data.items).toEqual([
      {
        ref: `${n}/tools`,
        namespace: n,
        name: "Tools",
        description: "Acme's tools",
        categories: ["dev", "testing"],
        kinds: ["http_tool", "widget"],
        latest_version: "1.0.0",
        newest_version: "2.0.0",
        compatible: true,
        installed_version: null,
        advisory_count: 1,
      },
    ]);
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ url: REGISTRY_URL, method: "GET" });
    expect(calls[0].headers.accept).toBe("application/json");

    const kinds = await mcall("GET", `${M}/kinds`, { key });
    expect(kinds.body.data.items.find((k: any) => k.kind === "widget")).toEqual({ kind: "widget", supported: false, description: null, plugins: 1 });
    const cats = await mcall("GET", `${M}/categories`, { key });
    expect(cats.body.data.items).toEqual([
      { category: "dev", plugins: 1 },
      { category: "testing", plugins: 1 },
    ]);
    const adv = await mcall("GET", `${M}/advisories?severity=high`, { key });
    expect(adv.body.data.items).toEqual([
      {
        ref: `${n}/tools`,
        id: "ACME-1",
        severity: "high",
        summary: "leaks",
        affected_versions: ["1.0.0"],
        fixed_in: null,
        url: "https://acme.example/a/1",
        installed_version: null,
        affects_installed: false,
      },
    ]);
    const detail = await mcall("GET", `${M}/plugins/${n.toUpperCase()}/tools`, { key });
    expect(detail.body.data.versions.map((v: any) => [v.version, v.bundle])).toEqual([
      ["2.0.0", "incompatible"],
      ["1.0.0", "ok"],
    ]);

    // A publish shows at once: the index is not cached.
    index = indexOf();
    expect((await mcall("GET", `${M}/search`, { key })).body.data.total).toBe(0);
    expect(calls.length).toBe(6);
  });

  it("unreachable: 502 marketplace-registry-unavailable on every door that needs it", async () => {
    fakeNetwork(() => {
      throw new Error("connection refused by registry.fake");
    });
    await expect502("marketplace-registry-unavailable", "it could not be reached");
  });

  it("a non-2xx answer: 502 naming the status", async () => {
    fakeNetwork(answerOnly({ [`GET ${REGISTRY_URL}`]: () => new Response("down", { status: 503 }) }));
    await expect502("marketplace-registry-unavailable", "it answered HTTP 503");
  });

  it("a redirect is not followed", async () => {
    const calls = fakeNetwork(
      answerOnly({ [`GET ${REGISTRY_URL}`]: () => new Response(null, { status: 302, headers: { location: "https://elsewhere.fake/index.json" } }) }),
    );
    await expect502("marketplace-registry-unavailable", "it answered HTTP 302");
    expect(calls.every((c) => c.url === REGISTRY_URL)).toBe(true);
  });

  it("no answer within MARKETPLACE_REGISTRY_TIMEOUT_SECONDS", async () => {
    const key = await admin();
    fakeNetwork((req) => new Promise<Response>((_, reject) => req.signal.addEventListener("abort", () => reject(new Error("aborted")))));
    const r = await mcall("GET", `${M}/search`, { key, vars: { MARKETPLACE_REGISTRY_TIMEOUT_SECONDS: "1" } });
    expect(r.status).toBe(502);
    expect(r.body).toEqual({ error: "marketplace registry unavailable: no answer within 1s", code: "marketplace-registry-unavailable" });
  });

  it("a document that is not JSON", async () => {
    fakeNetwork(answerOnly({ [`GET ${REGISTRY_URL}`]: () => new Response("<html>not an index</html>", { headers: { "content-type": "text/html" } }) }));
    await expect502("marketplace-registry-invalid", "the document is not JSON");
  });

  it("a document larger than MARKETPLACE_REGISTRY_MAX_BYTES", async () => {
    serveIndex(() => indexOf(pluginEntry("acme", "tools", [version("1.0.0", { http_tools: [tool("t")] })], { description: "d".repeat(4000) })));
    await expect502("marketplace-registry-invalid", "larger than 1024 bytes (MARKETPLACE_REGISTRY_MAX_BYTES)", { MARKETPLACE_REGISTRY_MAX_BYTES: "1024" });
  });

  it("a document nested too deep", async () => {
    let deep: unknown = 1;
    for (let i = 0; i < 100; i += 1) deep = { d: deep };
    serveIndex(() => indexOf(pluginEntry("acme", "tools", [version("1.0.0", { http_tools: [tool("t")], deep })])));
    await expect502("marketplace-registry-invalid", "nest at most");
  });

  it("an invalid index, naming the field", async () => {
    serveIndex(() => indexOf(pluginEntry("acme", "tools", [version("1.0", { http_tools: [tool("t")] })])));
    await expect502("marketplace-registry-invalid", "plugins.0.versions.0.version");
  });

  it("a registry on a host the outbound address guard refuses is never fetched", async () => {
    const calls = fakeNetwork(() => Response.json(indexOf()));
    await expect502("marketplace-registry-unavailable", "refused by the outbound address guard", { MARKETPLACE_REGISTRY_URL: "https://10.0.0.7/index.json" });
    expect(calls).toEqual([]);
  });

  it("update is 502 too; uninstall and installed need no registry", async () => {
    const key = await admin();
    const n = ns();
    const t = dn("t");
    serveIndex(() => indexOf(pluginEntry(n, "p", [version("1.0.0", { http_tools: [tool(t)] })])));
    expect((await mcall("POST", `${M}/install`, { key, body: { ref: `${n}/p` } })).status).toBe(200);
    fakeNetwork(() => {
      throw new Error("down");
    });
    const up = await mcall("POST", `${M}/update`, { key, body: { ref: `${n}/p` } });
    expect(up.status).toBe(502);
    expect(up.body.code).toBe("marketplace-registry-unavailable");
    expect((await mcall("GET", `${M}/installed`, { key })).body.data.items.map((p: any) => p.ref)).toContain(`${n}/p`);
    const un = await mcall("POST", `${M}/uninstall`, { key, body: { ref: `${n}/p` } });
    expect(un.status, JSON.stringify(un.body)).toBe(200);
    expect(un.body.data.removed).toEqual([{ kind: "http_tool", name: t }]);
  });
});

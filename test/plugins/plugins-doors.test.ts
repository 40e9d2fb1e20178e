/**
 * Plugins and the sandbox (docs/plugins.md): the installed plugins with their console
 * panels, the panels' static files served from the content store with a strict type and CSP, and
 * the sandbox's honest identity.
 */
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { STUDIO_CSP } from "../../src/plugins/console-assets";
import { BASE, admin, call, fetchWithEnv, mintKey, dispatch } from "../helpers/http";
import { must } from "../../src/platform/must";

const REF = "examples/greetings";
const ENC = encodeURIComponent(REF);
const DIR = `plugins/${REF}/studio`;

async function asset(path: string, headers: Record<string, string> = {}, key?: string): Promise<Response> {
  return dispatch(`${BASE}/api/plugins/${ENC}/studio/${path}`, { headers: { "x-api-key": key ?? (await admin()), ...headers } });
}

beforeAll(async () => {
  const key = await admin();
  const r = await call("POST", "/api/marketplace/install", { key, body: { ref: REF } });
  if (r.status !== 200) throw new Error(`install: ${r.status} ${JSON.stringify(r.body)}`);
  for (const [path, content] of [
    ["index.html", '<!doctype html><script src="app.js"></script>'],
    ["settings.html", "<p>settings</p>"],
    ["app.js", "console.log(1)"],
    ["assets/style.css", "p{}"],
    ["notes.md", "# not servable"],
  ]) {
    const up = await call("POST", "/api/storage/resources", { key, body: { id: `${DIR}/${path}`, content } });
    if (up.status !== 200) throw new Error(`upload: ${up.status}`);
  }
});

describe("GET /api/plugins", () => {
  it("lists installed plugins with their panels (the HTML files at the top of the studio directory)", async () => {
    const r = await call("GET", "/api/plugins", { key: await admin() });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ total: 1, storage: true });
    expect(r.body.data.items[0]).toMatchObject({
      ref: REF,
      namespace: "examples",
      name: "greetings",
      version: expect.any(String),
      declarations: { presets: expect.any(Array) },
      studio: {
        dir: DIR,
        panels: [
          { path: "index.html", url: `/api/plugins/${ENC}/studio/index.html` },
          { path: "settings.html", url: `/api/plugins/${ENC}/studio/settings.html` },
        ],
      },
    });
  });

  it("without a content store, studio is null; without the install store, 501", async () => {
    const key = await admin();
    const noStorage = await fetchWithEnv({ ...env, STORAGE_BUCKET: "" }, new Request(`${BASE}/api/plugins`, { headers: { "x-api-key": key } }));
    expect(((await noStorage.json()) as any).data).toMatchObject({ storage: false, items: [{ ref: REF, studio: null }] });
    const noStore = await fetchWithEnv({ ...env, MARKETPLACE_STORE_URL: "" }, new Request(`${BASE}/api/plugins`, { headers: { "x-api-key": key } }));
    expect(noStore.status).toBe(501);
    expect(await noStore.json()).toMatchObject({ code: "marketplace-not-configured" });
  });
});

describe("GET /api/plugins/{name}/studio/{path}", () => {
  it("serves a panel page typed by its extension, with nosniff and the studio CSP", async () => {
    const r = await asset("index.html");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toBe("text/html; charset=utf-8");
    expect(r.headers.get("content-security-policy")).toBe(STUDIO_CSP);
    expect(STUDIO_CSP).toContain("script-src 'self'");
    expect(STUDIO_CSP).not.toContain("unsafe-inline");
    expect(r.headers.get("x-content-type-options")).toBe("nosniff");
    expect(r.headers.get("content-disposition")).toBeNull();
    expect(await r.text()).toContain("app.js");
    const js = await asset("app.js");
    expect(js.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    await js.arrayBuffer();
    const nested = await asset(encodeURIComponent("assets/style.css"));
    expect(nested.status).toBe(200);
    expect(nested.headers.get("content-type")).toBe("text/css; charset=utf-8");
    await nested.arrayBuffer();
    const etag = must(js.headers.get("etag"), 'js.headers.get("etag")');
    expect((await asset("app.js", { "if-none-match": etag })).status).toBe(304);
  });

  it("404: a type it does not serve, an absent file, a plugin not installed; 400 for a bad path", async () => {
    expect((await asset("notes.md")).status).toBe(404);
    expect((await asset("absent.html")).status).toBe(404);
    await env.STORAGE.put("plugins/examples/weather/studio/index.html", "<p>not installed</p>");
    const other = await dispatch(`${BASE}/api/plugins/${encodeURIComponent("examples/weather")}/studio/index.html`, {
      headers: { "x-api-key": await admin() },
    });
    expect(other.status).toBe(404);
    expect(((await other.json()) as any).error).toBe("plugin not installed");
    expect((await asset(encodeURIComponent("../index.html"))).status).toBe(400);
    const badRef = await dispatch(`${BASE}/api/plugins/no-slash/studio/index.html`, { headers: { "x-api-key": await admin() } });
    expect(badRef.status).toBe(400);
  });

  it("plugins:read reads; a pinned public door serves without a key", async () => {
    const reader = await mintKey({ scopes: ["plugins:read"] });
    const r = await asset("index.html", {}, reader.key);
    expect(r.status).toBe(200);
    await r.arrayBuffer();
    const other = await mintKey({ scopes: ["storage:read"] });
    expect((await asset("index.html", {}, other.key)).status).toBe(403);
    expect((await dispatch(`${BASE}/api/plugins/${ENC}/studio/index.html`)).status).toBe(401);
    const key = await admin();
    const pin = { method: "GET", path: "/api/plugins/{name}/studio/{path}" };
    expect((await call("POST", "/api/auth/public-routes", { key, body: pin })).status).toBe(200);
    const open = await dispatch(`${BASE}/api/plugins/${ENC}/studio/index.html`);
    expect(open.status).toBe(200);
    expect(open.headers.get("content-security-policy")).toBe(STUDIO_CSP);
    await open.arrayBuffer();
    expect((await call("DELETE", `/api/auth/public-routes?method=GET&path=${encodeURIComponent(pin.path)}`, { key })).status).toBe(200);
    expect((await dispatch(`${BASE}/api/plugins/${ENC}/studio/index.html`)).status).toBe(401);
  });

  it("needs the content store: 501 storage-not-configured", async () => {
    const res = await fetchWithEnv(
      { ...env, STORAGE_BUCKET: "" },
      new Request(`${BASE}/api/plugins/${ENC}/studio/index.html`, { headers: { "x-api-key": await admin() } }),
    );
    expect(res.status).toBe(501);
    expect(await res.json()).toMatchObject({ code: "storage-not-configured" });
  });
});

describe("GET /api/sandbox", () => {
  it("says honestly that no sandbox is configured, and what one would need", async () => {
    const r = await call("GET", "/api/sandbox", { key: await admin() });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ present: false, provider: null, module: null, sessions: [], policy: null });
    expect(r.body.data.detail).toContain("No code sandbox is configured");
    expect(r.body.data.requires.length).toBeGreaterThan(0);
    const reader = await mintKey({ scopes: ["sandbox:read"] });
    expect((await call("GET", "/api/sandbox", { key: reader.key })).status).toBe(200);
    const other = await mintKey({ scopes: ["plugins:read"] });
    expect((await call("GET", "/api/sandbox", { key: other.key })).status).toBe(403);
  });
});

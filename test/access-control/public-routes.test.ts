/** Public pins: pin and unpin, the never-public doors, and calls to a pinned door (docs/access-control.md). */
import { describe, expect, it } from "vitest";
import { pinRefusal } from "../../src/access-control/public-routes";
import { registry } from "../../src/platform/http/route";
import { D1Counter, countedFetch } from "../helpers/d1-count";
import { admin, call, mintKey } from "../helpers/http";

const pinBody = (method: string, path: string) => ({ method, path });
const unpinQuery = (method: string, path: string) => `?method=${method}&path=${encodeURIComponent(path)}`;

describe("public pins", () => {
  it("a pinned door is served without a credential; unpinned, it is 401 again", async () => {
    const key = await admin();
    expect(await call("GET", "/api/tools")).toMatchObject({ status: 401, body: { error: "Authentication required" } });
    const pinned = await call("POST", "/api/auth/public-routes", { key, body: pinBody("get", "/api/tools") });
    expect(pinned.body.data).toEqual({ method: "GET", path: "/api/tools", pinned: true, created: true });
    expect((await call("POST", "/api/auth/public-routes", { key, body: pinBody("GET", "/api/tools") })).body.data.created).toBe(false);

    const anon = await call("GET", "/api/tools");
    expect(anon.status).toBe(200);
    expect(anon.body.data).toContain("echo");
    // Only the pinned method and path: the sibling door stays closed.
    expect((await call("GET", "/api/tools/echo/schema")).status).toBe(401);

    const list = await call("GET", "/api/auth/public-routes", { key });
    expect(list.body.data.items).toEqual([expect.objectContaining({ method: "GET", path: "/api/tools", pinned_by: "root" })]);
    const routes = await call("GET", "/api/auth/routes", { key });
    expect(routes.body.data.find((r: { method: string; path: string }) => r.method === "GET" && r.path === "/api/tools")).toMatchObject({
      public: true,
      pinnable: true,
    });

    const removed = await call("DELETE", `/api/auth/public-routes${unpinQuery("GET", "/api/tools")}`, { key });
    expect(removed.body.data).toEqual({ method: "GET", path: "/api/tools", removed: true });
    expect((await call("GET", "/api/tools")).status).toBe(401);
    expect((await call("DELETE", `/api/auth/public-routes${unpinQuery("GET", "/api/tools")}`, { key })).status).toBe(404);
  });

  it("a credentialed request to a pinned door is authenticated as usual; grants that refuse it yield to the pin", async () => {
    const key = await admin();
    await call("POST", "/api/auth/public-routes", { key, body: pinBody("GET", "/api/tools-schema") });
    expect((await call("GET", "/api/tools-schema", { key: "sk-not-a-key" })).status).toBe(401);
    const narrow = await mintKey({ scopes: ["presets:read"] });
    expect((await call("GET", "/api/tools-schema", { key: narrow.key })).status).toBe(200);
    // me advertises it for that key, since the door lets it in.
    const me = await call("GET", "/api/auth/me", { key: narrow.key });
    expect(me.body.data.routes).toContainEqual({ path: "/api/tools-schema", methods: ["GET"] });
    await call("DELETE", `/api/auth/public-routes${unpinQuery("GET", "/api/tools-schema")}`, { key });
    expect((await call("GET", "/api/tools-schema", { key: narrow.key })).status).toBe(403);
  });

  it("a key its grants refuse on a pinned door gets exactly what no key gets, never the unrestricted view", async () => {
    const key = await admin();
    // Something only an unrestricted reader would see: a broadcast in the shared feed, and a trace.
    expect((await call("POST", "/api/notifications", { key, body: { message: "broadcast for unrestricted readers" } })).status).toBe(200);
    expect((await call("POST", "/api/run-tool", { key, body: { tool_name: "echo", arguments: { message: "traced" } } })).status).toBe(200);
    // An unowned key (not restricted) whose grants refuse all three doors.
    const refused = await mintKey({ scopes: ["presets:read"] });
    const doors: Array<[string, string]> = [
      ["GET", "/api/notifications"],
      ["GET", "/api/runs"],
      ["GET", "/api/observability/metrics"],
    ];
    for (const [method, path] of doors) {
      expect((await call(method, path, { key: refused.key })).status, `${path} unpinned`).toBe(403);
      await call("POST", "/api/auth/public-routes", { key, body: pinBody(method, path) });
    }
    // The unrestricted view exists: the admin sees the broadcast.
    expect(JSON.stringify((await call("GET", "/api/notifications", { key })).body.data)).toContain("broadcast for unrestricted readers");

    const anonFeed = await call("GET", "/api/notifications");
    const keyFeed = await call("GET", "/api/notifications", { key: refused.key });
    expect(anonFeed.status).toBe(200);
    expect(keyFeed).toMatchObject({ status: 200, body: anonFeed.body });
    expect(JSON.stringify(keyFeed.body)).not.toContain("broadcast for unrestricted readers");

    const anonRuns = await call("GET", "/api/runs");
    const keyRuns = await call("GET", "/api/runs", { key: refused.key });
    expect(anonRuns.body.data.total).toBe(0);
    expect(keyRuns).toMatchObject({ status: 200, body: anonRuns.body });

    const anonMetrics = await call("GET", "/api/observability/metrics");
    const keyMetrics = await call("GET", "/api/observability/metrics", { key: refused.key });
    expect(anonMetrics.body.data).toMatchObject({ own_runs_only: true, deliveries: null, rate_cap_sheds: null, queues: null, inbox: null });
    expect(keyMetrics.body.data).toMatchObject({
      own_runs_only: true,
      deliveries: null,
      rate_cap_sheds: null,
      queues: null,
      turns: anonMetrics.body.data.turns,
    });

    for (const [method, path] of doors) await call("DELETE", `/api/auth/public-routes${unpinQuery(method, path)}`, { key });
  });

  it("an anonymous request to a pinned door costs one round trip (the pin read, with the door's prefetch)", async () => {
    const key = await admin();
    await call("POST", "/api/auth/public-routes", { key, body: pinBody("GET", "/api/presets") });
    const counter = new D1Counter();
    const anon = await countedFetch(counter, "GET", "/api/presets");
    expect(anon.status).toBe(200);
    expect(counter.calls[0].sql[0]).toContain("FROM public_routes");
    // An unpinnable door never reads pins: a keyless request is refused with no D1 work.
    const none = new D1Counter();
    expect((await countedFetch(none, "POST", "/api/presets", { headers: { "content-type": "application/json" }, body: "{}" })).status).toBe(401);
    expect(none.count("worker").roundTrips).toBe(0);
    await call("DELETE", `/api/auth/public-routes${unpinQuery("GET", "/api/presets")}`, { key });
  });

  it("never-public doors refuse to be pinned, naming why", async () => {
    const key = await admin();
    const cases: Array<[string, string, string]> = [
      ["POST", "/api/auth/api-keys", "access-control"],
      ["GET", "/api/auth/roles", "access-control"],
      ["GET", "/api/auth/me", "calling key"],
      ["POST", "/api/keys/bootstrap", "public already"],
      ["POST", "/api/conversations/{route_name}/messages", "bridge"],
      ["DELETE", "/api/conversations/{route_name}", "bridge"],
      ["POST", "/api/run-tool", "admin"],
      ["POST", "/api/tools-config/entries", "admin"],
      ["POST", "/api/presets", "GET"],
    ];
    for (const [method, path, why] of cases) {
      const r = await call("POST", "/api/auth/public-routes", { key, body: pinBody(method, path) });
      expect(r.status, `${method} ${path}`).toBe(400);
      expect(r.body.error, `${method} ${path}`).toContain(why);
    }
    expect((await call("POST", "/api/auth/public-routes", { key, body: pinBody("GET", "/api/no/such/door") })).status).toBe(404);
    expect((await call("POST", "/api/auth/public-routes", { key, body: pinBody("TRACE", "/api/tools") })).status).toBe(400);
    expect((await call("GET", "/api/auth/public-routes", { key })).body.data.total).toBe(0);
  });

  it("pinning is admin-only; the list needs auth:read", async () => {
    const writer = await mintKey({ scopes: ["auth"] });
    expect((await call("POST", "/api/auth/public-routes", { key: writer.key, body: pinBody("GET", "/api/tools") })).status).toBe(403);
    expect((await call("DELETE", `/api/auth/public-routes${unpinQuery("GET", "/api/tools")}`, { key: writer.key })).status).toBe(403);
    expect((await call("GET", "/api/auth/public-routes", { key: writer.key })).status).toBe(200);
  });

  it("every pinnable door serves the anonymous caller without a fault (handlers get a principal with no grants)", { timeout: 120_000 }, async () => {
    const key = await admin();
    const pinnable = registry.filter((door) => pinRefusal(door) === null);
    expect(pinnable.length).toBeGreaterThan(10);
    const faults: string[] = [];
    for (const door of pinnable) {
      const path = door.path.replace(/\{[A-Za-z0-9_]+\}/g, "anon-probe");
      expect((await call("POST", "/api/auth/public-routes", { key, body: pinBody(door.method, door.path) })).status).toBe(200);
      const r = await call(door.method.toUpperCase(), path);
      const notConfigured = r.status === 501 && String(r.body?.code ?? "").endsWith("-not-configured");
      if ((r.status >= 500 && !notConfigured) || r.status === 401)
        faults.push(`${door.method.toUpperCase()} ${door.path}: ${r.status} ${JSON.stringify(r.body).slice(0, 200)}`);
      await call("DELETE", `/api/auth/public-routes${unpinQuery(door.method.toUpperCase(), door.path)}`, { key });
    }
    expect(faults).toEqual([]);
  });
});

/**
 * The outbound address guard and secret-reference scope under `npm start`'s own defaults:
 * OUTBOUND_ALLOW_PRIVATE_HOSTS is false unless set, so loopback
 * callbacks and tools are refused at declaration; a callback stored while the setting was on is
 * refused at send time once the server runs without it.
 */
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BOOTSTRAP_TOKEN, type DevServer, freePort, http, startDev } from "./harness";
import { pollUntil } from "./support/poll";
import { must } from "../../src/platform/must";

let dev: DevServer | null = null;
let persistDir: string;
let admin: string;
let hook: string;

beforeAll(async () => {
  // First run with the e2e defaults (private hosts allowed): store a loopback callback.
  const first = await startDev();
  persistDir = first.persistDir;
  const boot = await http(first.baseUrl, "POST", "/api/keys/bootstrap", { body: { user_id: "root", bootstrap_token: BOOTSTRAP_TOKEN } });
  expect(boot.status).toBe(200);
  admin = boot.body.data.token;
  hook = `https://127.0.0.1:${await freePort()}/hooks/x`;
  const route = await http(first.baseUrl, "POST", "/api/conversations/stored-loopback", {
    key: admin,
    body: { door: "api", target_kind: "tool", target_name: "echo", execution_key: "root", callback_url: hook, turns_per_hour_override: 1000 },
  });
  expect(route.status).toBe(200);
  await first.stop();
  // Then the same state under npm start's defaults.
  dev = await startDev({ persistDir, noDefaultVars: true });
});

afterAll(async () => {
  await dev?.stop();
  if (persistDir) rmSync(persistDir, { recursive: true, force: true });
});

describe("outbound guard under npm start's defaults", () => {
  it("refuses loopback spellings as callback_url and tool url at declaration, naming the field and OUTBOUND_ALLOW_PRIVATE_HOSTS", async () => {
    for (const host of ["127.0.0.1", "2130706433", "0x7f000001", "127.1", "[::1]", "[::ffff:127.0.0.1]", "localhost"]) {
      const route = await http(must(dev, "dev").baseUrl, "POST", "/api/conversations/loopback", {
        key: admin,
        body: { door: "api", target_kind: "tool", target_name: "echo", execution_key: "root", callback_url: `https://${host}:9/h` },
      });
      expect(route.status, host).toBe(400);
      expect(route.body.error).toMatch(/^invalid body: callback_url: the host is .*OUTBOUND_ALLOW_PRIVATE_HOSTS=true$/);
      const tool = await http(must(dev, "dev").baseUrl, "POST", "/api/tools-config/entries", {
        key: admin,
        body: { title: "local", kind: "http", url: `http://${host}:9/run` },
      });
      expect(tool.status, host).toBe(400);
      expect(tool.body.error).toMatch(/^invalid body: url: the host is .*OUTBOUND_ALLOW_PRIVATE_HOSTS=true$/);
    }
  });

  it('refuses {"env": "ACCESS_CONTROL_BOOTSTRAP_TOKEN"} in a tool header at declaration', async () => {
    const r = await http(must(dev, "dev").baseUrl, "POST", "/api/tools-config/entries", {
      key: admin,
      body: { title: "exfil", kind: "http", url: "https://tools.example/x", headers: { authorization: { env: "ACCESS_CONTROL_BOOTSTRAP_TOKEN" } } },
    });
    expect(r.status).toBe(400);
    expect(r.body.error).toContain("headers.authorization: references an env var outside the secret-reference scope");
    expect(JSON.stringify(r.body)).not.toContain(BOOTSTRAP_TOKEN);
  });

  it("refuses at send time a callback stored while private hosts were allowed", async () => {
    const sent = await http(must(dev, "dev").baseUrl, "POST", "/api/conversations/stored-loopback/messages", {
      key: admin,
      body: { external_user_id: "u", text: "hello" },
    });
    expect(sent.status).toBe(202);
    const rec = await pollUntil(
      "the first refused attempt",
      async () =>
        (await http(must(dev, "dev").baseUrl, "GET", `/api/conversations/stored-loopback/messages/${sent.body.data.message_id}`, { key: admin })).body.data,
      (d) => d?.attempts >= 1,
      { timeoutMs: 30_000 },
    );
    expect(rec).toMatchObject({ status: "pending_delivery", answer_status: "answered" });
    expect(rec.error).toBe(
      "callback refused by the outbound address guard: the host is a loopback address; private and local hosts are refused unless OUTBOUND_ALLOW_PRIVATE_HOSTS=true",
    );
    expect(must(dev, "dev").logs()).not.toContain(hook);
  });
});

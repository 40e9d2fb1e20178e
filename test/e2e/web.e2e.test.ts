/**
 * The web channel against a real `wrangler dev` (docs/channels.md "Web"): a retried
 * `client_message_id` counts once, the rate cap counts the visitor's network rather than the
 * visitor (a fresh session does not bring a fresh allowance), and a session is good on its own
 * route only.
 */
import { type IncomingMessage, get } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BOOTSTRAP_TOKEN, type DevServer, http, startDev } from "./harness";
import { pollUntil } from "./support/poll";

let dev: DevServer;
let base: string;
let adminKey: string;

beforeAll(async () => {
  dev = await startDev({ vars: { CONVERSATIONS_PER_ADDRESS_TURNS_PER_HOUR: "3" } });
  base = dev.baseUrl;
  const boot = await http(base, "POST", "/api/keys/bootstrap", { body: { user_id: "root", bootstrap_token: BOOTSTRAP_TOKEN } });
  adminKey = boot.body.data.token;
  const exec = await http(base, "POST", "/api/auth/api-keys", { key: adminKey, body: { user_id: "web-runner", scopes: ["tool:echo"] } });
  expect(exec.status).toBe(200);
  for (const [name, identity] of [
    ["web-a", "desk-a"],
    ["web-b", "desk-b"],
  ]) {
    const r = await http(base, "POST", `/api/conversations/${name}`, {
      key: adminKey,
      body: { door: "channel", channel: "web", our_identity: identity, target_kind: "tool", target_name: "echo", execution_key: "web-runner" },
    });
    expect(r.status).toBe(200);
  }
});

afterAll(async () => {
  await dev?.close();
});

/**
 * Opens a chat page the way a browser navigates to it; answers the session cookie. Through
 * node:http, because fetch marks every request `Sec-Fetch-Mode: cors`, which the page door refuses.
 */
async function open(identity: string): Promise<string> {
  const res = await new Promise<IncomingMessage>((resolve, reject) =>
    get(`${base}/api/channels/web/chat/${identity}`, { headers: { "sec-fetch-mode": "navigate" } }, resolve).on("error", reject),
  );
  res.resume();
  expect(res.statusCode).toBe(200);
  const cookie = (res.headers["set-cookie"]?.[0] ?? "").split(";")[0];
  expect(cookie).toMatch(new RegExp(`^tai_web_${identity}=`));
  return cookie;
}

function say(identity: string, cookie: string, text: string, clientMessageId?: string) {
  return http(base, "POST", "/api/channels/web/messages", {
    body: { identity, text, ...(clientMessageId ? { client_message_id: clientMessageId } : {}) },
    headers: { cookie, origin: base },
  });
}

const visitorOf = (cookie: string) => cookie.split("=")[1].split(".")[0];

async function records(route: string, cookie: string) {
  const threadId = `bridge:${route}:${visitorOf(cookie)}`;
  const r = await http(base, "GET", `/api/conversations/${route}/transcript?thread_id=${encodeURIComponent(threadId)}`, { key: adminKey });
  return (r.body?.data?.items ?? []) as any[];
}

describe("the web channel against a real wrangler dev", () => {
  it("a retried client_message_id is one message and one turn", async () => {
    const cookie = await open("desk-b");
    const first = await say("desk-b", cookie, "only once", "browser-retry-01");
    const again = await say("desk-b", cookie, "only once", "browser-retry-01");
    expect(first.status).toBe(200);
    expect(again.status).toBe(200);
    expect(again.body.data.message_id).toBe(first.body.data.message_id);
    const items = await pollUntil(
      "the answered record",
      () => records("web-b", cookie),
      (x) => x.length > 0 && x.every((r) => r.answer === "only once"),
    );
    expect(items).toHaveLength(1);
  });

  it("the rate cap counts the network: a second visitor on the same network shares the first one's allowance", async () => {
    const one = await open("desk-a");
    for (let i = 0; i < 3; i++) expect((await say("desk-a", one, `m${i}`)).status).toBe(200);
    // A fresh session from the same network: its first message over the cap is answered with the
    // slow-down text, the next is refused.
    const two = await open("desk-a");
    expect(visitorOf(two)).not.toBe(visitorOf(one));
    const slowed = await say("desk-a", two, "am I capped?");
    expect(slowed.status).toBe(200);
    const items = await pollUntil(
      "the slow-down answer",
      () => records("web-a", two),
      (x) => x.length > 0 && x[0].answer !== null,
    );
    expect(items[0].answer).toMatch(/faster than I can answer/);
    const shed = await say("desk-a", two, "and now?");
    expect(shed.status).toBe(429);
  });

  it("a session works on its own route only, and is refused elsewhere exactly like a forged one", async () => {
    const cookie = await open("desk-b");
    const token = cookie.split("=")[1];
    const elsewhere = await say("desk-a", `tai_web_desk-a=${token}`, "hi");
    const forged = await say("desk-a", `tai_web_desk-a=${visitorOf(cookie)}.${"A".repeat(43)}`, "hi");
    expect(elsewhere.status).toBe(401);
    expect(elsewhere.body).toEqual(forged.body);
    expect(elsewhere.body.code).toBe("session_missing");
  });
});

/**
 * The link-authority suite (docs/security.md, "Link authority"), generated from the route table:
 * only the two parties link two conversations.
 *
 * 1. Doors that can link declare it (`links` on RouteSpec, src/platform/http/route.ts): `redeem`
 *    when what they admit can carry a pairing code a turn redeems, `mint` when they can run
 *    `get_pairing_code` outside a conversation turn and hand its code back. A door that looks like
 *    one (a body with message `text`, a `tool_name` or an agent `user_message`, an MCP endpoint, a
 *    provider's inbound webhook) must declare it or be listed below with the reason it links nothing.
 * 2. No GET door declares `links`: a GET is what any other site can make a browser send.
 * 3. Every GET door of the table is driven with a live pairing code in each query parameter it
 *    accepts and in `tai_pair`, carrying an api key, a live web visitor's cookie and the headers of
 *    a cross-site navigation; afterwards no person has gained an address, the visitor's
 *    conversation holds no message, and the code is still good for the party it was meant for.
 * 4. Each declaring door has a fixture proving its authority rule (a redeem joins only the
 *    sending party's own conversation; a mint outside a turn needs conversations write and the
 *    grant to run the route's target, checked as the running key; a join needs each of the two
 *    conversations' own live credential). The suite fails for a declaration without a fixture.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { beforeAll, describe, expect, it } from "vitest";
import { PAIRING_REPLIES } from "../../src/persons/pairing";
import { personDirectoryName } from "../../src/persons/rpc";
import { fakeNetwork } from "../helpers/network";
import { fetchWithEnv } from "../helpers/http";
import { type RouteSpec, bootstrapAdmin, callJson, dispatch, doors, fillPath, jsonSchemaOf, label, pathParamNames, type JsonSchema } from "./doors";
import { must } from "../../src/platform/must";

const DOORS = doors();
const DECLARED = DOORS.filter((d) => d.links !== undefined);
const ORIGIN = "https://bridge.test";

/** Doors that look like they could link but do not, with the reason. */
const NOT_LINKING: Record<string, string> = {
  "POST /api/conversations/{route_name}/thread/messages": "an operator's hand-written answer: it starts answered and runs no turn, so no pairing turn sees it",
  "POST /api/conversations/{route_name}/thread/notes":
    "a private note is stored beside the thread's records and never runs a turn or reaches the customer, so no pairing turn sees it",
  "POST /api/interactions/{interaction_id}/answer": "an operator's answer resumes the parked run; it is never a conversation's message",
  "POST /api/interactions/callback/{ticket}": "a one-time answer link resumes the parked run; it is never a conversation's message",
  "POST /api/schedules":
    "stores a schedule; each fire runs as the schedule's execution key, outside any turn, so get_pairing_code there needs that key's grant over the target, read live at the fire (the same check the POST /api/tool-runs fixture proves)",
};

/** Does the door look like one that can link (see 1 above)? */
function looksLinking(d: RouteSpec): boolean {
  if (d.method === "get") return false;
  if (d.rawBody && d.path.endsWith("/inbound")) return true;
  if (d.path.endsWith("/mcp")) return true;
  const props = (jsonSchemaOf(d.body)?.properties ?? {}) as Record<string, JsonSchema>;
  return "text" in props || "tool_name" in props || "user_message" in props;
}

// ---------------------------------------------------------------------------------------------
// The world every case shares: a multichannel tool target with an api route, a web route and a
// twilio route, a live web visitor, and a code minted by the api conversation of `owner`.

let ADMIN = "";
let n = 0;
const uniq = (p: string) => `${p}-${Date.now().toString(36)}-${++n}`.toLowerCase();
const world = {
  tool: "",
  host: "",
  apiRoute: "",
  identity: "",
  twilioIdentity: "",
  cookie: "",
  visitor: "",
};

async function call(method: string, path: string, key: string | null, body?: unknown) {
  return callJson(method, path, key, body);
}

function network() {
  return fakeNetwork(async (req, body) => {
    const url = new URL(req.url);
    if (url.host === world.host) return Response.json("tool ran");
    if (url.host === "telegram.fake") return Response.json({ ok: true, result: { message_id: 1 } });
    if (url.host === "llm.example") return llmAnswer(body);
    return new Response("unexpected host", { status: 599 });
  });
}

async function mint(scopes: string[]): Promise<{ user_id: string; key: string }> {
  const user_id = uniq("la");
  const r = await call("POST", "/api/auth/api-keys", ADMIN, { user_id, scopes });
  if (r.status !== 200) throw new Error(`mint failed: ${r.status} ${r.text}`);
  return { user_id, key: r.json.data.api_key };
}

/** The target's person directory, read in place: open codes and each person's addresses. */
async function directory(): Promise<{ codes: number; addresses: Array<{ person_id: string; address: string }> }> {
  const stub = env.PERSON_DIRECTORIES.get(env.PERSON_DIRECTORIES.idFromName(personDirectoryName("tool", world.tool)));
  return runInDurableObject(stub, (_o, state) => {
    const sql = state.storage.sql;
    const has = sql.exec("SELECT name FROM sqlite_master WHERE name = 'codes'").toArray().length > 0;
    if (!has) return { codes: 0, addresses: [] };
    const codes = Number(sql.exec("SELECT COUNT(*) AS n FROM codes").one().n);
    const addresses = sql
      .exec("SELECT person_id, address FROM addresses ORDER BY seq")
      .toArray()
      .map((r) => ({ person_id: String(r.person_id), address: String(r.address) }));
    return { codes, addresses };
  });
}
const personOf = async (address: string) => (await directory()).addresses.find((a) => a.address === address)?.person_id ?? null;
const addressesOf = async (personId: string | null) =>
  (await directory()).addresses
    .filter((a) => a.person_id === personId)
    .map((a) => a.address)
    .sort();

/** One api-door message as the admin, answered inline. */
async function say(who: string, text: string, key = ADMIN): Promise<{ status: number; answer: string | null }> {
  const r = await call("POST", `/api/conversations/${world.apiRoute}/messages`, key, { external_user_id: who, text, wait_seconds: 10 });
  return { status: r.status, answer: r.json?.data?.answer ?? null };
}

/** A fresh code, minted by `/link` in the api conversation of `who` (the admin's). */
async function codeOf(who: string): Promise<string> {
  const r = await say(who, "/link");
  const code = String(r.answer).match(/LINK-[A-Z0-9]{8}/)?.[0];
  if (!code) throw new Error(`no code minted: ${r.status} ${r.answer}`);
  return code;
}

/** Opens the chat page as a same-origin navigation; answers its session cookie. */
async function openPage(): Promise<string> {
  const r = await dispatch("GET", `/api/channels/web/chat/${world.identity}`, { headers: { "sec-fetch-mode": "navigate", "sec-fetch-site": "none" } });
  expect(r.status).toBe(200);
  return (r.headers.get("set-cookie") ?? "").split(";")[0];
}

beforeAll(async () => {
  ADMIN = await bootstrapAdmin();
  world.tool = uniq("la-tool");
  world.host = `${world.tool}.example`;
  expect((await call("POST", "/api/tools-config/entries", ADMIN, { title: world.tool, kind: "http", url: `https://${world.host}/run` })).status).toBe(200);
  const runner = await mint([`tool:${world.tool}`]);
  const route = async (extra: Record<string, unknown>) => {
    const name = uniq("la-route");
    const r = await call("POST", `/api/conversations/${name}`, ADMIN, {
      target_kind: "tool",
      target_name: world.tool,
      execution_key: runner.user_id,
      turns_per_hour_override: 1000,
      ...extra,
    });
    expect(r.status, r.text).toBe(200);
    return name;
  };
  world.apiRoute = await route({ door: "api" });
  world.identity = uniq("la-desk");
  await route({ door: "channel", channel: "web", our_identity: world.identity });
  world.twilioIdentity = `+1777${String(Date.now()).slice(-7)}`;
  await route({ door: "channel", channel: "twilio", our_identity: world.twilioIdentity });
  const put = await call("PUT", `/api/conversation-configs/tool/${world.tool}`, ADMIN, { target_kind: "tool", target_name: world.tool, multichannel: true });
  expect(put.status, put.text).toBe(200);
  world.cookie = await openPage();
  world.visitor = world.cookie.split("=")[1].split(".")[0];
});

// ---------------------------------------------------------------------------------------------
// The declarations.

describe("link declarations", () => {
  it("lists the doors that can link two conversations", () => {
    const lines = DECLARED.map((d) => `${label(d)}: ${d.links}`);
    console.log(
      `link authority: ${DECLARED.length} declaring doors (${DECLARED.filter((d) => d.links === "redeem").length} redeem, ${DECLARED.filter((d) => d.links === "mint").length} mint, ${DECLARED.filter((d) => d.links === "join").length} join)\n  ${lines.join("\n  ")}`,
    );
    expect(DECLARED.length).toBeGreaterThan(0);
  });

  it("no GET door declares links", () => {
    expect(DECLARED.filter((d) => d.method === "get").map(label)).toEqual([]);
  });

  it("every door that looks like it can link declares it, or says why not", () => {
    const missing = DOORS.filter((d) => looksLinking(d) && d.links === undefined && !NOT_LINKING[label(d)]).map(label);
    expect(missing).toEqual([]);
    const stale = Object.keys(NOT_LINKING).filter((l) => !DOORS.some((d) => label(d) === l && looksLinking(d)));
    expect(stale).toEqual([]);
  });

  it("every declaring door has a fixture", () => {
    expect(DECLARED.map(label).filter((l) => !FIXTURES[l])).toEqual([]);
    expect(Object.keys(FIXTURES).filter((l) => !DECLARED.some((d) => label(d) === l))).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// Every GET door, carrying a live code.

/** Path segments the suite can fill with something that exists. */
function segments(code: string): Record<string, string> {
  return {
    route_name: world.apiRoute,
    identity: world.identity,
    channel: "web",
    target_kind: "tool",
    target_name: world.tool,
    name: world.tool,
    tool_name: "get_pairing_code",
    title: world.tool,
    user_id: "root",
    token: code,
    ticket: code,
    code_id: code,
  };
}

describe("GET doors never link", () => {
  it("no GET door redeems or consumes a code, whatever parameter carries it", async () => {
    network();
    await say("get-owner", "hello");
    const code = await codeOf("get-owner");
    const owner = await personOf(`root/get-owner`);
    const before = await directory();
    const gets = DOORS.filter((d) => d.method === "get");
    const segs = segments(code);
    let requests = 0;
    for (const d of gets) {
      const names = pathParamNames(d.path);
      const path = fillPath(d.path, Object.fromEntries(names.map((p) => [p, encodeURIComponent(segs[p] ?? "x")])));
      const query = new URLSearchParams();
      for (const q of Object.keys((jsonSchemaOf(d.query)?.properties ?? {}) as Record<string, unknown>)) query.set(q, code);
      query.set("tai_pair", code);
      for (const key of [ADMIN, null]) {
        const headers: Record<string, string> = {
          cookie: world.cookie,
          "sec-fetch-mode": "navigate",
          "sec-fetch-site": "cross-site",
          referer: "https://evil.example/",
        };
        if (key) headers["x-api-key"] = key;
        const r = await dispatch("GET", `${path}?${query}`, { headers });
        expect(r.status, `${label(d)} answered ${r.status}`).toBeLessThan(500);
        requests++;
      }
    }
    console.log(`link authority: ${gets.length} GET doors driven with a live code in every query parameter and tai_pair (${requests} requests)`);
    const after = await directory();
    expect(after.addresses).toEqual(before.addresses);
    expect(after.codes).toBe(before.codes);
    expect(await addressesOf(owner)).toEqual(["root/get-owner"]);
    // The visitor's conversation got no message from any of them.
    const visitorRecords = await runInDurableObject(env.THREADS.get(env.THREADS.idFromName(`bridge:${await webRouteName()}:${world.visitor}`)), (_o, state) => {
      const has = state.storage.sql.exec("SELECT name FROM sqlite_master WHERE name = 'records'").toArray().length > 0;
      return has ? Number(state.storage.sql.exec("SELECT COUNT(*) AS n FROM records").one().n) : 0;
    });
    expect(visitorRecords).toBe(0);
    // And the code is still good for the party it was meant for.
    expect((await say("get-partner", code)).answer).toBe(PAIRING_REPLIES.linked);
    expect(await addressesOf(owner)).toEqual(["root/get-owner", "root/get-partner"]);
  });
});

async function webRouteName(): Promise<string> {
  const r = await call("GET", "/api/conversations", ADMIN);
  return r.json.data.items.find((x: any) => x.channel === "web" && x.our_identity === world.identity).route_name;
}

// ---------------------------------------------------------------------------------------------
// Fixtures, one per declaring door.

/** An LLM agent whose model asks for `get_pairing_code` of the twilio conversation `sender`, then answers "done". */
let llmArgs: Record<string, unknown> = {};
function llmAnswer(body: string): Response {
  const asked = JSON.parse(body) as { messages: Array<{ role: string }> };
  if (asked.messages.some((m) => m.role === "tool"))
    return Response.json({ choices: [{ message: { role: "assistant", content: "done" }, finish_reason: "stop" }] });
  return Response.json({
    choices: [
      {
        message: {
          role: "assistant",
          content: null,
          tool_calls: [{ id: "p1", type: "function", function: { name: "get_pairing_code", arguments: JSON.stringify(llmArgs) } }],
        },
        finish_reason: "tool_calls",
      },
    ],
  });
}

/** An agent run through `path` as `key`, with the model's key set; answers the streamed text. */
async function agentRun(path: string, key: string): Promise<string> {
  const res = await fetchWithEnv(
    { ...env, LLM_KEY: "sk-link-authority" },
    new Request(`${ORIGIN}${path}`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify({ user_message: "give me a code", thread_id: uniq("t") }),
    }),
  );
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return text;
}

async function pairingAgent(): Promise<string> {
  const title = uniq("la-agent");
  const r = await call("POST", "/api/agents-config/entries", ADMIN, {
    title,
    kind: "llm",
    config: { base_url: "https://llm.example/v1", model: "m", api_key: { env: "LLM_KEY" }, tool_names: ["get_pairing_code"] },
  });
  expect(r.status, r.text).toBe(200);
  return title;
}

/** The twilio conversation of a fresh sender, as mint arguments. */
const victim = () => ({ channel: "twilio", our_identity: world.twilioIdentity, sender: `+1555${String(++n).padStart(7, "0")}` });

/** The scopes a key needs to mint outside a turn, besides the door's own. */
const MINT_GRANT = () => ["conversations:write", `tool:${world.tool}`];

/**
 * The mint rule through one door: `attempt(key scopes, args)` runs get_pairing_code there; a key
 * without the grant adds no code, a key with it adds one.
 */
function mintFixture(doorScopes: () => Promise<string[]> | string[], attempt: (key: string, args: Record<string, unknown>) => Promise<void>): Fixture {
  return async () => {
    network();
    const base = await doorScopes();
    const bare = await mint([...base, "tool:get_pairing_code"]);
    const before = (await directory()).codes;
    await attempt(bare.key, victim());
    expect((await directory()).codes, "a key without conversations write and the target's grant minted a code").toBe(before);
    const granted = await mint([...base, "tool:get_pairing_code", ...MINT_GRANT()]);
    await attempt(granted.key, victim());
    expect((await directory()).codes, "a key with the grant could not mint").toBe(before + 1);
  };
}

async function waitRun(runId: string): Promise<any> {
  for (let i = 0; i < 200; i++) {
    const r = await call("GET", `/api/tool-runs/${runId}`, ADMIN);
    if (r.status === 200 && (r.json.data.status === "succeeded" || r.json.data.status === "failed")) return r.json.data;
    await new Promise((res) => setTimeout(res, 50));
  }
  throw new Error(`run ${runId} did not end`);
}

type Fixture = () => Promise<void>;

const hmacKey = (secret: string) => crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);

const FIXTURES: Record<string, Fixture> = {
  "POST /api/conversations/{route_name}/messages": async () => {
    network();
    await say("msg-owner", "hello");
    const code = await codeOf("msg-owner");
    const owner = await personOf("root/msg-owner");
    // A key that may not write conversations cannot send the code.
    const reader = await mint(["conversations:read"]);
    expect((await say("msg-thief", code, reader.key)).status).toBe(403);
    expect(await addressesOf(owner)).toEqual(["root/msg-owner"]);
    // A message redeems it for the sending party's own conversation, and only that one.
    const writer = await mint(["conversations:write"]);
    expect((await say("msg-partner", code, writer.key)).answer).toBe(PAIRING_REPLIES.linked);
    expect(await addressesOf(owner)).toEqual([`${writer.user_id}/msg-partner`, "root/msg-owner"].sort());
  },

  "POST /api/channels/web/messages": async () => {
    network();
    await say("web-owner", "hello");
    const code = await codeOf("web-owner");
    const owner = await personOf("root/web-owner");
    const cookie = await openPage();
    const visitor = cookie.split("=")[1].split(".")[0];
    const post = (origin: string) =>
      dispatch("POST", "/api/channels/web/messages", {
        headers: { "content-type": "application/json", cookie, origin },
        body: JSON.stringify({ identity: world.identity, text: code }),
      });
    // Another site's POST carrying the visitor's cookie is refused before anything is admitted.
    expect((await post("https://evil.example")).status).toBe(403);
    expect(await addressesOf(owner)).toEqual(["root/web-owner"]);
    // The page's own POST redeems it for this visitor's conversation.
    expect((await post(ORIGIN)).status).toBe(200);
    for (let i = 0; i < 200 && (await addressesOf(owner)).length < 2; i++) await new Promise((r) => setTimeout(r, 20));
    expect(await addressesOf(owner)).toEqual(["root/web-owner", visitor].sort());
  },

  "POST /api/channels/web/questions/{interaction_id}/answer": async () => {
    network();
    await say("ans-owner", "hello");
    const code = await codeOf("ans-owner");
    const owner = await personOf("root/ans-owner");
    const cookie = await openPage();
    // An answer reaches only a question the visitor's own conversation waits on: none here.
    const r = await dispatch("POST", `/api/channels/web/questions/${uniq("q")}/answer`, {
      headers: { "content-type": "application/json", cookie, origin: ORIGIN },
      body: JSON.stringify({ identity: world.identity, text: code }),
    });
    expect(r.status).toBe(404);
    // From another site, refused before the session is even read.
    const foreign = await dispatch("POST", `/api/channels/web/questions/${uniq("q")}/answer`, {
      headers: { "content-type": "application/json", cookie, origin: "https://evil.example" },
      body: JSON.stringify({ identity: world.identity, text: code }),
    });
    expect(foreign.status).toBe(403);
    expect(await addressesOf(owner)).toEqual(["root/ans-owner"]);
    expect((await say("ans-partner", code)).answer).toBe(PAIRING_REPLIES.linked);
  },

  "POST /api/channels/web/session/merge": async () => {
    network();
    // The desk verifies its users; a signed-in user of it and an anonymous visitor who wrote.
    const secret = (await call("PUT", `/api/channels/web/sites/${world.identity}/verification`, ADMIN, { rotate: true })).json.data.secret as string;
    const hash = new Uint8Array(await crypto.subtle.sign("HMAC", await hmacKey(secret), new TextEncoder().encode("merge-user")));
    const minted = await dispatch("POST", "/api/channels/web/session", {
      headers: { "content-type": "application/json", origin: ORIGIN },
      body: JSON.stringify({ identity: world.identity, user_id: "merge-user", user_hash: [...hash].map((b) => b.toString(16).padStart(2, "0")).join("") }),
    });
    expect(minted.status, minted.text).toBe(200);
    const verified = JSON.parse(minted.text).data.token as string;
    const user = verified.split(".")[0];
    const cookie = await openPage();
    const visitor = cookie.split("=")[1].split(".")[0];
    const merge = (headers: Record<string, string>, token: string) =>
      dispatch("POST", "/api/channels/web/session/merge", {
        headers: { "content-type": "application/json", ...headers },
        body: JSON.stringify({ identity: world.identity, verified_token: token }),
      });
    // Another site's POST carrying the visitor's cookie is refused before anything is read.
    expect((await merge({ cookie, origin: "https://evil.example" }, verified)).status).toBe(403);
    // Without the signed-in party's own live session, nothing is joined.
    expect((await merge({ cookie, origin: ORIGIN }, `${user}.${"x".repeat(43)}`)).status).toBe(401);
    // Without the anonymous party's own session, nothing is joined either.
    expect((await merge({ origin: ORIGIN }, verified)).status).toBe(401);
    expect(await personOf(visitor)).toBeNull();
    expect(await personOf(user)).toBeNull();
    // Both parties' own credentials join them, into one person.
    expect((await merge({ cookie, origin: ORIGIN }, verified)).status).toBe(200);
    const person = await personOf(user);
    expect(person).not.toBeNull();
    expect(await addressesOf(person)).toEqual([user, visitor].sort());
  },

  "POST /api/channels/{channel}/inbound": async () => {
    network();
    await say("tg-owner", "hello");
    const code = await codeOf("tg-owner");
    const owner = await personOf("root/tg-owner");
    // The test bot's id, from CHANNEL_TELEGRAM_BOT_TOKEN: the identity its updates name.
    const tgIdentity = String(env.CHANNEL_TELEGRAM_BOT_TOKEN).split(":")[0];
    const runner = await mint([`tool:${world.tool}`]);
    expect(
      (
        await call("POST", `/api/conversations/${uniq("la-tg")}`, ADMIN, {
          door: "channel",
          channel: "telegram",
          our_identity: tgIdentity,
          target_kind: "tool",
          target_name: world.tool,
          execution_key: runner.user_id,
        })
      ).status,
    ).toBe(200);
    const chat = 900000 + n;
    const update = (secret: string | null) =>
      dispatch("POST", "/api/channels/telegram/inbound", {
        headers: { "content-type": "application/json", ...(secret ? { "x-telegram-bot-api-secret-token": secret } : {}) },
        body: JSON.stringify({
          update_id: chat,
          message: { message_id: chat, date: 1, chat: { id: chat, type: "private" }, from: { id: chat, is_bot: false, first_name: "T" }, text: code },
        }),
      });
    // Unsigned: refused, nothing admitted.
    expect((await update(null)).status).toBe(401);
    expect(await addressesOf(owner)).toEqual(["root/tg-owner"]);
    // The provider's signed message redeems it for its own sender only.
    expect((await update(String(env.CHANNEL_TELEGRAM_WEBHOOK_SECRET))).status).toBe(200);
    for (let i = 0; i < 200 && (await addressesOf(owner)).length < 2; i++) await new Promise((r) => setTimeout(r, 20));
    expect(await addressesOf(owner)).toEqual([String(chat), "root/tg-owner"].sort());
  },

  "POST /api/run-tool": async () => {
    network();
    // Admin-only: a key with every other grant is refused at the door; the admin may mint.
    const strong = await mint(["tools", "conversations", `tool:${world.tool}`]);
    expect((await call("POST", "/api/run-tool", strong.key, { tool_name: "get_pairing_code", arguments: victim() })).status).toBe(403);
    const before = (await directory()).codes;
    const r = await call("POST", "/api/run-tool", ADMIN, { tool_name: "get_pairing_code", arguments: victim() });
    expect(r.status, r.text).toBe(200);
    expect((await directory()).codes).toBe(before + 1);
  },

  "POST /api/tool-runs": mintFixture(
    () => ["tools:read"],
    async (key, args) => {
      const r = await call("POST", "/api/tool-runs", key, { tool_name: "get_pairing_code", arguments: args });
      expect(r.status, r.text).toBe(202);
      await waitRun(r.json.data.run_id);
    },
  ),

  "POST /api/agents/{name}/runs": (() => {
    let agent = "";
    return mintFixture(
      async () => {
        agent ||= await pairingAgent();
        return ["agents:read", `agent:${agent}`];
      },
      async (key, args) => {
        llmArgs = args;
        const r = await agentRun(`/api/agents/${agent}/runs`, key);
        expect(r).toContain("stream.end");
      },
    );
  })(),

  "POST /api/agents/authored/{name}/runs": (() => {
    let authored = "";
    return mintFixture(
      async () => {
        if (!authored) {
          const agent = await pairingAgent();
          authored = uniq("la-authored");
          const p = await call("POST", "/api/presets", ADMIN, { name: authored, base_tool: agent });
          expect(p.status, p.text).toBe(200);
          return ["agents:read", `agent:${authored}`, `agent:${agent}`];
        }
        return ["agents:read", `agent:${authored}`];
      },
      async (key, args) => {
        llmArgs = args;
        expect(await agentRun(`/api/agents/authored/${authored}/runs`, key)).toContain("stream.end");
      },
    );
  })(),

  "POST /api/sub-mcp/{slug}/mcp": (() => {
    let slug = "";
    return mintFixture(
      async () => {
        if (!slug) {
          slug = uniq("la-app");
          const r = await call("POST", "/api/sub-mcp", ADMIN, { slug, tools: ["get_pairing_code"] });
          expect(r.status, r.text).toBe(200);
        }
        return [];
      },
      async (key, args) => {
        const r = await dispatch("POST", `/api/sub-mcp/${slug}/mcp`, {
          headers: { "content-type": "application/json", accept: "application/json, text/event-stream", "x-api-key": key },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "get_pairing_code", arguments: args } }),
        });
        expect(r.status, r.text).toBe(200);
      },
    );
  })(),
};

describe("each declaring door keeps the authority rule", () => {
  for (const d of DECLARED) {
    it(`${label(d)} (${d.links})`, async () => {
      const fixture = FIXTURES[label(d)];
      expect(fixture, `no fixture for ${label(d)}`).toBeDefined();
      await must(fixture, "fixture")();
    });
  }
});

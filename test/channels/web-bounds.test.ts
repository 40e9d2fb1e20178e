/**
 * What an anonymous visitor can make the web channel keep (docs/channels.md "Web", docs/security.md
 * "Anonymous doors"): new sessions are capped per client network, a session whose credential never
 * comes back is swept with everything its mint created, a refused credential leaves no object
 * behind, and the widget keeps its token per service origin.
 */
import { listDurableObjectIds, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { channelThreadId } from "../../src/shared/thread-id";
import { createRoute, echoKey } from "../helpers/bridge";
import { D1Counter, countedFetch } from "../helpers/d1-count";
import { BASE, admin, call, dispatch, uniq } from "../helpers/http";
import { stubFor } from "../helpers/threads";
import { legacyTokenKey, tokenKey } from "../../webchat/src/token-key";

const ORIGIN = new URL(BASE).origin;
const CAP = 3;

let networks = 0;
/** A client network of its own for each test (an address in TEST-NET-2), so no test spends another's mints. */
const network = () => `198.51.100.${++networks}`;

async function webRoute() {
  const k = await echoKey();
  const identity = uniq("bound").replace(/[^A-Za-z0-9_-]/g, "-");
  const r = await createRoute({ door: "channel", channel: "web", our_identity: identity, target_kind: "tool", target_name: "echo", execution_key: k.user_id });
  return { name: r.name as string, identity };
}

/** The widget's mint, from the service's own origin (always allowed). */
function mintWidget(identity: string, ip: string) {
  return call("POST", "/api/channels/web/session", { body: { identity }, headers: { origin: ORIGIN, "cf-connecting-ip": ip } });
}

/** The chat page's first visit (no cookie): a mint. */
async function openPage(identity: string, ip: string, cookie?: string) {
  const res = await dispatch(`${BASE}/api/channels/web/chat/${identity}`, {
    headers: { "sec-fetch-mode": "navigate", "cf-connecting-ip": ip, ...(cookie ? { cookie } : {}) },
  });
  const html = await res.text();
  return { res, html, cookie: (res.headers.get("set-cookie") ?? "").split(";")[0] };
}

function say(identity: string, token: string, ip: string, text = "hello") {
  return call("POST", "/api/channels/web/messages", {
    body: { identity, text },
    headers: { origin: ORIGIN, authorization: `Bearer ${token}`, "cf-connecting-ip": ip },
  });
}

const threadCount = async () => (await listDurableObjectIds(env.THREADS)).length;

/** What the object stores, read in the instance that is live (nothing here recreates its schema). */
async function stored(threadId: string): Promise<{ tables: string[]; keys: number; alarm: number | null }> {
  return runInDurableObject(stubFor(threadId), async (_obj, state) => ({
    tables: state.storage.sql
      .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '_cf_%' AND name NOT LIKE 'sqlite_%'")
      .toArray()
      .map((r) => r.name),
    keys: (await state.storage.list()).size,
    alarm: await state.storage.getAlarm(),
  }));
}

/** Ends the object's instance, as an eviction or a deploy would. */
async function restart(threadId: string): Promise<void> {
  await runInDurableObject(stubFor(threadId), (_obj, state) => state.abort("restart")).catch(() => undefined);
}

/** Moves the session's expiry into the past (the object is restarted after, so it reads it again). */
async function expireSession(threadId: string): Promise<void> {
  await runInDurableObject(stubFor(threadId), (_obj, state) => {
    state.storage.sql.exec("UPDATE web_session SET expires_at = 1");
  });
  await restart(threadId);
}

const sessionRows = (threadId: string) =>
  runInDurableObject(stubFor(threadId), (_obj, state) => state.storage.sql.exec<{ pending: number }>("SELECT pending FROM web_session").toArray());

beforeAll(async () => {
  const r = await call("POST", "/api/config/env", { key: await admin(), body: { set: { CHANNEL_WEB_SESSIONS_PER_HOUR: CAP } } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
});

afterAll(async () => {
  await call("POST", "/api/config/env", { key: await admin(), body: { unset: ["CHANNEL_WEB_SESSIONS_PER_HOUR"] } });
});

describe("session minting is capped per client network", () => {
  it("POST session: the cap's worth of tokens, then 429 too_many_sessions with Retry-After and no object made", async () => {
    const { identity } = await webRoute();
    const ip = network();
    for (let i = 0; i < CAP; i++) expect((await mintWidget(identity, ip)).status).toBe(200);
    const before = await threadCount();
    const refused = await mintWidget(identity, ip);
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ code: "too_many_sessions" });
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(JSON.stringify(refused.body)).not.toContain(ip);
    expect(await threadCount()).toBe(before);
    // Another network is not held to this one's cap.
    expect((await mintWidget(identity, network())).status).toBe(200);
  });

  it("counts the network across identities, and an IPv6 client by its /64", async () => {
    const a = await webRoute();
    const b = await webRoute();
    const net = `2001:db8:${++networks}:1`;
    expect((await mintWidget(a.identity, `${net}::1`)).status).toBe(200);
    expect((await mintWidget(b.identity, `${net}:0:0:0:2`)).status).toBe(200);
    expect((await mintWidget(a.identity, `${net}:ffff::3`)).status).toBe(200);
    expect((await mintWidget(b.identity, `${net}::4`)).status).toBe(429);
  });

  it("the page door: past the cap a small refusal page and no cookie; a visitor with a live cookie still gets in", async () => {
    const { identity } = await webRoute();
    const ip = network();
    const first = await openPage(identity, ip);
    expect(first.res.status).toBe(200);
    for (let i = 1; i < CAP; i++) expect((await openPage(identity, ip)).res.status).toBe(200);
    const refused = await openPage(identity, ip);
    expect(refused.res.status).toBe(429);
    expect(refused.res.headers.get("x-web-refusal")).toBe("too_many_sessions");
    expect(refused.res.headers.get("content-type")).toContain("text/html");
    expect(refused.res.headers.get("set-cookie")).toBeNull();
    expect(Number(refused.res.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(refused.html).toContain("Too many new chats");
    const again = await openPage(identity, ip, first.cookie);
    expect(again.res.status).toBe(200);
    expect(again.cookie).toBe(first.cookie);
  });

  it("a rotation is a mint: past the cap it is refused and the current session lives on", async () => {
    const { identity } = await webRoute();
    const ip = network();
    const tokens: string[] = [];
    for (let i = 0; i < CAP; i++) tokens.push((await mintWidget(identity, ip)).body.data.token);
    const rotate = await call("POST", "/api/channels/web/session/rotate", {
      body: { identity },
      headers: { origin: ORIGIN, authorization: `Bearer ${tokens[0]}`, "cf-connecting-ip": ip },
    });
    expect(rotate.status).toBe(429);
    expect(rotate.body).toMatchObject({ code: "too_many_sessions" });
    expect((await say(identity, tokens[0], ip)).status).toBe(200);
  });

  it("makes no D1 statement: the cap is counted in a rate-bucket object", async () => {
    const { identity } = await webRoute();
    const ip = network();
    expect((await mintWidget(identity, ip)).status).toBe(200);
    const counter = new D1Counter();
    const mint = () =>
      countedFetch(counter, "POST", "/api/channels/web/session", {
        headers: { origin: ORIGIN, "cf-connecting-ip": ip, "content-type": "application/json" },
        body: JSON.stringify({ identity }),
      });
    expect((await mint()).status).toBe(200);
    expect((await mint()).status).toBe(200);
    expect((await mint()).status).toBe(429);
    expect(counter.count("worker"), counter.describe()).toEqual({ roundTrips: 0, statements: 0 });
  });
});

describe("a session that never comes back", () => {
  it("is swept by the object's alarm after the pending lifetime, through a restart, with everything its mint stored", async () => {
    const { name, identity } = await webRoute();
    const ip = network();
    const minted = await mintWidget(identity, ip);
    expect(minted.status).toBe(200);
    const token: string = minted.body.data.token;
    const threadId = channelThreadId(name, token.split(".")[0]);
    const held = await stored(threadId);
    expect(held.tables).toContain("web_session");
    expect(held.alarm).toBeGreaterThan(Date.now());
    expect(held.alarm).toBeLessThanOrEqual(Date.parse(minted.body.data.expires_at) + 1);

    await expireSession(threadId);
    expect(await runDurableObjectAlarm(stubFor(threadId))).toBe(true);
    expect(await stored(threadId)).toEqual({ tables: [], keys: 0, alarm: null });
    // Nothing listed it: no conversation, no D1 row names the visitor.
    const listed = await call("GET", `/api/conversations/${name}/threads`, { key: await admin() });
    expect(JSON.stringify(listed.body)).not.toContain(token.split(".")[0]);

    // The token is refused like any unknown one, and the refusal stores nothing again.
    const late = await say(identity, token, ip);
    expect(late.status).toBe(401);
    expect(late.body).toMatchObject({ code: "session_missing" });
    expect(await stored(threadId)).toEqual({ tables: [], keys: 0, alarm: null });
    // The object is usable after it gave its storage back: a restart and a new session there work.
    await restart(threadId);
    expect((await say(identity, token, ip)).status).toBe(401);
  });

  it("a session whose credential came back lives its own lifetime; past it the session ends and the conversation stays", async () => {
    const { identity, name } = await webRoute();
    const ip = network();
    const token: string = (await mintWidget(identity, ip)).body.data.token;
    const threadId = channelThreadId(name, token.split(".")[0]);
    expect((await say(identity, token, ip, "keep me")).status).toBe(200);
    await restart(threadId);
    await runDurableObjectAlarm(stubFor(threadId));
    expect(await sessionRows(threadId)).toEqual([{ pending: 0 }]);
    expect((await say(identity, token, ip, "still here")).status).toBe(200);
    // Its lifetime runs out unused: the alarm ends it; the records are the conversation's, kept.
    expect((await stored(threadId)).alarm).toBeGreaterThan(Date.now());
    await expireSession(threadId);
    expect(await runDurableObjectAlarm(stubFor(threadId))).toBe(true);
    expect(await sessionRows(threadId)).toEqual([]);
    expect((await stored(threadId)).tables).toContain("records");
    expect((await say(identity, token, ip, "too late")).status).toBe(401);
  });

  it("a confirmed session that never wrote leaves nothing once its lifetime is over", async () => {
    const { identity, name } = await webRoute();
    const ip = network();
    const page = await openPage(identity, ip);
    const visitor = page.cookie.split("=")[1].split(".")[0];
    const threadId = channelThreadId(name, visitor);
    // The page's own next visit confirms the session (as its stream would), and it writes nothing.
    expect((await openPage(identity, ip, page.cookie)).cookie).toBe(page.cookie);
    expect(await sessionRows(threadId)).toEqual([{ pending: 0 }]);
    await expireSession(threadId);
    expect(await runDurableObjectAlarm(stubFor(threadId))).toBe(true);
    expect(await stored(threadId)).toEqual({ tables: [], keys: 0, alarm: null });
  });

  it("a pending session on an object that holds more is swept alone: the rest stays", async () => {
    const { identity, name } = await webRoute();
    const token: string = (await mintWidget(identity, network())).body.data.token;
    const threadId = channelThreadId(name, token.split(".")[0]);
    await stubFor(threadId).webAppend("bot", "a transcript entry", null, null, Date.now() + 3_600_000);
    await expireSession(threadId);
    expect(await runDurableObjectAlarm(stubFor(threadId))).toBe(true);
    const rows = await runInDurableObject(stubFor(threadId), (_obj, state) => ({
      sessions: state.storage.sql.exec("SELECT * FROM web_session").toArray().length,
      entries: state.storage.sql.exec<{ text: string }>("SELECT text FROM web_transcript").toArray(),
    }));
    expect(rows).toEqual({ sessions: 0, entries: [{ text: "a transcript entry" }] });
  });

  it("a forged token leaves no object storage behind", async () => {
    const { identity, name } = await webRoute();
    const visitor = `w_${"A".repeat(22)}`;
    const forged = `${visitor}.${"B".repeat(43)}`;
    const refused = await say(identity, forged, network());
    expect(refused.status).toBe(401);
    expect(await stored(channelThreadId(name, visitor))).toEqual({ tables: [], keys: 0, alarm: null });
  });

  it("a rotation away from a session that never wrote gives the old object's storage back", async () => {
    const { identity, name } = await webRoute();
    const ip = network();
    const token: string = (await mintWidget(identity, ip)).body.data.token;
    const rotated = await call("POST", "/api/channels/web/session/rotate", {
      body: { identity },
      headers: { origin: ORIGIN, authorization: `Bearer ${token}`, "cf-connecting-ip": ip },
    });
    expect(rotated.status, JSON.stringify(rotated.body)).toBe(200);
    expect(await stored(channelThreadId(name, token.split(".")[0]))).toEqual({ tables: [], keys: 0, alarm: null });
  });
});

describe("the widget's stored token", () => {
  it("is keyed by the service's origin as well as the identity", () => {
    const a = tokenKey("https://chat.one.example", "desk");
    const b = tokenKey("https://chat.two.example", "desk");
    expect(a).not.toBe(b);
    expect(tokenKey("https://chat.one.example:8443", "desk")).not.toBe(a);
    expect(a).not.toBe(legacyTokenKey("desk"));
    expect(tokenKey("https://chat.one.example", "desk2")).not.toBe(a);
  });
});

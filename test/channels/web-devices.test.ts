/**
 * A signed-in user on several devices (docs/channels.md, "Several devices"): the user's thread
 * keeps one session per device, each checked, refreshed, swept and ended on its own, every open
 * socket is pushed to while its own session lives, and an anonymous visitor keeps one session as
 * before. Also the visitor's own sign-out (`POST session/end`) and the storage an older thread
 * object kept its one session in.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { MAX_DEVICE_SESSIONS } from "../../src/conversations/model/web";
import { THREAD_SCHEMA, migrate } from "../../src/conversations/thread/store";
import { must } from "../../src/platform/must";
import { BASE, admin, call, dispatch } from "../helpers/http";
import { inScratchObject } from "../helpers/object-schema";
import { eventually, stubFor } from "../helpers/threads";
import { ORIGIN, frameSocket, newVisitor, webDesk } from "../helpers/web-visitor";

let networks = 0;
/** A client network of its own per mint (TEST-NET-3), so the per-network session cap never interferes. */
const ip = () => `203.0.113.${(++networks % 250) + 1}`;

async function verifiedDesk() {
  const desk = await webDesk();
  const r = await call("PUT", `/api/channels/web/sites/${desk.identity}/verification`, { key: await admin(), body: {} });
  expect(r.status).toBe(200);
  return { ...desk, secret: String(r.body.data.secret) };
}

/** One device's session for `user`: a bearer token on the user's own address. */
async function device(desk: { identity: string; secret: string }, user: string): Promise<{ token: string; address: string }> {
  const r = await call("POST", "/api/channels/web/session", {
    body: { identity: desk.identity, user_id: user, user_hash: createHmac("sha256", desk.secret).update(user, "utf8").digest("hex") },
    headers: { origin: ORIGIN, "cf-connecting-ip": ip() },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return { token: r.body.data.token, address: r.body.data.token.split(".")[0] };
}

const post = (path: string, identity: string, token: string, body: Record<string, unknown> = {}) =>
  call("POST", `/api/channels/web/${path}`, { body: { identity, ...body }, headers: { origin: ORIGIN, authorization: `Bearer ${token}` } });

/** The widget's stream: a one-time ticket, then the socket; its frames once `ready` came. */
async function stream(identity: string, token: string): Promise<{ frames: any[]; ws: WebSocket }> {
  const t = await post("stream-ticket", identity, token);
  expect(t.status, JSON.stringify(t.body)).toBe(200);
  const s = await frameSocket(
    `${BASE}/api/channels/web/stream?identity=${identity}&ticket=${encodeURIComponent(t.body.data.ticket)}`,
    { origin: ORIGIN },
    { ready: true },
  );
  expect(s.status).toBe(101);
  return { frames: s.frames, ws: must(s.ws, "the stream's socket") };
}

const texts = (frames: any[]) => frames.filter((f) => f.type === "entry").map((f) => f.entry.text as string);
const ended = (frames: any[]) => frames.some((f) => f.type === "ended");

const sessionRows = (threadId: string) =>
  runInDurableObject(stubFor(threadId), (_o, state) =>
    state.storage.sql.exec<{ secret_hash: string; pending: number }>("SELECT secret_hash, pending FROM web_session ORDER BY used_at").toArray(),
  );

describe("a signed-in user on several devices", () => {
  it("both devices live at once: each sends, and each open socket sees the other's message", async () => {
    const desk = await verifiedDesk();
    const laptop = await device(desk, "ada");
    const phone = await device(desk, "ada");
    expect(phone.address).toBe(laptop.address);
    const a = await stream(desk.identity, laptop.token);
    const b = await stream(desk.identity, phone.token);
    expect((await post("messages", desk.identity, laptop.token, { text: "from the laptop" })).status).toBe(200);
    expect((await post("messages", desk.identity, phone.token, { text: "from the phone" })).status).toBe(200);
    for (const s of [a, b]) {
      const seen = await eventually(
        async () => texts(s.frames),
        (t) => t.includes("from the laptop") && t.includes("from the phone"),
      );
      expect(seen).toEqual(expect.arrayContaining(["from the laptop", "from the phone"]));
      expect(ended(s.frames)).toBe(false);
    }
    expect(await sessionRows(`bridge:${desk.web}:${laptop.address}`)).toHaveLength(2);
    a.ws.close();
    b.ws.close();
  });

  it("keeps at most MAX_DEVICE_SESSIONS: the least recently used device is dropped, its socket told", async () => {
    const desk = await verifiedDesk();
    const first = await device(desk, "many");
    const watching = await stream(desk.identity, first.token);
    const others = [];
    for (let i = 1; i < MAX_DEVICE_SESSIONS; i++) others.push(await device(desk, "many"));
    // The first device is used again, so the second is now the least recently used.
    expect((await post("messages", desk.identity, first.token, { text: "still here" })).status).toBe(200);
    const newest = await device(desk, "many");
    expect(await sessionRows(`bridge:${desk.web}:${first.address}`)).toHaveLength(MAX_DEVICE_SESSIONS);
    const dropped = await post("messages", desk.identity, must(others[0], "second").token, { text: "me?" });
    expect([dropped.status, dropped.body.code]).toEqual([401, "session_missing"]);
    for (const live of [first, ...others.slice(1), newest]) expect((await post("config", desk.identity, live.token)).status).toBe(200);
    expect(ended(watching.frames)).toBe(false);
    // The first device is now the least recently used (each other one was used after it): one
    // more device drops it, and its open socket is told and closed.
    await device(desk, "many");
    await eventually(
      async () => watching.frames,
      (f) => ended(f),
    );
    expect(ended(watching.frames)).toBe(true);
    expect((await post("config", desk.identity, newest.token)).status).toBe(200);
    watching.ws.close();
  });

  it("ending one device's session (sign-out, rotation) leaves the others and their sockets", async () => {
    const desk = await verifiedDesk();
    const laptop = await device(desk, "grace");
    const phone = await device(desk, "grace");
    const tablet = await device(desk, "grace");
    const a = await stream(desk.identity, laptop.token);
    const b = await stream(desk.identity, phone.token);
    const out = await post("session/end", desk.identity, laptop.token);
    expect([out.status, out.body.data]).toEqual([200, { ended: true }]);
    await eventually(
      async () => a.frames,
      (f) => ended(f),
    );
    expect(ended(a.frames)).toBe(true);
    expect((await post("messages", desk.identity, laptop.token, { text: "gone?" })).status).toBe(401);
    expect((await post("messages", desk.identity, phone.token, { text: "the phone goes on" })).status).toBe(200);
    await eventually(
      async () => texts(b.frames),
      (t) => t.includes("the phone goes on"),
    );
    expect(ended(b.frames)).toBe(false);
    // A rotation from the tablet leaves the user's conversation on the tablet only: an anonymous one there.
    const rotated = await post("session/rotate", desk.identity, tablet.token);
    expect(rotated.status, JSON.stringify(rotated.body)).toBe(200);
    expect(String(rotated.body.data.token)).toMatch(/^w_/);
    expect((await post("messages", desk.identity, tablet.token, { text: "tablet?" })).status).toBe(401);
    expect((await post("messages", desk.identity, phone.token, { text: "the phone still goes on" })).status).toBe(200);
    expect(ended(b.frames)).toBe(false);
    b.ws.close();
  });

  it("a stream ticket opens the socket of its own session only: it dies with that session", async () => {
    const desk = await verifiedDesk();
    const laptop = await device(desk, "lin");
    const phone = await device(desk, "lin");
    const t = await post("stream-ticket", desk.identity, laptop.token);
    expect((await post("session/end", desk.identity, laptop.token)).status).toBe(200);
    const res = await dispatch(`${BASE}/api/channels/web/stream?identity=${desk.identity}&ticket=${encodeURIComponent(t.body.data.ticket)}`, {
      headers: { upgrade: "websocket", origin: ORIGIN },
    });
    expect(res.status).toBe(401);
    expect((await post("config", desk.identity, phone.token)).status).toBe(200);
  });

  it("the sweep ends each expired device on its own; the object keeps the live ones", async () => {
    const desk = await verifiedDesk();
    const laptop = await device(desk, "sweep");
    const phone = await device(desk, "sweep");
    expect((await post("config", desk.identity, phone.token)).status).toBe(200);
    const threadId = `bridge:${desk.web}:${laptop.address}`;
    const watching = await stream(desk.identity, laptop.token);
    const rows = await sessionRows(threadId);
    const phoneHash = must(
      rows.find((r) => r.pending === 0),
      "the phone's confirmed session",
    ).secret_hash;
    // The laptop's session is past its expiry; the phone's is not.
    await runInDurableObject(stubFor(threadId), (_o, state) => {
      state.storage.sql.exec("UPDATE web_session SET expires_at = 1 WHERE secret_hash <> ?", phoneHash);
      state.storage.sql.exec("UPDATE web_session SET expires_at = ? WHERE secret_hash = ?", Date.now() + 3_600_000, phoneHash);
    });
    await runInDurableObject(stubFor(threadId), (obj) => (obj as unknown as { parts: { web: { loadExpiry(): void } } }).parts.web.loadExpiry());
    await runDurableObjectAlarm(stubFor(threadId));
    await eventually(
      async () => watching.frames,
      (f) => ended(f),
    );
    expect(ended(watching.frames)).toBe(true);
    expect((await sessionRows(threadId)).map((r) => r.secret_hash)).toEqual([phoneHash]);
    expect((await post("config", desk.identity, laptop.token)).status).toBe(401);
    expect((await post("config", desk.identity, phone.token)).status).toBe(200);
  });
});

describe("an anonymous visitor keeps one session", () => {
  it("a new session on its thread replaces the old one, as before", async () => {
    const desk = await webDesk();
    const v = await newVisitor(desk);
    await runInDurableObject(stubFor(v.home), async (obj) => {
      const o = obj as unknown as { webOpen(i: string, h: string, t: number, p: null, keep?: number): Promise<void> };
      await o.webOpen(desk.identity, "a".repeat(64), 60_000, null);
      await o.webOpen(desk.identity, "b".repeat(64), 60_000, null);
    });
    expect((await sessionRows(v.home)).map((r) => r.secret_hash)).toEqual(["b".repeat(64)]);
  });

  it("POST session/end signs the page out: its cookie is cleared and no longer works", async () => {
    const desk = await webDesk();
    const v = await newVisitor(desk);
    const r = await call("POST", "/api/channels/web/session/end", { body: { identity: desk.identity }, headers: { origin: ORIGIN, cookie: v.cookie } });
    expect([r.status, r.body.data]).toEqual([200, { ended: true }]);
    expect(r.headers.get("set-cookie")).toMatch(new RegExp(`^tai_web_${desk.identity}=; Path=/api/channels/web/; Max-Age=0;`));
    const again = await call("POST", "/api/channels/web/session/end", { body: { identity: desk.identity }, headers: { origin: ORIGIN, cookie: v.cookie } });
    expect([again.status, again.body.code]).toEqual([401, "session_missing"]);
  });
});

describe("a thread object written before sessions per device", () => {
  it("keeps its one session (the same credential still works) and drops its tickets", async () => {
    const out = await inScratchObject((sql, storage) => {
      migrate(storage);
      sql.exec("DROP TABLE web_session");
      sql.exec("DROP TABLE web_ticket");
      sql.exec(
        "CREATE TABLE web_session (id INTEGER PRIMARY KEY CHECK (id = 1), identity TEXT NOT NULL, secret_hash TEXT NOT NULL, expires_at INTEGER NOT NULL, pending INTEGER NOT NULL, params TEXT)",
      );
      sql.exec("CREATE TABLE web_ticket (ticket_hash TEXT PRIMARY KEY, expires_at INTEGER NOT NULL)");
      sql.exec(
        "INSERT INTO web_session (id, identity, secret_hash, expires_at, pending, params) VALUES (1, 'desk', ?, 99, 0, '{\"a\":\"1\"}')",
        "c".repeat(64),
      );
      sql.exec("INSERT INTO web_ticket (ticket_hash, expires_at) VALUES ('t', 99)");
      sql.exec("UPDATE meta SET value = '8' WHERE key = 'schema_version'");
      migrate(storage);
      migrate(storage);
      return {
        sessions: sql.exec("SELECT secret_hash, identity, expires_at, pending, params, used_at FROM web_session").toArray(),
        tickets: sql.exec("SELECT * FROM web_ticket").toArray().length,
        ticketColumns: sql
          .exec<{ name: string }>("PRAGMA table_info(web_ticket)")
          .toArray()
          .map((c) => c.name),
        version: sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = 'schema_version'").one().value,
      };
    });
    expect(out.sessions).toEqual([{ secret_hash: "c".repeat(64), identity: "desk", expires_at: 99, pending: 0, params: '{"a":"1"}', used_at: 0 }]);
    expect(out.tickets).toBe(0);
    expect(out.ticketColumns).toContain("session_hash");
    expect(out.version).toBe(String(THREAD_SCHEMA.steps.length));
  });
});

describe("a widget on a page the identity lists", () => {
  it("reads the reason of a refusal; a page the identity does not list learns nothing", async () => {
    const desk = await verifiedDesk();
    const shop = "https://shop.example";
    expect((await call("PUT", `/api/channels/web/sites/${desk.identity}`, { key: await admin(), body: { allowed_origins: [shop] } })).status).toBe(200);
    const now = Math.floor(Date.now() / 1000);
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
    const signing = `${b64({ alg: "HS256" })}.${b64({ sub: "late", iat: now - 4000, exp: now - 600 })}`;
    const expired = `${signing}.${createHmac("sha256", desk.secret).update(signing, "utf8").digest("base64").replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")}`;
    const minted = await call("POST", "/api/channels/web/session", {
      body: { identity: desk.identity, user_token: expired },
      headers: { origin: shop, "cf-connecting-ip": ip() },
    });
    expect([minted.status, minted.body.code, minted.headers.get("access-control-allow-origin")]).toEqual([401, "user_token_expired", shop]);
    const gone = `w_${"A".repeat(22)}.${"B".repeat(43)}`;
    const lost = await call("POST", "/api/channels/web/messages", {
      body: { identity: desk.identity, text: "hi" },
      headers: { origin: shop, authorization: `Bearer ${gone}` },
    });
    expect([lost.status, lost.body.code, lost.headers.get("access-control-allow-origin")]).toEqual([401, "session_missing", shop]);
    for (const path of ["session", "messages"]) {
      const foreign = await call("POST", `/api/channels/web/${path}`, {
        body: { identity: desk.identity, text: "hi" },
        headers: { origin: "https://evil.example", authorization: `Bearer ${gone}` },
      });
      expect([path, foreign.status, foreign.headers.get("access-control-allow-origin")]).toEqual([path, 403, null]);
    }
  });
});

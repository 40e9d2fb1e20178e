/**
 * The operator console's server side (docs/console.md): the pages and files with their
 * security headers, the API reference, the live tickets (who may have one, one use, 30 s) and the
 * live WebSocket, which hears a route's listing pushes as ids and a status only.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { CONSOLE_CSP, cspHash, inlineScripts } from "../../src/console/security-headers";
import { consoleHubStub } from "../../src/console/rpc";
import { SOCKETS_PER_HUB, SOCKETS_PER_KEY, SUPERSEDED_CODE, mintTicket, ticketHash } from "../../src/console/tickets";
import { PRESENCE_FRAMES_PER_WINDOW } from "../../src/console/presence";
import { sha256Hex } from "../../src/access-control/crypto";
import { echoRoute, send } from "../helpers/bridge";
import { BASE, admin, call, mintKey, uniq, dispatch } from "../helpers/http";
import { must } from "../../src/platform/must";

async function get(path: string, headers: Record<string, string> = {}) {
  return dispatch(`${BASE}${path}`, { headers, redirect: "manual" });
}

/** Opens the live socket of `route` with `ticket`; answers the socket and the frames it got so far. */
async function openLive(route: string, ticket: string) {
  const res = await get(`/api/conversations/${route}/live?ticket=${encodeURIComponent(ticket)}`, { upgrade: "websocket" });
  expect(res.status).toBe(101);
  const ws = must(res.webSocket, "res.webSocket");
  const frames: any[] = [];
  const waiters: Array<() => void> = [];
  ws.addEventListener("message", (e) => {
    frames.push(typeof e.data === "string" && e.data.startsWith("{") ? JSON.parse(e.data) : e.data);
    for (const w of waiters.splice(0)) w();
  });
  let closeCode: number | null = null;
  ws.addEventListener("close", (e) => {
    closeCode = e.code;
    for (const w of waiters.splice(0)) w();
  });
  ws.accept();
  const next = async (pred: (f: any) => boolean, ms = 8000) => {
    const deadline = Date.now() + ms;
    for (;;) {
      const hit = frames.find(pred);
      if (hit) return hit;
      if (Date.now() > deadline) throw new Error(`no such frame; got ${JSON.stringify(frames)}`);
      await new Promise<void>((r) => {
        waiters.push(r);
        setTimeout(r, 100);
      });
    }
  };
  /** The close code once the server closed the socket. */
  const closed = async (ms = 8000) => {
    const deadline = Date.now() + ms;
    while (closeCode === null) {
      if (Date.now() > deadline) throw new Error(`the socket stayed open; got ${JSON.stringify(frames)}`);
      await new Promise<void>((r) => {
        waiters.push(r);
        setTimeout(r, 100);
      });
    }
    return closeCode;
  };
  return { ws, frames, next, closed };
}

async function ticketFor(route: string, key: string) {
  return call("POST", `/api/conversations/${route}/live-tickets`, { key });
}

describe("pages, files and the API reference", () => {
  it("/ leads to the console and /docs to the API reference", async () => {
    const root = await get("/");
    expect(root.status).toBe(302);
    expect(root.headers.get("location")).toBe("/console/");
    const docs = await get("/docs");
    expect(docs.status).toBe(302);
    expect(docs.headers.get("location")).toBe("/api/docs");
    const bare = await get("/console");
    expect(bare.status).toBe(301);
    expect(bare.headers.get("location")).toBe("/console/");
  });

  it("serves the console with the strict CSP and no inline script or style", async () => {
    const page = await get("/console/");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    expect(page.headers.get("content-security-policy")).toBe(CONSOLE_CSP);
    expect(CONSOLE_CSP).not.toMatch(/unsafe|https?:/);
    expect(page.headers.get("x-content-type-options")).toBe("nosniff");
    expect(page.headers.get("x-frame-options")).toBe("DENY");
    expect(page.headers.get("referrer-policy")).toBe("no-referrer");
    const html = await page.text();
    expect(inlineScripts(html)).toEqual([]);
    expect(html).not.toMatch(/<style|style=|https?:\/\//);
    expect(html).toContain('src="/console/console.js"');
    for (const file of ["/console/console.js", "/console/console.css", "/vendor/scalar-api-reference.js"]) {
      const r = await get(file);
      expect(r.status, file).toBe(200);
      expect(r.headers.get("content-security-policy"), file).toBe(CONSOLE_CSP);
      await r.arrayBuffer();
    }
    const missing = await get("/console/nope.js");
    expect(missing.status).toBe(404);
    expect(await missing.json()).toEqual({ error: "not found" });
  });

  it("/api/docs renders the live OpenAPI document with Scalar from this origin, its inline script allowed by hash", async () => {
    const r = await get("/api/docs");
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toMatch(/^text\/html/);
    const html = await r.text();
    expect(html).toContain('"url": "/api/openapi.json"');
    expect(html).toContain('<script src="/vendor/scalar-api-reference.js">');
    expect(html).not.toMatch(/cdn\.jsdelivr|fonts\.scalar|src="https?:/);
    const csp = must(r.headers.get("content-security-policy"), 'r.headers.get("content-security-policy")');
    const scripts = inlineScripts(html);
    expect(scripts).toHaveLength(1);
    expect(csp).toContain(`script-src 'self' ${await cspHash(scripts[0])}`);
    expect(csp).not.toMatch(/script-src[^;]*unsafe/);
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    // Listed in the OpenAPI document as a public HTML page.
    const doc = (await call("GET", "/api/openapi.json")).body;
    expect(doc.paths["/api/docs"].get.security).toEqual([]);
    expect(Object.keys(doc.paths["/api/docs"].get.responses["200"].content)).toEqual(["text/html"]);
  });

  it("computes CSP hashes as browsers do", async () => {
    expect(await cspHash("")).toBe("'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='");
    expect(inlineScripts('<script src="/a.js"></script><script type="text/javascript">x()</script>')).toEqual(["x()"]);
  });
});

describe("live tickets", () => {
  it("need a key that may read the route's transcripts, and a route that exists", async () => {
    const route = (await echoRoute()).name;
    expect((await call("POST", `/api/conversations/${route}/live-tickets`)).status).toBe(401);
    const tools = await mintKey({ scopes: ["tools:read"] });
    expect((await ticketFor(route, tools.key)).status).toBe(403);
    const reader = await mintKey({ scopes: ["conversations:read"] });
    const ok = await ticketFor(route, reader.key);
    expect(ok.status).toBe(201);
    expect(ok.body.data.ticket).toMatch(/^ctk-[A-Za-z0-9_-]{43}$/);
    expect(ok.body.data.socket_path).toBe(`/api/conversations/${route}/live`);
    expect(Date.parse(ok.body.data.expires_at) - Date.now()).toBeLessThanOrEqual(30_000);
    const missing = await ticketFor("no-such-route", reader.key);
    expect(missing.status).toBe(404);
  });

  it("a custom URL scope on one route opens that route's socket and no other's", async () => {
    const a = (await echoRoute()).name;
    const b = (await echoRoute()).name;
    const scope = uniq("only").toLowerCase();
    const made = await call("POST", "/api/auth/scopes", { key: await admin(), body: { scope_id: scope, url: `/api/conversations/${b}/**`, pattern: true } });
    expect(made.status).toBe(200);
    const narrow = await mintKey({ scopes: [scope] });
    expect((await ticketFor(b, narrow.key)).status).toBe(201);
    const refused = await ticketFor(a, narrow.key);
    expect(refused.status).toBe(403);
  });
});

describe("the live socket", () => {
  it("is a WebSocket upgrade only, with a ticket that works once", async () => {
    const route = (await echoRoute()).name;
    const plain = await get(`/api/conversations/${route}/live?ticket=x`);
    expect(plain.status).toBe(426);
    expect(((await plain.json()) as { error: string }).error).toBe("expected a WebSocket upgrade");
    const bogus = await get(`/api/conversations/${route}/live?ticket=ctk-${"a".repeat(43)}`, { upgrade: "websocket" });
    expect(bogus.status).toBe(401);
    expect(await bogus.json()).toEqual({ error: "live ticket is invalid, expired or already used" });
    const t = (await ticketFor(route, await admin())).body.data.ticket;
    const live = await openLive(route, t);
    await live.next((f) => f.type === "ready");
    live.ws.close(1000, "done");
    const again = await get(`/api/conversations/${route}/live?ticket=${t}`, { upgrade: "websocket" });
    expect(again.status).toBe(401);
    // A ticket is for its own route's hub only.
    const other = (await echoRoute()).name;
    const t2 = (await ticketFor(route, await admin())).body.data.ticket;
    expect((await get(`/api/conversations/${other}/live?ticket=${t2}`, { upgrade: "websocket" })).status).toBe(401);
  });

  it("refuses an expired ticket", async () => {
    const route = (await echoRoute()).name;
    const ticket = `ctk-${"b".repeat(43)}`;
    await consoleHubStub(env, route).keepTicket(await ticketHash(ticket), { user_id: "root", key_hash: "0".repeat(64), route_name: route }, Date.now() - 1);
    expect((await get(`/api/conversations/${route}/live?ticket=${ticket}`, { upgrade: "websocket" })).status).toBe(401);
  });

  it("hears a new message on its route as ids and a status, never its text", async () => {
    const route = (await echoRoute()).name;
    const t = (await ticketFor(route, await admin())).body.data.ticket;
    const live = await openLive(route, t);
    await live.next((f) => f.type === "ready");
    const secret = `words-${uniq("t")}`;
    const sent = await send(route, { external_user_id: "alice", text: secret });
    expect(sent.status).toBe(202);
    const frame = await live.next((f) => f.type === "notices" && f.notices.some((n: any) => n.thread_id === sent.body.data.thread_id));
    const notice = frame.notices.find((n: any) => n.thread_id === sent.body.data.thread_id);
    expect(notice).toMatchObject({ type: "thread", route_name: route, thread_id: sent.body.data.thread_id });
    expect(typeof notice.status).toBe("string");
    expect(Object.keys(notice).sort()).toEqual(["at", "route_name", "status", "thread_id", "type"]);
    expect(JSON.stringify(live.frames)).not.toContain(secret);
    // ping is answered without waking anyone; any other frame closes the socket.
    live.ws.send("ping");
    await live.next((f) => f === "pong");
    live.ws.close(1000, "done");
  }, 30_000);

  it("a route's socket hears nothing of another route", async () => {
    const watched = (await echoRoute()).name;
    const other = (await echoRoute()).name;
    const live = await openLive(watched, (await ticketFor(watched, await admin())).body.data.ticket);
    await live.next((f) => f.type === "ready");
    await send(other, { external_user_id: "bob", text: "elsewhere" });
    const mine = await send(watched, { external_user_id: "carol", text: "here" });
    await live.next((f) => f.type === "notices" && f.notices.some((n: any) => n.thread_id === mine.body.data.thread_id));
    const routes = live.frames.filter((f) => f.type === "notices").flatMap((f) => f.notices.map((n: any) => n.route_name));
    expect(new Set(routes)).toEqual(new Set([watched]));
    live.ws.close(1000, "done");
  }, 30_000);
});

describe("the live socket dies with its key", () => {
  const notices = (frames: any[]) => frames.filter((f) => f.type === "notices").length;

  it("a ticket minted before its key was revoked no longer opens the socket", async () => {
    const route = (await echoRoute()).name;
    const reader = await mintKey({ scopes: ["conversations:read"] });
    const t = (await ticketFor(route, reader.key)).body.data.ticket;
    expect((await call("DELETE", `/api/auth/api-keys/${reader.user_id}`, { key: await admin() })).status).toBe(200);
    expect((await get(`/api/conversations/${route}/live?ticket=${t}`, { upgrade: "websocket" })).status).toBe(401);
  });

  it("a ticket minted before its key lost the route no longer opens the socket", async () => {
    const route = (await echoRoute()).name;
    const reader = await mintKey({ scopes: ["conversations:read"] });
    const t = (await ticketFor(route, reader.key)).body.data.ticket;
    const narrowed = await call("PUT", `/api/auth/api-keys/${reader.user_id}`, { key: await admin(), body: { scopes: ["tools:read"] } });
    expect(narrowed.status).toBe(200);
    expect((await get(`/api/conversations/${route}/live?ticket=${t}`, { upgrade: "websocket" })).status).toBe(401);
  });

  it("an open socket gets nothing after its key is revoked, and is closed at the next push", async () => {
    const route = (await echoRoute()).name;
    const reader = await mintKey({ scopes: ["conversations:read"] });
    const live = await openLive(route, (await ticketFor(route, reader.key)).body.data.ticket);
    await live.next((f) => f.type === "ready");
    const first = await send(route, { external_user_id: "dana", text: "before" });
    await live.next((f) => f.type === "notices" && f.notices.some((n: any) => n.thread_id === first.body.data.thread_id));
    const heard = notices(live.frames);
    expect((await call("DELETE", `/api/auth/api-keys/${reader.user_id}`, { key: await admin() })).status).toBe(200);
    // The next push finds the key gone: the socket is closed without it.
    await consoleHubStub(env, route).notify([{ type: "thread", route_name: route, thread_id: "t-after", status: "queued", at: new Date().toISOString() }]);
    expect(await live.closed()).toBe(4003);
    expect(notices(live.frames)).toBe(heard);
    expect(JSON.stringify(live.frames)).not.toContain("t-after");
  }, 30_000);

  it("an open socket whose owner's key is disabled is closed at the next push", async () => {
    const route = (await echoRoute()).name;
    const owner = await mintKey({ scopes: ["conversations:read", "auth:write"] });
    const owned = await mintKey({ scopes: ["conversations:read"], owner_user_id: owner.user_id });
    const live = await openLive(route, (await ticketFor(route, owned.key)).body.data.ticket);
    await live.next((f) => f.type === "ready");
    expect((await call("PUT", `/api/auth/api-keys/${owner.user_id}`, { key: await admin(), body: { disabled: true } })).status).toBe(200);
    await consoleHubStub(env, route).notify([{ type: "thread", route_name: route, thread_id: "t-owner", status: "queued", at: new Date().toISOString() }]);
    expect(await live.closed()).toBe(4003);
    expect(notices(live.frames)).toBe(0);
  }, 30_000);
});

describe("the hub's sockets are bounded", () => {
  it("a key's next socket past SOCKETS_PER_KEY closes that key's oldest; the others stay open", async () => {
    const { name: route } = await echoRoute();
    const key = await admin();
    const sockets = [];
    for (let i = 0; i <= SOCKETS_PER_KEY; i++) {
      sockets.push(await openLive(route, (await ticketFor(route, key)).body.data.ticket));
      await sockets[i].next((f) => f.type === "ready");
    }
    expect(await sockets[0].closed()).toBe(SUPERSEDED_CODE);
    // The rest still hear the route.
    expect((await send(route, { external_user_id: "bob", text: "after the cap" })).status).toBe(202);
    for (const s of sockets.slice(1)) await s.next((f) => f.type === "notices");
  });

  it("a hub holding SOCKETS_PER_HUB sockets refuses the next socket with 429", async () => {
    const { name: route } = await echoRoute();
    const keys = await Promise.all(Array.from({ length: Math.ceil(SOCKETS_PER_HUB / SOCKETS_PER_KEY) + 1 }, () => mintKey({ scopes: ["conversations:read"] })));
    const hub = consoleHubStub(env, route);
    const kept = async (k: { key: string; user_id: string }) => {
      const ticket = mintTicket();
      await hub.keepTicket(await ticketHash(ticket), { user_id: k.user_id, key_hash: await sha256Hex(k.key), route_name: route }, Date.now() + 30_000);
      return ticket;
    };
    // Filled one key's worth at a time, side by side within a key's batch.
    for (let k = 0; k < SOCKETS_PER_HUB / SOCKETS_PER_KEY; k++) {
      await Promise.all(Array.from({ length: SOCKETS_PER_KEY }, async () => openLive(route, await kept(keys[k]))));
    }
    const last = keys[keys.length - 1];
    const ticket = await kept(last);
    const refused = await get(`/api/conversations/${route}/live?ticket=${ticket}`, { upgrade: "websocket" });
    expect(refused.status).toBe(429);
    expect(await refused.json()).toEqual({ error: "too many consoles watch this route; close one and try again", code: "too_many_consoles" });
    expect(refused.webSocket).toBeNull();
  });
});

describe("presence between consoles", () => {
  const presence = (frames: any[]) => frames.filter((f) => f?.type === "presence").flatMap((f) => f.presence);
  const say = (ws: WebSocket, thread_id: string, state: string) => ws.send(JSON.stringify({ type: "presence", thread_id, state }));

  it("fans a console's viewing and typing out to the other operators on the route, named by its key, and says when it leaves", async () => {
    const route = (await echoRoute()).name;
    const ana = await mintKey({ scopes: ["conversations:read"] });
    const sam = await mintKey({ scopes: ["conversations:read"] });
    const thread = `bridge:${route}:root/alice`;
    const a = await openLive(route, (await ticketFor(route, ana.key)).body.data.ticket);
    await a.next((f) => f.type === "ready");
    say(a.ws, thread, "viewing");
    // Sam opens later: the hub tells him at once who is on which thread.
    const s = await openLive(route, (await ticketFor(route, sam.key)).body.data.ticket);
    await s.next((f) => f.type === "ready");
    const snapshot = await s.next((f) => f.type === "presence");
    expect(snapshot.presence).toEqual([{ route_name: route, thread_id: thread, user_id: ana.user_id, state: "viewing", until: expect.any(String) }]);
    expect(Date.parse(snapshot.presence[0].until)).toBeGreaterThan(Date.now());
    say(s.ws, thread, "typing");
    const typing = await a.next((f) => f.type === "presence" && f.presence.some((p: any) => p.state === "typing"));
    expect(typing.presence).toEqual([{ route_name: route, thread_id: thread, user_id: sam.user_id, state: "typing", until: expect.any(String) }]);
    // Nobody hears themselves.
    expect(presence(a.frames).filter((p) => p.user_id === ana.user_id)).toEqual([]);
    expect(presence(s.frames).filter((p) => p.user_id === sam.user_id)).toEqual([]);
    // Sam's console goes: Ana hears he left the thread.
    s.ws.close(1000, "bye");
    await a.next((f) => f.type === "presence" && f.presence.some((p: any) => p.user_id === sam.user_id && p.state === "left"));
    a.ws.close(1000, "done");
  }, 30_000);

  it("a frame that is not a presence frame for this route closes the socket (1003)", async () => {
    const route = (await echoRoute()).name;
    const other = (await echoRoute()).name;
    for (const text of ["hello", JSON.stringify({ type: "presence", thread_id: `bridge:${other}:root/x`, state: "viewing" })]) {
      const live = await openLive(route, (await ticketFor(route, await admin())).body.data.ticket);
      await live.next((f) => f.type === "ready");
      live.ws.send(text);
      expect(await live.closed()).toBe(1003);
    }
  }, 30_000);

  it("drops a socket's frames past its budget", async () => {
    const route = (await echoRoute()).name;
    const ana = await mintKey({ scopes: ["conversations:read"] });
    const sam = await mintKey({ scopes: ["conversations:read"] });
    const a = await openLive(route, (await ticketFor(route, ana.key)).body.data.ticket);
    const s = await openLive(route, (await ticketFor(route, sam.key)).body.data.ticket);
    await a.next((f) => f.type === "ready");
    await s.next((f) => f.type === "ready");
    for (let i = 0; i < PRESENCE_FRAMES_PER_WINDOW + 10; i++) say(a.ws, `bridge:${route}:root/t${i}`, "viewing");
    // Each frame that passes is a checked push; on a busy machine they take a while, and the checks
    // of a flood finish in no set order, so which frames pass is not fixed: only how many.
    await s.next(() => presence(s.frames).length >= PRESENCE_FRAMES_PER_WINDOW, 30_000);
    // A frame sent after the flood and answered proves the hub went through all of it.
    say(s.ws, `bridge:${route}:root/done`, "viewing");
    await a.next((f) => f.type === "presence" && f.presence.some((p: any) => p.thread_id === `bridge:${route}:root/done`), 30_000);
    expect(presence(s.frames).length).toBe(PRESENCE_FRAMES_PER_WINDOW);
    a.ws.close(1000, "done");
    s.ws.close(1000, "done");
  }, 90_000);

  it("goes through the key check: a revoked console's presence reaches nobody, and a revoked listener is closed before it hears any", async () => {
    const route = (await echoRoute()).name;
    const [ana, sam, kim] = await Promise.all([1, 2, 3].map(() => mintKey({ scopes: ["conversations:read"] })));
    const open = async (k: { key: string }) => {
      const live = await openLive(route, (await ticketFor(route, k.key)).body.data.ticket);
      await live.next((f) => f.type === "ready");
      return live;
    };
    const a = await open(ana);
    const s = await open(sam);
    const k = await open(kim);
    expect((await call("DELETE", `/api/auth/api-keys/${sam.user_id}`, { key: await admin() })).status).toBe(200);
    // Sam speaks after his key went: his socket is closed, and nobody hears him.
    say(s.ws, `bridge:${route}:root/alice`, "typing");
    expect(await s.closed()).toBe(4003);
    expect((await call("DELETE", `/api/auth/api-keys/${kim.user_id}`, { key: await admin() })).status).toBe(200);
    // Ana speaks: Kim, whose key went, is closed without hearing it.
    say(a.ws, `bridge:${route}:root/bob`, "viewing");
    expect(await k.closed()).toBe(4003);
    expect(presence(k.frames)).toEqual([]);
    expect(presence(a.frames)).toEqual([]);
    a.ws.close(1000, "done");
  }, 30_000);
});

/**
 * The web channel's public doors (docs/channels.md "Web"): the page mints a cookie session, a
 * visitor's message becomes a turn on their own thread, the answer lands in the transcript and on
 * the live stream, and every refusal is the same whatever a stranger tries: a POST from another
 * origin, a session of another route, a forged or old token.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createRoute, echoKey } from "../helpers/bridge";
import { registry } from "../../src/platform/http/route";
import { BASE, admin, call, dispatch, fetchWithEnv, mintKey, uniq } from "../helpers/http";
import { eventually, rawRows } from "../helpers/threads";
import { listingCaughtUp } from "../helpers/listing";
import { PAIRING_REPLIES } from "../../src/persons/pairing";
import { declareTool, network } from "../operator/helpers";
import { must } from "../../src/platform/must";
import { ORIGIN, frameSocket } from "../helpers/web-visitor";

async function webRoute(extra: Record<string, unknown> = {}) {
  const k = await echoKey();
  const identity = uniq("desk").replace(/[^A-Za-z0-9_-]/g, "-");
  const r = await createRoute({
    door: "channel",
    channel: "web",
    our_identity: identity,
    target_kind: "tool",
    target_name: "echo",
    execution_key: k.user_id,
    ...extra,
  });
  return { ...r, identity };
}

/** Opens the chat page as a browser navigation; answers the session cookie (name=value). */
async function openPage(identity: string, query = "", cookie?: string) {
  const res = await dispatch(`${BASE}/api/channels/web/chat/${identity}${query}`, {
    headers: { "sec-fetch-mode": "navigate", ...(cookie ? { cookie } : {}) },
  });
  const set = res.headers.get("set-cookie") ?? "";
  return { res, html: await res.text(), set, cookie: set.split(";")[0] };
}

function post(path: string, body: unknown, headers: Record<string, string> = {}) {
  return call("POST", path, { body, headers: { origin: ORIGIN, ...headers } });
}

/** Opens the stream as a WebSocket and collects its frames. */
async function stream(identity: string, cookie: string, after = 0) {
  const s = await frameSocket(`${BASE}/api/channels/web/stream?identity=${identity}&after=${after}`, { origin: ORIGIN, cookie });
  expect(s.status).toBe(101);
  return { ws: must(s.ws, "the stream's socket"), frames: s.frames };
}

describe("the web chat page", () => {
  it("mints an HttpOnly session cookie on a navigation, refreshes it on the next, and serves a strict CSP", async () => {
    const r = await webRoute();
    const first = await openPage(r.identity);
    expect(first.res.status).toBe(200);
    expect(first.res.headers.get("content-type")).toContain("text/html");
    expect(first.res.headers.get("content-security-policy")).toContain("default-src 'none'");
    expect(first.res.headers.get("referrer-policy")).toBe("no-referrer");
    expect(first.set).toMatch(
      new RegExp(`^tai_web_${r.identity}=w_[A-Za-z0-9_-]{22}\\.[A-Za-z0-9_-]{43}; Path=/api/channels/web/; Max-Age=\\d+; HttpOnly; SameSite=Lax; Secure$`),
    );
    expect(first.html).toContain(`content="${r.identity}"`);
    const again = await openPage(r.identity, "", first.cookie);
    expect(again.cookie).toBe(first.cookie);
  });

  it("refuses a non-navigation and an unknown identity with small HTML pages", async () => {
    const r = await webRoute();
    const fetched = await dispatch(`${BASE}/api/channels/web/chat/${r.identity}`, { headers: { "sec-fetch-mode": "cors" } });
    expect(fetched.status).toBe(403);
    expect(fetched.headers.get("x-web-refusal")).toBe("not_a_navigation");
    expect(fetched.headers.get("set-cookie")).toBeNull();
    const unknown = await openPage("no-such-desk");
    expect(unknown.res.status).toBe(404);
    expect(unknown.res.headers.get("content-type")).toContain("text/html");
  });

  it("refuses link params over the spec's bounds instead of trimming them", async () => {
    const r = await webRoute();
    const long = await openPage(r.identity, `?topic=${"x".repeat(5000)}`);
    expect(long.res.status).toBe(400);
    expect(long.set).toBe("");
  });
});

describe("a visitor's message", () => {
  it("runs a turn on the visitor's own thread; the transcript streams the message and the answer, and a reconnect replays each once", async () => {
    const r = await webRoute();
    const { cookie } = await openPage(r.identity, "?topic=billing&tai_entry=ignored");
    const sent = await post("/api/channels/web/messages", { identity: r.identity, text: "hello web" }, { cookie });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const messageId = sent.body.data.message_id as string;
    const visitor = cookie.split("=")[1].split(".")[0];
    const threadId = `bridge:${r.name}:${visitor}`;
    const rows = await eventually(
      () => rawRows(threadId),
      (x) => x[0]?.status === "provisional" || x[0]?.status === "delivered",
    );
    const rec = JSON.parse(rows[0].record);
    expect(rec).toMatchObject({ message_id: messageId, channel: "web", client_address: visitor, our_identity: r.identity, answer: "hello web" });

    const live = await stream(r.identity, cookie);
    await eventually(
      async () => live.frames,
      (f) => f.some((x) => x.type === "ready"),
    );
    const entries = live.frames.filter((f) => f.type === "entry").map((f) => f.entry);
    expect(entries.map((e) => [e.role, e.text])).toEqual([
      ["visitor", "hello web"],
      ["bot", "hello web"],
    ]);
    expect(entries[1].seq).toBeGreaterThan(entries[0].seq);
    live.ws.close();

    // A second message while a page listens: its entries arrive live.
    const listening = await stream(r.identity, cookie, entries[1].seq);
    await post("/api/channels/web/messages", { identity: r.identity, text: "and again" }, { cookie });
    const more = await eventually(
      async () => listening.frames.filter((f) => f.type === "entry").map((f) => f.entry),
      (e) => e.length >= 2,
    );
    expect(more.map((e: any) => [e.role, e.text])).toEqual([
      ["visitor", "and again"],
      ["bot", "and again"],
    ]);
    listening.ws.close();
  });

  it("carries the page's link params (reserved ones stripped) into the turn", async () => {
    const r = await webRoute();
    const { cookie } = await openPage(r.identity, "?topic=billing&tai_pair=abc&tai_entry=x&tai_locale=de&tai_accent=%23003366");
    await post("/api/channels/web/messages", { identity: r.identity, text: "params?" }, { cookie });
    const visitor = cookie.split("=")[1].split(".")[0];
    const rows = await eventually(
      () => runInboundRows(`bridge:${r.name}:${visitor}`),
      (x) => x.length > 0,
    );
    expect(rows[0].params).toEqual({ topic: "billing" });
  });

  it("counts a retried client_message_id once", async () => {
    const r = await webRoute();
    const { cookie } = await openPage(r.identity);
    const a = await post("/api/channels/web/messages", { identity: r.identity, text: "once", client_message_id: "retry-0001" }, { cookie });
    const b = await post("/api/channels/web/messages", { identity: r.identity, text: "once", client_message_id: "retry-0001" }, { cookie });
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect(b.body.data.message_id).toBe(a.body.data.message_id);
  });
});

describe("refusals", () => {
  it("a POST without an Origin, or from another origin without a bearer, is 403 origin_mismatch whatever its body", async () => {
    const r = await webRoute();
    const { cookie } = await openPage(r.identity);
    for (const headers of [{ cookie }, { cookie, origin: "https://evil.example" }] as Record<string, string>[]) {
      for (const body of [{ identity: r.identity, text: "x" }, { nonsense: true }]) {
        const res = await call("POST", "/api/channels/web/messages", { body, headers });
        expect(res.status).toBe(403);
        expect(res.body.code).toBe("origin_mismatch");
      }
    }
  });

  it("a session of another route, a forged token and no cookie are refused alike", async () => {
    const a = await webRoute();
    const b = await webRoute();
    const { cookie } = await openPage(a.identity);
    const token = cookie.split("=")[1];
    const tries: Record<string, string>[] = [{ cookie: `tai_web_${b.identity}=${token}` }, { cookie: `tai_web_${a.identity}=${token.slice(0, -4)}AAAA` }, {}];
    const answers = [];
    for (const headers of tries) {
      const target = headers.cookie?.startsWith(`tai_web_${b.identity}`) ? b.identity : a.identity;
      const res = await post("/api/channels/web/messages", { identity: target, text: "x" }, headers);
      answers.push([res.status, res.body]);
    }
    expect(answers).toEqual(Array(3).fill([401, { error: expect.any(String), code: "session_missing" }]));
    expect(new Set(answers.map((x) => JSON.stringify(x))).size).toBe(1);
  });

  it("a new conversation ends the old session and opens a fresh address", async () => {
    const r = await webRoute();
    const { cookie } = await openPage(r.identity);
    const rotated = await post("/api/channels/web/session/rotate", { identity: r.identity }, { cookie });
    expect(rotated.status).toBe(200);
    const next = must(rotated.headers.get("set-cookie"), 'rotated.headers.get("set-cookie")').split(";")[0];
    expect(next).not.toBe(cookie);
    expect((await post("/api/channels/web/messages", { identity: r.identity, text: "old" }, { cookie })).status).toBe(401);
    expect((await post("/api/channels/web/messages", { identity: r.identity, text: "new" }, { cookie: next })).status).toBe(200);
  });

  it("unknown fields and over-long text are 400", async () => {
    const r = await webRoute();
    const { cookie } = await openPage(r.identity);
    expect((await post("/api/channels/web/messages", { identity: r.identity, text: "x", extra: 1 }, { cookie })).status).toBe(400);
    expect((await post("/api/channels/web/messages", { identity: r.identity, text: "x".repeat(8001) }, { cookie })).status).toBe(400);
  });

  it("a web route's identity must be a path segment", async () => {
    const k = await echoKey();
    const bad = await call("POST", `/api/conversations/${uniq("r").toLowerCase()}`, {
      key: await admin(),
      body: { door: "channel", channel: "web", our_identity: "has space", target_kind: "tool", target_name: "echo", execution_key: k.user_id },
    });
    expect(bad.status).toBe(400);
  });
});

/** The turn inputs a thread stored (the `inbound` column). */
async function runInboundRows(threadId: string): Promise<any[]> {
  const stub = env.THREADS.get(env.THREADS.idFromName(threadId));
  return runInDurableObject(stub, (_o, state) =>
    state.storage.sql
      .exec("SELECT inbound FROM records ORDER BY seq")
      .toArray()
      .map((r) => JSON.parse(String(r.inbound))),
  );
}

describe("an ask_user question on a web route", () => {
  it("reaches the page as chips; the visitor answers it through the questions door, and only their own", async () => {
    const k = await mintKey({ scopes: ["tool:ask_user"] });
    const identity = uniq("ask").replace(/[^A-Za-z0-9_-]/g, "-");
    const r = await createRoute({
      door: "channel",
      channel: "web",
      our_identity: identity,
      target_kind: "tool",
      target_name: "ask_user",
      execution_key: k.user_id,
      payload_expr: '{question: .message, options: [{text: "Approve", id: "approve"}, {text: "Reject", id: "reject"}]}',
      reply_expr: 'if .outcome == "answered" then "Decision: " + (.answer.option.text // .answer.text) else "none" end',
    });
    const { cookie } = await openPage(identity);
    expect((await post("/api/channels/web/messages", { identity, text: "Refund 40 EUR?" }, { cookie })).status).toBe(200);
    const live = await stream(identity, cookie);
    const asked = await eventually(
      async () => live.frames.filter((f) => f.type === "entry" && f.entry.role === "bot").map((f) => f.entry),
      (e) => e.length > 0,
    );
    expect(asked[0].text).toBe("Refund 40 EUR?");
    expect(asked[0].part.options.map((o: any) => o.text)).toEqual(["Approve", "Reject"]);
    // The listing row is written by the interaction's own alarm, a moment after the question.
    const key = await admin();
    const interaction = await eventually(
      async () => (await call("GET", "/api/interactions/pending", { key })).body.data.items.find((i: any) => i.origin.route_name === r.name),
      (i) => i !== undefined,
    );

    // Another visitor of the same route cannot answer it, and is told exactly what an unknown id gets.
    const other = await openPage(identity);
    const theirs = await post(`/api/channels/web/questions/${interaction.interaction_id}/answer`, { identity, option_id: "approve" }, { cookie: other.cookie });
    const unknown = await post(`/api/channels/web/questions/no-such-question/answer`, { identity, option_id: "approve" }, { cookie: other.cookie });
    expect(theirs.status).toBe(404);
    expect(theirs.body).toEqual(unknown.body);

    const answered = await post(`/api/channels/web/questions/${interaction.interaction_id}/answer`, { identity, option_id: "approve" }, { cookie });
    expect(answered.status, JSON.stringify(answered.body)).toBe(200);
    const decided = await eventually(
      async () => live.frames.filter((f) => f.type === "entry" && f.entry.role === "bot").map((f) => f.entry.text),
      (t) => t.includes("Decision: Approve"),
    );
    expect(decided).toContain("Decision: Approve");
    live.ws.close();
  });
});

describe("a notification to a web visitor", () => {
  it("lands in the visitor's transcript live, parsed as markdown for the page; an unknown visitor is refused and nothing is created", async () => {
    const r = await webRoute();
    const { cookie } = await openPage(r.identity);
    const visitor = cookie.split("=")[1].split(".")[0];
    const live = await stream(r.identity, cookie);
    const notify = (recipient: string) =>
      fetchWithEnv(
        { ...env, NOTIFICATIONS_FROM_WEB: r.identity },
        new Request(`${BASE}/api/notifications`, {
          method: "POST",
          headers: { "x-api-key": adminKey, "content-type": "application/json" },
          body: JSON.stringify({ message: "Your order **shipped**", channel: "web", recipient }),
        }),
      );
    const adminKey = await admin();
    const sent = await notify(visitor);
    expect(sent.status, await sent.clone().text()).toBe(200);
    const got = await eventually(
      async () => live.frames.filter((f) => f.type === "entry").map((f) => f.entry),
      (e) => e.length > 0,
    );
    // The page gets the text and its parse, so it renders the markdown without a parser of its own.
    expect(got[0]).toMatchObject({
      role: "bot",
      text: "Your order **shipped**",
      md: [
        {
          type: "paragraph",
          children: [
            { type: "text", text: "Your order " },
            { type: "strong", children: [{ type: "text", text: "shipped" }] },
          ],
        },
      ],
    });
    live.ws.close();
    const stranger = await notify("w_AAAAAAAAAAAAAAAAAAAAAA");
    expect(stranger.status).toBe(502);
  });
});

describe("a pairing link", () => {
  it("a pairing link's code, sent by the visitor as a message, links them to the person who asked for it on another door", async () => {
    const host = `webpair-${crypto.randomUUID().slice(0, 8)}.example`;
    const title = host.split(".")[0];
    await declareTool(title, `https://${host}/run`);
    const runs: any[] = [];
    network({ [host]: (kwargs) => (runs.push(kwargs), `tool saw ${kwargs.message}`) });
    const k = await mintKey({ scopes: [`tool:${title}`] });
    const api = await createRoute({ door: "api", target_kind: "tool", target_name: title, execution_key: k.user_id });
    const identity = uniq("pair").replace(/[^A-Za-z0-9_-]/g, "-");
    await createRoute({ door: "channel", channel: "web", our_identity: identity, target_kind: "tool", target_name: title, execution_key: k.user_id });
    const put = await call("PUT", `/api/conversation-configs/tool/${title}`, {
      key: await admin(),
      body: { target_kind: "tool", target_name: title, multichannel: true },
    });
    expect(put.status).toBe(200);
    await call("POST", `/api/conversations/${api.name}/messages`, { key: await admin(), body: { external_user_id: "ann", text: "hello", wait_seconds: 10 } });
    const link = await call("POST", `/api/conversations/${api.name}/messages`, {
      key: await admin(),
      body: { external_user_id: "ann", text: "/link", wait_seconds: 10 },
    });
    const code = must(String(link.body.data.answer).match(/LINK-[A-Z0-9]{8}/), "the match")[0];

    // The page door only opens the session; the page's script offers the code and the visitor's
    // "Link" sends it as their message (test/browser/webchat.browser.test.ts drives that script).
    const { cookie } = await openPage(identity, `?tai_pair=${code}`);
    expect((await post("/api/channels/web/messages", { identity, text: code }, { cookie })).status).toBe(200);
    const live = await stream(identity, cookie);
    const said = await eventually(
      async () => live.frames.filter((f) => f.type === "entry" && f.entry.role === "bot").map((f) => f.entry.text),
      (t) => t.length > 0,
    );
    expect(said[0]).toBe(PAIRING_REPLIES.linked);
    live.ws.close();
    // The visitor's next message reaches the tool as the linked person, both addresses in its payload.
    const visitor = cookie.split("=")[1].split(".")[0];
    await post("/api/channels/web/messages", { identity, text: "it is me" }, { cookie });
    const run = await eventually(
      async () => runs.find((r) => r.message === "it is me"),
      (r) => r !== undefined,
    );
    const person = await call("GET", `/api/conversations/persons/${run.turn.subject.person}`, { key: await admin() });
    expect(person.status, JSON.stringify({ run, body: person.body })).toBe(200);
    expect(person.body.data.addresses.map((a: any) => a.address).sort()).toEqual(["root/ann", visitor].sort());

    // Erasing the person ends the web visitor's session and page transcript with it.
    const watching = await stream(identity, cookie);
    await eventually(
      async () => watching.frames,
      (f) => f.some((x) => x.type === "ready"),
    );
    const erased = await call("DELETE", `/api/conversations/persons/${run.turn.subject.person}`, { key: await admin() });
    expect(erased.status, JSON.stringify(erased.body)).toBe(200);
    await eventually(
      async () => watching.frames,
      (f) => f.some((x) => x.type === "ended"),
    );
    expect((await post("/api/channels/web/messages", { identity, text: "still me?" }, { cookie })).status).toBe(401);
  });
});

describe("every visitor door in the route table", () => {
  // Generated from the one route table: a visitor door added later is held to the same rules.
  const visitorPosts = () => registry.filter((r) => r.method === "post" && r.path.startsWith("/api/channels/web/") && "public" in r.auth);
  // The upload door names its identity in the query (its body is the file).
  const concrete = (path: string, identity = "") =>
    path.replace("{interaction_id}", "some-question") + (path.endsWith("/attachments") ? `?identity=${identity}` : "");

  it("refuses a POST without a matching Origin with 403 before reading the body", async () => {
    const doors = visitorPosts();
    expect(doors.map((d) => d.path).sort()).toEqual([
      "/api/channels/web/attachments",
      "/api/channels/web/config",
      "/api/channels/web/feedback",
      "/api/channels/web/messages",
      "/api/channels/web/questions/{interaction_id}/answer",
      "/api/channels/web/session",
      "/api/channels/web/session/end",
      "/api/channels/web/session/merge",
      "/api/channels/web/session/rotate",
      "/api/channels/web/stop",
      "/api/channels/web/stream-ticket",
    ]);
    const r = await webRoute();
    const { cookie } = await openPage(r.identity);
    for (const d of doors) {
      for (const headers of [{ cookie }, { cookie, origin: "https://evil.example" }] as Record<string, string>[]) {
        const res = await call("POST", concrete(d.path, r.identity), { body: { identity: r.identity, text: "x" }, headers });
        expect([d.path, res.status, res.body.code]).toEqual([d.path, 403, "origin_mismatch"]);
      }
    }
  });

  it("answers a session of another route exactly like an unknown one", async () => {
    const a = await webRoute();
    const b = await webRoute();
    const { cookie } = await openPage(a.identity);
    const token = cookie.split("=")[1];
    for (const d of visitorPosts().filter((x) => x.path !== "/api/channels/web/session")) {
      const body = d.path.endsWith("/answer")
        ? { identity: b.identity, text: "x" }
        : d.path.endsWith("/messages")
          ? { identity: b.identity, text: "x" }
          : d.path.endsWith("/feedback")
            ? { identity: b.identity, message_id: "x", rating: "up" }
            : d.path.endsWith("/merge")
              ? { identity: b.identity, verified_token: "x" }
              : { identity: b.identity };
      const elsewhere = await call("POST", concrete(d.path, b.identity), { body, headers: { origin: ORIGIN, cookie: `tai_web_${b.identity}=${token}` } });
      const unknown = await call("POST", concrete(d.path, b.identity), {
        body,
        headers: { origin: ORIGIN, cookie: `tai_web_${b.identity}=w_${"A".repeat(22)}.${"B".repeat(43)}` },
      });
      expect([d.path, elsewhere.status, elsewhere.body]).toEqual([d.path, unknown.status, unknown.body]);
      expect(elsewhere.status).toBe(401);
    }
    const stream = await dispatch(`${BASE}/api/channels/web/stream?identity=${b.identity}`, {
      headers: { upgrade: "websocket", origin: ORIGIN, cookie: `tai_web_${b.identity}=${token}` },
    });
    expect(stream.status).toBe(401);
  });
});

describe("forgetting a web visitor's thread", () => {
  it("ends the session and the transcript: the open page is told, and the cookie no longer works", async () => {
    const r = await webRoute();
    const { cookie } = await openPage(r.identity);
    await post("/api/channels/web/messages", { identity: r.identity, text: "forget me" }, { cookie });
    const visitor = cookie.split("=")[1].split(".")[0];
    const threadId = `bridge:${r.name}:${visitor}`;
    await eventually(
      () => rawRows(threadId),
      (x) => x[0]?.status === "provisional" || x[0]?.status === "delivered",
    );
    const live = await stream(r.identity, cookie);
    const key = await admin();
    const forgot = await eventually(
      () => call("DELETE", `/api/conversations/${r.name}/thread?thread_id=${encodeURIComponent(threadId)}`, { key }),
      (res) => res.status === 200,
    );
    expect(forgot.status).toBe(200);
    await eventually(
      async () => live.frames,
      (f) => f.some((x) => x.type === "ended"),
    );
    expect((await post("/api/channels/web/messages", { identity: r.identity, text: "still here?" }, { cookie })).status).toBe(401);
  });
});

describe("the operator's view of web threads", () => {
  it("lists a visitor's thread on its route, with the web channel and the visitor's address, for the console", async () => {
    const r = await webRoute();
    const { cookie } = await openPage(r.identity);
    await post("/api/channels/web/messages", { identity: r.identity, text: "seen by the console?" }, { cookie });
    const visitor = cookie.split("=")[1].split(".")[0];
    const threadId = `bridge:${r.name}:${visitor}`;
    await eventually(
      () => rawRows(threadId),
      (x) => x[0]?.status === "provisional" || x[0]?.status === "delivered",
    );
    await listingCaughtUp(threadId);
    const key = await admin();
    const listed = await eventually(
      async () => (await call("GET", `/api/conversations/${r.name}/threads`, { key })).body.data?.items ?? [],
      (items: any[]) => items.some((t) => t.thread_id === threadId),
    );
    expect(listed.find((t: any) => t.thread_id === threadId)).toBeDefined();
    const transcript = await call("GET", `/api/conversations/${r.name}/transcript?thread_id=${encodeURIComponent(threadId)}`, { key });
    expect(transcript.body.data.items[0]).toMatchObject({ channel: "web", client_address: visitor, inbound_text: "seen by the console?" });
  });
});

describe("an ask-less form", () => {
  it("reaches the page as its schema, and the visitor's submission is a form message on the thread", async () => {
    const r = await webRoute({ initial_mode: "manual" });
    const { cookie } = await openPage(r.identity);
    await post("/api/channels/web/messages", { identity: r.identity, text: "I want a callback" }, { cookie });
    const visitor = cookie.split("=")[1].split(".")[0];
    const threadId = `bridge:${r.name}:${visitor}`;
    const schema = { type: "object", properties: { phone: { type: "string", title: "Phone" }, urgent: { type: "boolean" } }, required: ["phone"] };
    const sent = await call("POST", `/api/conversations/${r.name}/thread/messages`, {
      key: await admin(),
      body: { thread_id: threadId, text: "Leave your number", schema },
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const live = await stream(r.identity, cookie);
    const asked = await eventually(
      async () => live.frames.filter((f) => f.type === "entry" && f.entry.role === "operator").map((f) => f.entry),
      (e) => e.length > 0,
    );
    expect(asked[0]).toMatchObject({ text: "Leave your number", part: { schema } });
    const filled = await post("/api/channels/web/messages", { identity: r.identity, text: "", form: { phone: "+15550001111", urgent: true } }, { cookie });
    expect(filled.status, JSON.stringify(filled.body)).toBe(200);
    const shown = await eventually(
      async () => live.frames.filter((f) => f.type === "entry" && f.entry.role === "visitor" && f.entry.message_id === filled.body.data.message_id),
      (e) => e.length > 0,
    );
    expect(shown[0].entry).toMatchObject({ text: "phone: +15550001111\nurgent: true", part: { form: { phone: "+15550001111", urgent: true } } });
    const rows = await rawRows(threadId);
    expect(rows.map((x) => JSON.parse(x.record)).find((x) => x.message_id === filled.body.data.message_id)).toMatchObject({
      inbound_form: { phone: "+15550001111", urgent: true },
    });
    live.ws.close();
    // Neither text nor form: refused.
    expect((await post("/api/channels/web/messages", { identity: r.identity, text: " " }, { cookie })).status).toBe(400);
  });
});

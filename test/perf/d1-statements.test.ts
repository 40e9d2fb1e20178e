/**
 * D1 round trips and statements per path, pinned (issue 11: "a regression is caught by npm test,
 * not by a benchmark"). docs/performance.md, "Round trips per path", gives the same figures.
 *
 * Every path runs for real (Worker, address bucket, thread object, D1) with a wrapper on the `DB`
 * binding that records each `prepare(...).run/all/first/raw`, `batch([...])` and `exec`: a batch is
 * one round trip carrying N statements, and both are asserted. The Worker's side is counted by
 * calling the Worker's own fetch (src/index.ts) with a wrapped env; a thread object's side by
 * swapping that object's `env` (test/helpers/d1-count.ts). No production code is hooked.
 * Callbacks and provider sends are answered at the network edge (test/helpers/edge.ts).
 *
 * The numbers are exact on purpose: a change that adds a statement to a path fails here.
 * Issue 11 sets out to LOWER them (no synchronous D1 on the per-message path). When a change
 * removes round trips, update the expected figures below to the new, lower ones, and the table
 * in docs/performance.md with them. Never raise a figure without saying why in that table.
 */
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { apiThreadId, channelThreadId } from "../../src/bridge/thread-id";
import { createRoute, echoKey, echoRoute } from "../helpers/bridge";
import { TEST_ENV } from "../helpers/channels";
import { D1Counter, type SideCount, countThread, countedFetch } from "../helpers/d1-count";
import { fakeNetwork } from "../helpers/edge";
import { admin, uniq } from "../helpers/http";
import { eventually, makeDue, rawRows, runAlarm } from "../helpers/threads";

const HOOK = "https://hooks.example.com/perf";
/** The admin key's user_id (test/helpers/http.ts bootstraps it as "root"); api thread ids carry it. */
const CALLER = "root";

interface Expected {
  worker: SideCount;
  thread: SideCount;
}

/** Asserts `counter`'s figures for `path`, naming the path and listing every round trip on failure. */
function expectCounts(path: string, counter: D1Counter, want: Expected): void {
  const got = counter.summary();
  const expected = {
    worker: want.worker,
    thread: want.thread,
    roundTrips: want.worker.roundTrips + want.thread.roundTrips,
    statements: want.worker.statements + want.thread.statements,
  };
  expect(
    got,
    `D1 work on path "${path}" changed: expected ${expected.roundTrips} round trips / ${expected.statements} statements, ` +
      `measured ${got.roundTrips} / ${got.statements}. If it went down, lower the figures here and in docs/performance.md; ` +
      `if it went up, a statement was added to a per-message path (issue 11). Round trips seen:\n${counter.describe()}`,
  ).toEqual(expected);
}

const json = async (body: unknown) => ({ headers: { "content-type": "application/json", "x-api-key": await admin() }, body: JSON.stringify(body) });

/** Uncounted: the record's message_index row carries its expiry, so its terminal index write is done. */
async function terminalIndexed(messageId: string): Promise<void> {
  const read = () => env.DB.prepare("SELECT expires_at FROM message_index WHERE message_id = ?").bind(messageId).first<{ expires_at: number | null }>();
  const row = await eventually(read, (r) => r !== null && r.expires_at !== null, 250);
  expect(row?.expires_at, `message ${messageId} never reached its terminal index write`).not.toBeNull();
}

/** Uncounted: the thread's listing row says `status`. */
async function listedAs(threadId: string, status: string): Promise<void> {
  const read = () => env.DB.prepare("SELECT last_status FROM threads WHERE thread_id = ?").bind(threadId).first<{ last_status: string }>();
  const row = await eventually(read, (r) => r?.last_status === status, 250);
  expect(row?.last_status, `thread ${threadId} never listed as ${status}`).toBe(status);
}

/** Runs `fn` with thread `threadId`'s object counting into `counter`; waits for quiet, then restores its env. */
async function counting<T>(counter: D1Counter, threadId: string, fn: () => Promise<T>): Promise<T> {
  const restore = await countThread(counter, threadId);
  try {
    const out = await fn();
    await counter.quiet();
    return out;
  } finally {
    await restore();
  }
}

/** Answers provider sends with a provider id, callbacks with 204; anything else fails the fetch. */
function fakeEdge() {
  return fakeNetwork((req) => {
    const url = new URL(req.url);
    if (req.url === HOOK) return new Response(null, { status: 204 });
    if (url.host === "telegram.fake") return Response.json({ ok: true, result: { message_id: Math.floor(Math.random() * 1e6) } });
    throw new Error(`unexpected outbound request: ${req.method} ${req.url}`);
  });
}

/** The one telegram route of this file (the bot id is its identity, so there can be only one). */
let telegramRoute: string | null = null;
async function telegram(): Promise<string> {
  if (telegramRoute) return telegramRoute;
  const k = await echoKey();
  const r = await createRoute({ door: "channel", channel: "telegram", our_identity: TEST_ENV.telegramBotId, target_kind: "tool", target_name: "echo", execution_key: k.user_id });
  telegramRoute = r.name;
  return r.name;
}

let chats = 0;
const newChat = () => Number(String(Date.now()).slice(-7)) * 10 + (++chats % 10);

describe("D1 round trips per path (docs/performance.md, pinned; issue 11 lowers them)", () => {
  it("api door, answered inline: 2 round trips (the door's batch; the index at settle)", async () => {
    fakeEdge();
    const r = await echoRoute();
    const threadId = apiThreadId(r.name, CALLER, "inline");
    const counter = new D1Counter();
    const res = await counting(counter, threadId, async () => {
      const a = await countedFetch(counter, "POST", `/api/conversations/${r.name}/messages`, await json({ external_user_id: "inline", text: "hi", wait_seconds: 10 }));
      expect(a.status, a.text).toBe(200);
      await terminalIndexed(a.json.data.message_id);
      return a;
    });
    expect(res.json.data.thread_id).toBe(threadId);
    expectCounts("api door, answered inline", counter, {
      worker: { roundTrips: 1, statements: 2 }, // caller key ⋈ owner + route ⋈ execution key ⋈ owner
      thread: { roundTrips: 1, statements: 2 }, // index at settle: threads + message_index
    });
  });

  it("api door, 202, answer read by poll: 3 round trips (+ the index before the 202)", async () => {
    fakeEdge();
    const r = await echoRoute();
    const threadId = apiThreadId(r.name, CALLER, "poll");
    const counter = new D1Counter();
    await counting(counter, threadId, async () => {
      const a = await countedFetch(counter, "POST", `/api/conversations/${r.name}/messages`, await json({ external_user_id: "poll", text: "hi" }));
      expect(a.status, a.text).toBe(202);
      await terminalIndexed(a.json.data.message_id);
    });
    expectCounts("api door, 202, answer read by poll", counter, {
      worker: { roundTrips: 1, statements: 2 },
      thread: { roundTrips: 2, statements: 4 }, // index before the 202; index at settle
    });
  });

  it("api door, 202, callback 2xx at the first attempt: 5 round trips", async () => {
    const calls = fakeEdge();
    const r = await echoRoute({ callback_url: HOOK });
    const threadId = apiThreadId(r.name, CALLER, "cb");
    const counter = new D1Counter();
    await counting(counter, threadId, async () => {
      const a = await countedFetch(counter, "POST", `/api/conversations/${r.name}/messages`, await json({ external_user_id: "cb", text: "hi" }));
      expect(a.status, a.text).toBe(202);
      await terminalIndexed(a.json.data.message_id);
    });
    expect(calls.filter((c) => c.url === HOOK)).toHaveLength(1);
    expectCounts("api door, 202, callback answered 2xx at the first attempt", counter, {
      worker: { roundTrips: 1, statements: 2 },
      // index before the 202 (2); index at settle, pending_delivery (2); the delivery's route
      // re-read (1); the index when the delivery finishes (2)
      thread: { roundTrips: 4, statements: 7 },
    });
  });

  it("channel message, one-chunk text answer with a provider id, ended by the grace period: 11 round trips", async () => {
    const calls = fakeEdge();
    const route = await telegram();
    const chat = newChat();
    const threadId = channelThreadId(route, String(chat));
    const counter = new D1Counter();
    await counting(counter, threadId, async () => {
      const update = { update_id: chat, message: { message_id: 1, date: 1, chat: { id: chat, type: "private" }, from: { id: chat, is_bot: false, first_name: "A" }, text: "hi bot" } };
      const res = await countedFetch(counter, "POST", "/api/channels/telegram/inbound", {
        headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": TEST_ENV.telegramSecret },
        body: JSON.stringify(update),
      });
      expect(res.status, res.text).toBe(200);
      await listedAs(threadId, "provisional");
      await counter.quiet();
      // The grace period ends (no receipt came): the alarm completes it.
      await makeDue(threadId, "grace_until");
      await runAlarm(threadId);
      const [row] = await rawRows(threadId);
      expect(row.status).toBe("delivered");
      await terminalIndexed(row.message_id);
    });
    expect(calls.filter((c) => c.url.includes("telegram.fake"))).toHaveLength(1);
    expectCounts("channel message, one chunk, ended by grace", counter, {
      // the route by our identity (1); the dedupe claim: insert, then read back (2)
      worker: { roundTrips: 3, statements: 3 },
      // the index in accept (2); the turn's route read (1) and execution-key read (1: the key has
      // no owner); the index at settle (2); the delivery's route re-read (1); the
      // outbound_messages index (2); the index at provisional (2); the index when grace ends (2)
      thread: { roundTrips: 8, statements: 13 },
    });
  });

  it("event door, into an existing api thread, 202 read by poll: 10 round trips", async () => {
    fakeEdge();
    const r = await echoRoute();
    const threadId = apiThreadId(r.name, CALLER, "ev");
    // The door never creates a thread: make it exist first (not counted).
    const first = await countedFetch(new D1Counter(), "POST", `/api/conversations/${r.name}/messages`, await json({ external_user_id: "ev", text: "hi", wait_seconds: 10 }));
    expect(first.status, first.text).toBe(200);
    await terminalIndexed(first.json.data.message_id);

    const counter = new D1Counter();
    await counting(counter, threadId, async () => {
      const a = await countedFetch(counter, "POST", `/api/conversations/${r.name}/events`, await json({ address: "ev", event: { event_id: uniq("ev"), kind: "ping", payload: { n: 1 } } }));
      expect(a.status, a.text).toBe(202);
      expect(a.json.data.thread_id).toBe(threadId);
      await terminalIndexed(a.json.data.message_id);
    });
    expectCounts("event door, 202, read by poll", counter, {
      // caller key ⋈ owner (1); the route (1); the thread exists (1); the live claim (1); the
      // claim: insert, then read back (2)
      worker: { roundTrips: 6, statements: 6 },
      // the index before the 202 (2); the turn's route read (1) and execution-key read (1; no
      // snapshot is handed over); the index at settle (2)
      thread: { roundTrips: 4, statements: 6 },
    });
  });

  it("operator send, api route without a callback: 3 round trips", async () => {
    fakeEdge();
    const r = await echoRoute();
    const threadId = apiThreadId(r.name, CALLER, "op");
    const counter = new D1Counter();
    await counting(counter, threadId, async () => {
      const a = await countedFetch(counter, "POST", `/api/conversations/${r.name}/thread/messages`, await json({ thread_id: threadId, text: "from a person" }));
      expect(a.status, a.text).toBe(200);
      await terminalIndexed(a.json.data.message_id);
    });
    expectCounts("operator send, api route, poll", counter, {
      worker: { roundTrips: 2, statements: 2 }, // caller key ⋈ owner; the route
      thread: { roundTrips: 1, statements: 2 }, // the index of the delivered record
    });
  });

  it("operator send into a channel thread, one chunk, ended by the grace period: 7 round trips", async () => {
    const calls = fakeEdge();
    const route = await telegram();
    const threadId = channelThreadId(route, String(newChat()));
    const counter = new D1Counter();
    await counting(counter, threadId, async () => {
      const a = await countedFetch(counter, "POST", `/api/conversations/${route}/thread/messages`, await json({ thread_id: threadId, text: "from a person" }));
      expect(a.status, a.text).toBe(200);
      await listedAs(threadId, "provisional");
      await counter.quiet();
      await makeDue(threadId, "grace_until");
      await runAlarm(threadId);
      await terminalIndexed(a.json.data.message_id);
    });
    expect(calls.filter((c) => c.url.includes("telegram.fake"))).toHaveLength(1);
    expectCounts("operator send, channel thread, ended by grace", counter, {
      worker: { roundTrips: 2, statements: 2 }, // caller key ⋈ owner; the route
      // the index in accept (2); the delivery's route re-read (1); the outbound_messages index
      // (2); the index at provisional (2); the index when grace ends (2)
      thread: { roundTrips: 5, statements: 9 },
    });
  });
});

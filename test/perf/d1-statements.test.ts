/**
 * D1 round trips and statements per path, pinned so that a regression is caught by npm test, not
 * by a benchmark. docs/performance.md, "Round trips per path", gives the same figures.
 *
 * Every path runs for real (Worker, address bucket, thread object, IndexShards, D1) with a wrapper
 * on the `DB` binding that records each `prepare(...).run/all/first/raw`, `batch([...])` and
 * `exec`: a batch is one round trip carrying N statements, and both are asserted. The Worker's side
 * is counted by calling the Worker's own fetch (src/index.ts) with a wrapped env; a thread object's
 * side by swapping that object's `env` (test/helpers/d1-count.ts). No production code is hooked.
 * Callbacks and provider sends are answered at the network edge (test/helpers/network.ts).
 *
 * The per-message path makes no D1 statement in steady state: the caller's key and the route (with
 * its execution key) come from isolate caches validated against access epochs
 * (src/platform/epochs), and the turn and the first delivery attempt reuse the door's read. Each
 * path below first sends one uncounted message on the same route (the caches' first read of a
 * route is a D1 round trip), then counts the next one. The last tests prove the other half of the
 * design: a key revoked or narrowed, or a route changed, between two messages is seen by the second.
 * The admin listings reach D1 from the IndexShards, in batches; a test pins that batching.
 * Every turn here is traced (its trace kept in its thread object, its summary row pushed with
 * the listing), so these figures also pin that tracing adds no D1 statement to a turn.
 * The numbers are exact on purpose: a change that adds a statement to a path fails here. Never
 * raise a figure without saying why in docs/performance.md.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { apiThreadId, channelThreadId } from "../../src/shared/thread-id";
import { createRoute, echoKey, echoRoute, send } from "../helpers/bridge";
import { fakeNetwork } from "../helpers/network";
import { TEST_ENV } from "../helpers/webhooks";
import { D1Counter, type SideCount, countShards, countThread, countedFetch } from "../helpers/d1-count";
import { admin, call, mintKey, uniq } from "../helpers/http";
import { listingCaughtUp, outboxRows } from "../helpers/listing";
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
      `if it went up, a statement was added to a per-message path. Round trips seen:\n${counter.describe()}`,
  ).toEqual(expected);
  const periodic = counter.periodic();
  expect(periodic.seen, `more settings checks than the refresh interval allows on "${path}":\n${counter.describe()}`).toBeLessThanOrEqual(periodic.allowed);
}

const json = async (body: unknown) => ({ headers: { "content-type": "application/json", "x-api-key": await admin() }, body: JSON.stringify(body) });

/** Uncounted: the record reached a terminal status and the thread pushed its listing. */
async function terminalIndexed(threadId: string, messageId: string): Promise<void> {
  const rows = await eventually(
    () => rawRows(threadId),
    (rs) => rs.some((r) => r.message_id === messageId && r.expires_at !== null),
    250,
  );
  expect(rows.find((r) => r.message_id === messageId)?.expires_at, `message ${messageId} never became terminal`).not.toBeNull();
  await listingCaughtUp(threadId);
}

/** Uncounted: the thread's listing row says `status`. */
async function listedAs(threadId: string, status: string): Promise<void> {
  const read = async () => {
    await listingCaughtUp(threadId);
    return env.DB.prepare("SELECT last_status FROM threads WHERE thread_id = ?").bind(threadId).first<{ last_status: string }>();
  };
  const row = await eventually(read, (r) => r?.last_status === status, 100);
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
  const r = await createRoute({
    door: "channel",
    channel: "telegram",
    our_identity: TEST_ENV.telegramBotId,
    target_kind: "tool",
    target_name: "echo",
    execution_key: k.user_id,
  });
  telegramRoute = r.name;
  return r.name;
}

/** One uncounted message on api route `routeName` (another thread): the caches hold the route after it. */
async function warmApi(routeName: string): Promise<void> {
  const ext = uniq("warm");
  const a = await countedFetch(
    new D1Counter(),
    "POST",
    `/api/conversations/${routeName}/messages`,
    await json({ external_user_id: ext, text: "warm", wait_seconds: 10 }),
  );
  expect(a.status, a.text).toBe(200);
  await terminalIndexed(apiThreadId(routeName, CALLER, ext), a.json.data.message_id);
}

/** One uncounted telegram message from a chat of its own: the identity cache holds the route after it. Answers its thread. */
async function warmTelegram(): Promise<string> {
  const chat = newChat();
  const update = {
    update_id: chat,
    message: { message_id: 1, date: 1, chat: { id: chat, type: "private" }, from: { id: chat, is_bot: false, first_name: "W" }, text: "warm" },
  };
  const res = await countedFetch(new D1Counter(), "POST", "/api/channels/telegram/inbound", {
    headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": TEST_ENV.telegramSecret },
    body: JSON.stringify(update),
  });
  expect(res.status, res.text).toBe(200);
  const threadId = channelThreadId(await telegram(), String(chat));
  await listedAs(threadId, "provisional");
  return threadId;
}

let chats = 0;
const newChat = () => Number(String(Date.now()).slice(-7)) * 10 + (++chats % 10);

describe("D1 round trips per path (docs/performance.md, pinned: no D1 write on the per-message path)", () => {
  it("api door, answered inline: 0 round trips", async () => {
    fakeEdge();
    const r = await echoRoute();
    await warmApi(r.name);
    const threadId = apiThreadId(r.name, CALLER, "inline");
    const counter = new D1Counter();
    const res = await counting(counter, threadId, async () => {
      const a = await countedFetch(
        counter,
        "POST",
        `/api/conversations/${r.name}/messages`,
        await json({ external_user_id: "inline", text: "hi", wait_seconds: 10 }),
      );
      expect(a.status, a.text).toBe(200);
      await terminalIndexed(threadId, a.json.data.message_id);
      return a;
    });
    expect(res.json.data.thread_id).toBe(threadId);
    expectCounts("api door, answered inline", counter, {
      worker: { roundTrips: 0, statements: 0 }, // the caller's key and the route come from the isolate caches
      thread: { roundTrips: 0, statements: 0 }, // the turn runs on the door's read; the listing is pushed to a shard
    });
  });

  it("api door, 202, answer read by poll: 0 round trips", async () => {
    fakeEdge();
    const r = await echoRoute();
    await warmApi(r.name);
    const threadId = apiThreadId(r.name, CALLER, "poll");
    const counter = new D1Counter();
    await counting(counter, threadId, async () => {
      const a = await countedFetch(counter, "POST", `/api/conversations/${r.name}/messages`, await json({ external_user_id: "poll", text: "hi" }));
      expect(a.status, a.text).toBe(202);
      await terminalIndexed(threadId, a.json.data.message_id);
    });
    expectCounts("api door, 202, answer read by poll", counter, {
      worker: { roundTrips: 0, statements: 0 },
      thread: { roundTrips: 0, statements: 0 }, // the read door finds the record in the message directory (a shard)
    });
  });

  it("api door, answered inline out of hours with a handoff note: 0 round trips", async () => {
    fakeEdge();
    const r = await echoRoute();
    // A week with no hours is never open: every message is out of hours.
    const hours = { time_zone: "UTC", weekly: {}, agent_out_of_hours: "handoff_note" };
    const put = await call("PUT", `/api/conversations/${r.name}/hours`, { key: await admin(), body: hours });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    await warmApi(r.name);
    const threadId = apiThreadId(r.name, CALLER, "after-hours");
    const counter = new D1Counter();
    await counting(counter, threadId, async () => {
      const a = await countedFetch(
        counter,
        "POST",
        `/api/conversations/${r.name}/messages`,
        await json({ external_user_id: "after-hours", text: "hi", wait_seconds: 10 }),
      );
      expect(a.status, a.text).toBe(200);
      await terminalIndexed(threadId, a.json.data.message_id);
    });
    const notes = (await rawRows(threadId)).map((row) => JSON.parse(String(row.record))).filter((rec) => rec.submitted_by === "inbox");
    expect(notes.map((n) => n.answer)).toEqual(["We are away right now. A person will be back as soon as possible."]);
    expectCounts("api door, answered inline out of hours with a handoff note", counter, {
      worker: { roundTrips: 0, statements: 0 }, // the route's hours ride in its cached read
      thread: { roundTrips: 0, statements: 0 }, // the turn reads the hours from the door's read; the note goes through the thread's own intake
    });
  });

  it("api door, 202, callback 2xx at the first attempt: 0 round trips", async () => {
    const calls = fakeEdge();
    const r = await echoRoute({ callback_url: HOOK });
    await warmApi(r.name);
    const threadId = apiThreadId(r.name, CALLER, "cb");
    const counter = new D1Counter();
    await counting(counter, threadId, async () => {
      const a = await countedFetch(counter, "POST", `/api/conversations/${r.name}/messages`, await json({ external_user_id: "cb", text: "hi" }));
      expect(a.status, a.text).toBe(202);
      await terminalIndexed(threadId, a.json.data.message_id);
    });
    expect(calls.filter((c) => c.url === HOOK)).toHaveLength(1);
    expectCounts("api door, 202, callback answered 2xx at the first attempt", counter, {
      worker: { roundTrips: 0, statements: 0 },
      // the first delivery attempt signs with the route the door read moments ago (route-reads rule 3)
      thread: { roundTrips: 0, statements: 0 },
    });
  });

  it("channel message, one-chunk text answer with a provider id, ended by the grace period: 0 round trips", async () => {
    const calls = fakeEdge();
    const route = await telegram();
    await warmTelegram();
    calls.length = 0;
    const chat = newChat();
    const threadId = channelThreadId(route, String(chat));
    const counter = new D1Counter();
    await counting(counter, threadId, async () => {
      const update = {
        update_id: chat,
        message: { message_id: 1, date: 1, chat: { id: chat, type: "private" }, from: { id: chat, is_bot: false, first_name: "A" }, text: "hi bot" },
      };
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
      await terminalIndexed(threadId, row.message_id);
    });
    expect(calls.filter((c) => c.url.includes("telegram.fake"))).toHaveLength(1);
    expectCounts("channel message, one chunk, ended by grace", counter, {
      // the route by our identity comes from the isolate cache; the dedupe claim is a shard's
      worker: { roundTrips: 0, statements: 0 },
      // the turn and the first send run on the door's read; outbound ids go to a shard's ledger
      thread: { roundTrips: 0, statements: 0 },
    });
  });

  it("event door, into an existing api thread, 202 read by poll: 0 round trips", async () => {
    fakeEdge();
    const r = await echoRoute();
    const threadId = apiThreadId(r.name, CALLER, "ev");
    // The door never creates a thread: make it exist first (not counted).
    const first = await countedFetch(
      new D1Counter(),
      "POST",
      `/api/conversations/${r.name}/messages`,
      await json({ external_user_id: "ev", text: "hi", wait_seconds: 10 }),
    );
    expect(first.status, first.text).toBe(200);
    await terminalIndexed(threadId, first.json.data.message_id);

    const counter = new D1Counter();
    await counting(counter, threadId, async () => {
      const a = await countedFetch(
        counter,
        "POST",
        `/api/conversations/${r.name}/events`,
        await json({ address: "ev", event: { event_id: uniq("ev"), kind: "ping", payload: { n: 1 } } }),
      );
      expect(a.status, a.text).toBe(202);
      expect(a.json.data.thread_id).toBe(threadId);
      await terminalIndexed(threadId, a.json.data.message_id);
    });
    expectCounts("event door, 202, read by poll", counter, {
      // the key and the route from the isolate caches (the thread's first message read the route);
      // the thread's existence is its object's answer and the dedupe claim a shard's
      worker: { roundTrips: 0, statements: 0 },
      thread: { roundTrips: 0, statements: 0 },
    });
  });

  it("operator send, api route without a callback: 0 round trips", async () => {
    fakeEdge();
    const r = await echoRoute();
    await warmApi(r.name);
    const threadId = apiThreadId(r.name, CALLER, "op");
    const counter = new D1Counter();
    await counting(counter, threadId, async () => {
      const a = await countedFetch(counter, "POST", `/api/conversations/${r.name}/thread/messages`, await json({ thread_id: threadId, text: "from a person" }));
      expect(a.status, a.text).toBe(200);
      await terminalIndexed(threadId, a.json.data.message_id);
    });
    expectCounts("operator send, api route, poll", counter, {
      worker: { roundTrips: 0, statements: 0 }, // the caller's key and the route from the isolate caches
      thread: { roundTrips: 0, statements: 0 },
    });
  });

  it("operator send into a channel thread, one chunk, ended by the grace period: 0 round trips", async () => {
    const calls = fakeEdge();
    const route = await telegram();
    // The operator door reads the route by name (the channel door by identity): warm that cache.
    const warmThread = await warmTelegram();
    const telegramSends = () => calls.filter((c) => c.url.includes("telegram.fake")).length;
    const before = telegramSends();
    const warm = await countedFetch(
      new D1Counter(),
      "POST",
      `/api/conversations/${route}/thread/messages`,
      await json({ thread_id: warmThread, text: "warm" }),
    );
    expect(warm.status, warm.text).toBe(200);
    // The warm send's delivery runs after its 200: wait for it to reach the provider, so it is not
    // counted as this path's send.
    expect(
      await eventually(
        async () => telegramSends(),
        (n) => n > before,
        100,
      ),
    ).toBeGreaterThan(before);
    calls.length = 0;
    const threadId = channelThreadId(route, String(newChat()));
    const counter = new D1Counter();
    await counting(counter, threadId, async () => {
      const a = await countedFetch(counter, "POST", `/api/conversations/${route}/thread/messages`, await json({ thread_id: threadId, text: "from a person" }));
      expect(a.status, a.text).toBe(200);
      await listedAs(threadId, "provisional");
      await counter.quiet();
      await makeDue(threadId, "grace_until");
      await runAlarm(threadId);
      await terminalIndexed(threadId, a.json.data.message_id);
    });
    expect(calls.filter((c) => c.url.includes("telegram.fake"))).toHaveLength(1);
    expectCounts("operator send, channel thread, ended by grace", counter, {
      worker: { roundTrips: 0, statements: 0 }, // the caller's key and the route from the isolate caches
      // the send runs on the door's route read
      thread: { roundTrips: 0, statements: 0 },
    });
  });
  it("the listing reaches D1 in batches: under load one batch per index_flush_batch settled turns", async () => {
    fakeEdge();
    const r = await echoRoute({ turns_per_hour_override: 1000 });
    // Warm: the route's threads exist and are flushed, so only the turns below are counted.
    const users = Array.from({ length: 4 }, (_, i) => `load-${i}`);
    const threads = users.map((u) => apiThreadId(r.name, CALLER, u));
    for (const u of users)
      expect(
        (
          await countedFetch(
            new D1Counter(),
            "POST",
            `/api/conversations/${r.name}/messages`,
            await json({ external_user_id: u, text: "warm", wait_seconds: 10 }),
          )
        ).status,
      ).toBe(200);
    await listingCaughtUp(...threads);

    // The lag is long, so only a full batch flushes: 4 threads × 10 turns = 40 settled turns.
    const counter = new D1Counter();
    const restore = await countShards(counter, { CONVERSATIONS_INDEX_FLUSH_BATCH: "10", CONVERSATIONS_INDEX_FLUSH_LAG_SECONDS: "60" });
    try {
      for (let round = 0; round < 10; round++) {
        const answers = await Promise.all(
          users.map(async (u) =>
            countedFetch(
              new D1Counter(),
              "POST",
              `/api/conversations/${r.name}/messages`,
              await json({ external_user_id: u, text: `turn ${round}`, wait_seconds: 10 }),
            ),
          ),
        );
        for (const a of answers) expect(a.status, a.text).toBe(200);
      }
      for (const t of threads)
        await eventually(
          () => outboxRows(t),
          (n) => n === 0,
        );
      await counter.quiet();
      // Each thread's shard saw 10 settled turns: at most one batch each (fewer where threads
      // share a shard, whose batches then carry several rows), never one per turn.
      const flushes = counter.calls.filter((c) => c.side === "shard");
      expect(
        flushes.every((c) => c.kind === "batch"),
        counter.describe(),
      ).toBe(true);
      expect(flushes.length, counter.describe()).toBeGreaterThan(0);
      expect(flushes.length, counter.describe()).toBeLessThanOrEqual(40 / 10);
      // The turns' run summaries ride those same batches, all of a batch's in one
      // statement (never a statement or a round trip per turn; the paths above pin that a traced
      // turn makes no D1 statement on the thread's side).
      const runUpserts = flushes.map((c) => c.sql.filter((q) => q.startsWith("INSERT OR REPLACE INTO runs")).length);
      expect(
        runUpserts.reduce((a, b) => a + b, 0),
        counter.describe(),
      ).toBeGreaterThan(0);
      expect(Math.max(...runUpserts), counter.describe()).toBe(1);
    } finally {
      await restore();
    }
    await listingCaughtUp(...threads);
    const rows = await env.DB.prepare("SELECT message_count FROM threads WHERE route_name = ?").bind(r.name).all<{ message_count: number }>();
    expect(rows.results.map((x) => x.message_count)).toEqual(Array(4).fill(11));
    // Every turn was traced: 4 warm-up turns and 40 counted ones, each with its summary row.
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM runs WHERE route_name = ? AND kind = 'turn' AND outcome = 'ok'").bind(r.name).first("n")).toBe(44);
  });
});

describe("revocation through the caches (decisions §2: the next request sees the change)", { timeout: 30_000 }, () => {
  const adminCall = async (method: string, path: string, body?: unknown) => call(method, path, { key: await admin(), body });

  /** An api route to echo and a caller key allowed to post to it; the first message of each warms the caches. */
  async function warmCaller(scopes = ["conversations"]) {
    fakeEdge();
    const r = await echoRoute();
    const caller = await mintKey({ scopes });
    const first = await send(r.name, { external_user_id: "x", text: "one", wait_seconds: 10 }, caller.key);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    return { r, caller };
  }

  it("a key revoked between two messages is refused on the second", async () => {
    const { r, caller } = await warmCaller();
    expect((await adminCall("DELETE", `/api/auth/api-keys/${caller.user_id}`)).status).toBe(200);
    expect((await send(r.name, { external_user_id: "x", text: "two" }, caller.key)).status).toBe(401);
  });

  it("a key disabled, then narrowed, between messages is refused on the next", async () => {
    const { r, caller } = await warmCaller(["conversations", "tool:echo"]);
    expect((await adminCall("PUT", `/api/auth/api-keys/${caller.user_id}`, { disabled: true })).status).toBe(200);
    expect((await send(r.name, { external_user_id: "x", text: "two" }, caller.key)).status).toBe(401);
    expect((await adminCall("PUT", `/api/auth/api-keys/${caller.user_id}`, { disabled: false })).status).toBe(200);
    expect((await send(r.name, { external_user_id: "x", text: "three", wait_seconds: 10 }, caller.key)).status).toBe(200);
    expect((await adminCall("POST", `/api/auth/api-keys/${caller.user_id}/scopes`, { remove: ["conversations"] })).status).toBe(200);
    expect((await send(r.name, { external_user_id: "x", text: "four" }, caller.key)).status).toBe(403);
  });

  it("an owner disabled between two messages takes its keys with it", async () => {
    fakeEdge();
    const r = await echoRoute();
    const owner = await mintKey({ scopes: ["conversations"] });
    const owned = await mintKey({ scopes: ["conversations"], owner_user_id: owner.user_id });
    expect((await send(r.name, { external_user_id: "x", text: "one", wait_seconds: 10 }, owned.key)).status).toBe(200);
    expect((await adminCall("PUT", `/api/auth/api-keys/${owner.user_id}`, { disabled: true })).status).toBe(200);
    expect((await send(r.name, { external_user_id: "x", text: "two" }, owned.key)).status).toBe(401);
  });

  it("a role narrowed between two messages bounds its holder on the second", async () => {
    fakeEdge();
    const r = await echoRoute();
    const role = uniq("role").toLowerCase();
    const made = await adminCall("POST", "/api/auth/roles", { name: role, grants: { conversations: "write" } });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const caller = await mintKey({ scopes: ["conversations"] });
    expect((await adminCall("PUT", `/api/auth/api-keys/${caller.user_id}`, { role })).status).toBe(200);
    expect((await send(r.name, { external_user_id: "x", text: "one", wait_seconds: 10 }, caller.key)).status).toBe(200);
    const narrowed = await adminCall("PUT", `/api/auth/roles/${role}`, { grants: { conversations: "read" } });
    expect(narrowed.status, JSON.stringify(narrowed.body)).toBe(200);
    expect((await send(r.name, { external_user_id: "x", text: "two" }, caller.key)).status).toBe(403);
  });

  it("a route deleted, then re-posted as another door, between messages is seen by the next", async () => {
    const { r, caller } = await warmCaller();
    expect((await adminCall("DELETE", `/api/conversations/${r.name}`)).status).toBe(200);
    expect((await send(r.name, { external_user_id: "x", text: "two" }, caller.key)).status).toBe(404);
    const k = await echoKey();
    const again = await createRoute(
      { door: "channel", channel: "slack", our_identity: uniq("T"), target_kind: "tool", target_name: "echo", execution_key: k.user_id },
      r.name,
    );
    expect(again.created).toBe(true);
    expect((await send(r.name, { external_user_id: "x", text: "three" }, caller.key)).status).toBe(400);
  });

  it("an execution key revoked between two messages: the second turn does not run as it", async () => {
    const { r, caller } = await warmCaller();
    expect((await adminCall("DELETE", `/api/auth/api-keys/${r.key.user_id}`)).status).toBe(200);
    const second = await send(r.name, { external_user_id: "x", text: "two", wait_seconds: 10 }, caller.key);
    expect(second.status, JSON.stringify(second.body)).toBe(200);
    expect(second.body.data.status).toBe("error");
    expect(JSON.stringify(second.body.data.answer ?? null)).not.toContain("two");
  });
});

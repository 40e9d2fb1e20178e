/**
 * What one message asks of the objects' own storage, pinned so that a statement added to a turn
 * fails here rather than in a benchmark. docs/performance.md, "Statements per message in the
 * objects", gives the same figures and what each one is.
 *
 * Each path runs for real (Worker, address bucket, thread object, IndexShards, D1) with the thread
 * object's and the rate bucket's `ctx.storage` wrapped by a counter (test/helpers/storage-count.ts):
 * every SQLite statement, key-value call, alarm call and `sync` is recorded, from the door's
 * hand-over until the object has been quiet for a while (the listing push included). Each path is
 * measured twice: the thread's first message (a new thread, a new bucket) and its next one, the
 * steady state. The numbers are exact on purpose: lower them when a statement goes, and never raise
 * one without saying why in docs/performance.md.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { apiThreadId, channelThreadId } from "../../src/shared/thread-id";
import { addressBucketStub } from "../../src/conversations/door/bucket-rpc";
import { createRoute, echoKey, echoRoute } from "../helpers/bridge";
import { fakeNetwork } from "../helpers/network";
import { TEST_ENV } from "../helpers/webhooks";
import { admin, call } from "../helpers/http";
import { outboxRows } from "../helpers/listing";
import { StorageCounter } from "../helpers/storage-count";
import { runInDurableObject } from "cloudflare:test";
import { makeDue, rawRows, stubFor } from "../helpers/threads";

const HOOK = "https://hooks.example.com/thread-statements";
/** The admin key's user_id (test/helpers/http.ts bootstraps it as "root"): api thread ids and buckets carry it. */
const CALLER = "root";

/** One object's figures for one message. */
interface Figures {
  /** SQLite statements (`sql.exec`). */
  statements: number;
  /** Key-value calls (`get`, `put`, `delete`, `deleteAll`). */
  kv: number;
  /** Alarm calls (`getAlarm`, `setAlarm`, `deleteAlarm`). */
  alarm: number;
  /** `sync` calls (a wait for the commit). */
  sync: number;
}

function figures(c: StorageCounter): Figures {
  return {
    statements: c.statements,
    kv: c.count("get") + c.count("put") + c.count("delete") + c.count("deleteAll"),
    alarm: c.count("getAlarm") + c.count("setAlarm") + c.count("deleteAlarm"),
    sync: c.count("sync"),
  };
}

interface Measured {
  thread: Figures;
  bucket: Figures;
  describe: string;
}

/**
 * Counts thread `threadId`'s object and bucket `bucketKey`'s object while `send` runs and until
 * both are quiet, then runs `after` uncounted; `settle` (counted) is work the test drives after the
 * answer, such as the alarm that ends a grace period.
 */
async function measure(threadId: string, bucketKey: string, send: () => Promise<void>, settle?: (thread: StorageCounter) => Promise<void>): Promise<Measured> {
  const thread = new StorageCounter();
  const bucket = new StorageCounter();
  const restoreThread = await thread.attach(stubFor(threadId));
  const restoreBucket = await bucket.attach(addressBucketStub(env, bucketKey) as unknown as DurableObjectStub);
  try {
    await send();
    await thread.quiet();
    if (settle) {
      await settle(thread);
      await thread.quiet();
    }
    await bucket.quiet(50);
  } finally {
    await restoreThread();
    await restoreBucket();
  }
  return {
    thread: figures(thread),
    bucket: figures(bucket),
    describe: `thread:\n${thread.describe()}\nbucket:\n${bucket.describe()}`,
  };
}

/** Uncounted: every record of the thread is terminal and its outbox was pushed. */
async function allSettled(threadId: string, count: number): Promise<void> {
  const rows = await rawRows(threadId);
  expect(rows).toHaveLength(count);
  expect(rows.every((r) => r.expires_at !== null && ["delivered", "silent"].includes(r.status))).toBe(true);
  expect(await outboxRows(threadId)).toBe(0);
}

function expectFigures(path: string, got: Measured, want: { thread: Figures; bucket: Figures }): void {
  expect(
    { thread: got.thread, bucket: got.bucket },
    `storage work on path "${path}" changed. If it went down, lower the figures here and in docs/performance.md; ` +
      `if it went up, a statement was added to a message's path. Calls seen:\n${got.describe}`,
  ).toEqual(want);
}

const headers = async () => ({ "content-type": "application/json", "x-api-key": await admin() });

async function post(path: string, body: unknown, expected: number, extra: Record<string, string> = {}): Promise<void> {
  const r = await call("POST", path, { headers: { ...(await headers()), ...extra }, rawBody: JSON.stringify(body) });
  expect(r.status, JSON.stringify(r.body)).toBe(expected);
}

/** Answers provider sends with a provider id and callbacks with 204; anything else fails the fetch. */
function fakeEdge() {
  return fakeNetwork((req) => {
    const url = new URL(req.url);
    if (req.url === HOOK) return new Response(null, { status: 204 });
    if (url.host === "telegram.fake") return Response.json({ ok: true, result: { message_id: Math.floor(Math.random() * 1e6) } });
    throw new Error(`unexpected outbound request: ${req.method} ${req.url}`);
  });
}

describe("storage work per message in the thread object and the rate bucket (docs/performance.md, pinned)", () => {
  it("api door, answered inline", async () => {
    fakeEdge();
    const r = await echoRoute();
    const threadId = apiThreadId(r.name, CALLER, "inline");
    const bucketKey = `api:${r.name}:${CALLER}`;
    const send = () => post(`/api/conversations/${r.name}/messages`, { external_user_id: "inline", text: "hi", wait_seconds: 10 }, 200);
    const first = await measure(threadId, bucketKey, send);
    await allSettled(threadId, 1);
    const next = await measure(threadId, bucketKey, send);
    await allSettled(threadId, 2);
    expectFigures("api door, answered inline, first message", first, {
      thread: { statements: 22, kv: 0, alarm: 2, sync: 0 },
      bucket: { statements: 0, kv: 1, alarm: 1, sync: 0 },
    });
    expectFigures("api door, answered inline, next message", next, {
      // accept: the insert and its outbox note; the turn: running, settled, its trace, its note;
      // the listing push: the outbox rows, the listing row, their drop
      thread: { statements: 9, kv: 0, alarm: 0, sync: 0 },
      bucket: { statements: 0, kv: 0, alarm: 0, sync: 0 },
    });
  });

  it("api door, 202, answer delivered by callback", async () => {
    const calls = fakeEdge();
    const r = await echoRoute({ callback_url: HOOK });
    const threadId = apiThreadId(r.name, CALLER, "cb");
    const bucketKey = `api:${r.name}:${CALLER}`;
    const send = () => post(`/api/conversations/${r.name}/messages`, { external_user_id: "cb", text: "hi" }, 202);
    const first = await measure(threadId, bucketKey, send);
    await allSettled(threadId, 1);
    const next = await measure(threadId, bucketKey, send);
    await allSettled(threadId, 2);
    expect(calls.filter((c) => c.url === HOOK)).toHaveLength(2);
    expectFigures("api door, 202, callback, first message", first, {
      thread: { statements: 25, kv: 0, alarm: 2, sync: 0 },
      bucket: { statements: 0, kv: 1, alarm: 1, sync: 0 },
    });
    expectFigures("api door, 202, callback, next message", next, {
      // as inline, and the delivery: its claim, delivered, its note
      thread: { statements: 12, kv: 0, alarm: 0, sync: 0 },
      bucket: { statements: 0, kv: 0, alarm: 0, sync: 0 },
    });
  });

  it("api door, 202, callback, with an Idempotency-Key", async () => {
    const calls = fakeEdge();
    const r = await echoRoute({ callback_url: HOOK });
    const threadId = apiThreadId(r.name, CALLER, "keyed");
    const bucketKey = `api:${r.name}:${CALLER}`;
    let n = 0;
    const send = () => post(`/api/conversations/${r.name}/messages`, { external_user_id: "keyed", text: `hi ${n}` }, 202, { "idempotency-key": `k-${++n}` });
    const first = await measure(threadId, bucketKey, send);
    await allSettled(threadId, 1);
    const next = await measure(threadId, bucketKey, send);
    await allSettled(threadId, 2);
    expect(calls.filter((c) => c.url === HOOK)).toHaveLength(2);
    expectFigures("api door, 202, callback, keyed, first message", first, {
      // as without a key, and the key: its look-up and its insert
      thread: { statements: 27, kv: 0, alarm: 2, sync: 0 },
      bucket: { statements: 0, kv: 1, alarm: 1, sync: 0 },
    });
    expectFigures("api door, 202, callback, keyed, next message", next, {
      thread: { statements: 14, kv: 0, alarm: 0, sync: 0 },
      bucket: { statements: 0, kv: 0, alarm: 0, sync: 0 },
    });
  });

  it("channel message, one-chunk answer, ended by the grace period", async () => {
    const calls = fakeEdge();
    const k = await echoKey();
    const route = await createRoute({
      door: "channel",
      channel: "telegram",
      our_identity: TEST_ENV.telegramBotId,
      target_kind: "tool",
      target_name: "echo",
      execution_key: k.user_id,
    });
    const chat = Number(String(Date.now()).slice(-7)) * 10 + 7;
    const threadId = channelThreadId(route.name, String(chat));
    const bucketKey = `channel:${route.name}:${chat}`;
    let update = chat * 10;
    const send = async () => {
      update++;
      const body = {
        update_id: update,
        message: { message_id: update, date: 1, chat: { id: chat, type: "private" }, from: { id: chat, is_bot: false, first_name: "A" }, text: "hi bot" },
      };
      const r = await call("POST", "/api/channels/telegram/inbound", {
        headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": TEST_ENV.telegramSecret },
        rawBody: JSON.stringify(body),
      });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    };
    // The grace period ends without a receipt: the alarm completes the delivery.
    const grace = async (thread: StorageCounter) => {
      await thread.uncounted(async () => {
        const rows = await rawRows(threadId);
        expect(rows.at(-1)?.status).toBe("provisional");
        await makeDue(threadId, "grace_until");
      });
      // The object's own alarm handler, called as the runtime would (the runtime's own alarm
      // bookkeeping is not the object's work).
      await runInDurableObject(stubFor(threadId), (obj) => (obj as unknown as { alarm(): Promise<void> }).alarm());
    };
    const first = await measure(threadId, bucketKey, send, grace);
    await allSettled(threadId, 1);
    const next = await measure(threadId, bucketKey, send, grace);
    await allSettled(threadId, 2);
    expect(calls.filter((c) => c.url.includes("telegram.fake"))).toHaveLength(2);
    expectFigures("channel message, ended by grace, first message", first, {
      thread: { statements: 37, kv: 0, alarm: 3, sync: 0 },
      bucket: { statements: 0, kv: 1, alarm: 1, sync: 0 },
    });
    expectFigures("channel message, ended by grace, next message", next, {
      // as inline, and the delivery: its claim, the chunk sent, provisional, its note; the grace's
      // alarm: the re-read of the instants (3), the record, delivered, its note, the web
      // transcript's earliest expiry, the memory purge's look-up; and a second listing push (3)
      thread: { statements: 24, kv: 0, alarm: 1, sync: 0 },
      bucket: { statements: 0, kv: 0, alarm: 0, sync: 0 },
    });
  });
});

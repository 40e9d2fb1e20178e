/**
 * The IndexShard objects (src/shards/rpc.ts): the ledger's claim and expiry rules, the
 * listing buffer's coalescing, batching, lag and failure handling, and thread forget. Driven
 * through the shard's own RPC verbs against real D1, plus the thread outbox's retry.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import { type ListingRow, SHARD_COUNT, ledgerIndex, messageKey, placementHash, shardIndex } from "../../src/shards/rpc";
import type { Env } from "../../src/platform/env";
import { createRoute, echoKey, send } from "../helpers/bridge";
import { listingCaughtUp, outboxRows } from "../helpers/listing";
import { uniq } from "../helpers/http";
import { eventually, runAlarm, stubFor } from "../helpers/threads";
import { must } from "../../src/platform/must";

afterEach(() => vi.restoreAllMocks());

/** A fresh shard of its own for one test (not one the service places anything on). */
function isolatedShard() {
  return env.INDEX_SHARDS.get(env.INDEX_SHARDS.idFromName(uniq("test-shard")));
}

function row(routeName: string, threadId: string, over: Partial<ListingRow> = {}): ListingRow {
  return {
    route_name: routeName,
    thread_id: threadId,
    client_address: "a",
    last_activity_at: new Date().toISOString(),
    message_count: 1,
    last_status: "delivered",
    live_until: null,
    ...over,
  };
}

async function listed(threadId: string) {
  return env.DB.prepare("SELECT message_count, last_status, live_until FROM threads WHERE thread_id = ?")
    .bind(threadId)
    .first<{ message_count: number; last_status: string; live_until: number | null }>();
}

/** Runs `fn` with the shard's env overridden by `vars` (its flush policy) and, if given, its DB. */
async function withShardEnv(shard: DurableObjectStub, over: Partial<Record<string, unknown>>): Promise<() => Promise<void>> {
  let original: Env | null = null;
  await runInDurableObject(shard, (obj) => {
    const o = obj as unknown as { env: Env };
    original = o.env;
    o.env = { ...o.env, ...over } as Env;
  });
  return () => runInDurableObject(shard, (obj) => void ((obj as unknown as { env: Env }).env = must(original, "original")));
}

describe("placement", () => {
  it("is stable and spreads keys over every shard", () => {
    expect(placementHash("message\u0000abc")).toBe(placementHash("message\u0000abc"));
    const used = new Set(Array.from({ length: 2000 }, (_, i) => ledgerIndex(messageKey(`${i}-${crypto.randomUUID()}`))));
    expect(used.size).toBe(SHARD_COUNT);
    expect(shardIndex("x")).toBeLessThan(SHARD_COUNT);
  });
});

describe("the ledger", () => {
  it("claims once: a live claim holds, an expired one is replaced, a release frees only its own", async () => {
    const shard = isolatedShard();
    const k = { namespace: "channel:test", key: uniq("pm") };
    const now = Date.now();
    const first = { message_id: "m-1", thread_id: "t-1", route_name: null };
    expect(await shard.claim(k, first, now + 60_000, now)).toEqual(first);
    expect(await shard.claim(k, { ...first, message_id: "m-2" }, now + 60_000, now)).toEqual(first);
    await shard.release(k, "m-2"); // not the holder: nothing happens
    expect(await shard.find(k, now)).toEqual(first);
    // Past its expiry the claim reads as absent and the next claim takes the key.
    expect(await shard.find(k, now + 60_001)).toBeNull();
    expect(await shard.claim(k, { ...first, message_id: "m-3" }, now + 120_000, now + 60_001)).toMatchObject({ message_id: "m-3" });
    await shard.release(k, "m-3");
    expect(await shard.find(k, now)).toBeNull();
  });

  it("put replaces, drop removes, forgetThread removes every entry of the thread; the alarm reclaims expired rows", async () => {
    const shard = isolatedShard();
    const now = Date.now();
    const a = messageKey(uniq("a"));
    const b = messageKey(uniq("b"));
    const c = { namespace: "outbound:telegram", key: uniq("c") };
    await shard.put(a, { message_id: a.key, thread_id: "t-x", route_name: "r" }, null);
    await shard.put(b, { message_id: b.key, thread_id: "t-x", route_name: "r" }, null);
    // Long enough that a slow machine cannot let the real alarm reclaim c before the checks below.
    await shard.put(c, { message_id: "m", thread_id: "t-y", route_name: "r" }, now + 1500);
    await shard.drop([a]);
    expect(await shard.find(a, now)).toBeNull();
    await shard.forgetThread("t-x");
    expect(await shard.find(b, now)).toBeNull();
    expect(await shard.find(c, now)).not.toBeNull();
    await new Promise((r) => setTimeout(r, Math.max(0, now + 1520 - Date.now())));
    await runDurableObjectAlarm(shard);
    const left = await runInDurableObject(shard, (_o, state) => state.storage.sql.exec("SELECT COUNT(*) AS n FROM ledger").one().n);
    expect(left).toBe(0);
  });
});

describe("the listing buffer", () => {
  it("coalesces a thread's pushes (the latest row wins) and flushes a full batch at once", async () => {
    const k = await echoKey();
    const route = await createRoute({ door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id });
    const shard = isolatedShard();
    const restore = await withShardEnv(shard, { CONVERSATIONS_INDEX_FLUSH_BATCH: "10", CONVERSATIONS_INDEX_FLUSH_LAG_SECONDS: "60" });
    try {
      const t1 = `bridge:${route.name}:root/one`;
      const t2 = `bridge:${route.name}:root/two`;
      for (let i = 1; i <= 4; i++) await shard.push({ thread_id: t1, row: row(route.name, t1, { message_count: i }), failed: [], updates: 1 });
      await shard.push({ thread_id: t2, row: row(route.name, t2), failed: [], updates: 1 });
      // Five settled turns: below the batch, within the lag: nothing in D1 yet, two rows buffered.
      expect(await listed(t1)).toBeNull();
      expect(await shard.pending()).toBe(2);
      // The tenth settled turn fills the batch: the shard writes at once.
      await shard.push({ thread_id: t1, row: row(route.name, t1, { message_count: 9, last_status: "failed" }), failed: [], updates: 5 });
      await eventually(
        () => shard.pending(),
        (n) => n === 0,
      );
      expect(await listed(t1)).toEqual({ message_count: 9, last_status: "failed", live_until: null });
      expect(await listed(t2)).toMatchObject({ message_count: 1 });
    } finally {
      await restore();
    }
  });

  it("flushes after the lag when no batch fills, by the alarm", async () => {
    const k = await echoKey();
    const route = await createRoute({ door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id });
    const shard = isolatedShard();
    const restore = await withShardEnv(shard, { CONVERSATIONS_INDEX_FLUSH_LAG_SECONDS: "0.05" });
    try {
      const t = `bridge:${route.name}:root/lagged`;
      await shard.push({
        thread_id: t,
        row: row(route.name, t),
        failed: [{ message_id: uniq("f"), route_name: route.name, thread_id: t, failed_at: new Date().toISOString(), expires_at: Date.now() + 60_000 }],
        updates: 1,
      });
      expect(await shard.pending()).toBe(2);
      await new Promise((r) => setTimeout(r, 60));
      await runDurableObjectAlarm(shard);
      expect(await shard.pending()).toBe(0);
      expect(await listed(t)).not.toBeNull();
      expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM failed_records WHERE thread_id = ?").bind(t).first("n")).toBe(1);
      // A thread whose records are all gone pushes a null row: the listing drops it.
      await shard.push({ thread_id: t, row: null, failed: [], updates: 0 });
      await shard.flush();
      expect(await listed(t)).toBeNull();
    } finally {
      await restore();
    }
  });

  it("keeps everything when D1 fails and writes it on the retry", async () => {
    const k = await echoKey();
    const route = await createRoute({ door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id });
    const shard = isolatedShard();
    const error = vi.spyOn(console, "error").mockImplementation(() => undefined);
    const down = { batch: async () => Promise.reject(new Error("D1 is down")), prepare: (q: string) => env.DB.prepare(q) };
    const restore = await withShardEnv(shard, { DB: down, CONVERSATIONS_INDEX_FLUSH_BATCH: "10" });
    const t = `bridge:${route.name}:root/retry`;
    try {
      await shard.push({ thread_id: t, row: row(route.name, t), failed: [], updates: 10 });
      await eventually(
        async () => error.mock.calls.length,
        (n) => n > 0,
      );
      expect(String(error.mock.calls[0][0])).toContain("flushing the listing to D1 failed");
      expect(await shard.pending()).toBe(1);
    } finally {
      await restore();
    }
    // D1 is back: the retry (here run at once) writes what was kept.
    await runDurableObjectAlarm(shard);
    await shard.flush();
    expect(await shard.pending()).toBe(0);
    expect(await listed(t)).not.toBeNull();
  });
});

describe("the thread outbox", () => {
  it("keeps its rows when the shard cannot be reached, and the thread's alarm pushes them later", async () => {
    const k = await echoKey();
    const route = await createRoute({ door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id });
    const first = await send(route.name, { external_user_id: "outbox", text: "one", wait_seconds: 10 });
    const threadId = first.body.data.thread_id as string;
    await listingCaughtUp(threadId);
    const error = vi.spyOn(console, "error").mockImplementation(() => undefined);
    // Cut this thread off from its listing shard.
    let original: Env | null = null;
    const unreachable = {
      idFromName: (n: string) => env.INDEX_SHARDS.idFromName(n),
      get: () => ({ push: async () => Promise.reject(new Error("shard unreachable")) }),
    };
    await runInDurableObject(stubFor(threadId), (obj) => {
      const o = obj as unknown as { env: Env };
      original = o.env;
      o.env = { ...o.env, INDEX_SHARDS: unreachable } as unknown as Env;
    });
    await send(route.name, { external_user_id: "outbox", text: "two", wait_seconds: 10 });
    await eventually(
      async () => error.mock.calls.length,
      (n) => n > 0,
    );
    expect(String(error.mock.calls[0][0])).toContain("thread index push failed");
    expect(await outboxRows(threadId)).toBeGreaterThan(0);
    const retryAt = await runInDurableObject(stubFor(threadId), (_o, state) =>
      Number(state.storage.sql.exec("SELECT value FROM meta WHERE key = 'outbox_retry_at'").one().value),
    );
    expect(retryAt).toBeGreaterThan(Date.now());
    // The shard is reachable again, and both the retry and the rows' grace are due: the alarm
    // pushes and clears the marker.
    await runInDurableObject(stubFor(threadId), (obj, state) => {
      (obj as unknown as { env: Env }).env = must(original, "original");
      state.storage.sql.exec("UPDATE meta SET value = '1' WHERE key = 'outbox_retry_at'");
      state.storage.sql.exec("UPDATE index_outbox SET noted_at = 1");
    });
    await runAlarm(threadId);
    expect(await outboxRows(threadId)).toBe(0);
    await listingCaughtUp(threadId);
    expect(await listed(threadId)).toMatchObject({ message_count: 2 });
    expect(
      await runInDurableObject(
        stubFor(threadId),
        (_o, state) => state.storage.sql.exec("SELECT COUNT(*) AS n FROM meta WHERE key = 'outbox_retry_at'").one().n,
      ),
    ).toBe(0);
  });
});

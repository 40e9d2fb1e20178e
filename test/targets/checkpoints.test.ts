import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Env } from "../../src/platform/env";
import { checkpointStoreFor } from "../../src/targets/checkpoints";
import { appendCheckpoint, checkpointAlarmDue, purgeExpiredCheckpoint, readCheckpoint } from "../../src/targets/checkpoints/thread-memory";
import { sweepCheckpoints } from "../../src/targets/checkpoints/sweep";
import type { CheckpointMessage } from "../../src/shared/agent-memory";
import { admin, call, mintKey, uniq } from "../helpers/http";
import { callWith, settingsOf } from "./helpers";
import { must } from "../../src/platform/must";

const user = (content: string): CheckpointMessage => ({ role: "user", content });
const assistant = (content: string): CheckpointMessage => ({ role: "assistant", content });
const toolCallTurn: CheckpointMessage[] = [
  { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "echo", arguments: "{}" } }] },
  { role: "tool", content: '"ok"', tool_call_id: "c1", name: "echo" },
];

const stub = (threadId: string) => env.THREADS.get(env.THREADS.idFromName(threadId));

describe.each(["kv", "d1", "memory"] as const)("the %s provider", (provider) => {
  it("reads [] for a new thread, appends in order (every message shape round-trips) and deletes", async () => {
    const store = checkpointStoreFor(env, settingsOf({ LLM_PROVIDER_CHECKPOINT: provider }));
    const t = uniq(`cp-${provider}`);
    expect(await store.read(t)).toEqual([]);
    await store.append(t, [user("one"), assistant("two")]);
    await store.append(t, toolCallTurn);
    await store.append(t, []);
    expect(await store.read(t)).toEqual([user("one"), assistant("two"), ...toolCallTurn]);
    // Threads are separate.
    const other = uniq(`cp-${provider}`);
    await store.append(other, [user("elsewhere")]);
    expect(await store.read(other)).toEqual([user("elsewhere")]);
    await store.delete(t);
    expect(await store.read(t)).toEqual([]);
    expect(await store.read(other)).toEqual([user("elsewhere")]);
    await store.delete(uniq("never-written"));
  });
});

describe("kv provider: Durable Object storage with a native idle TTL", () => {
  it("stores expires_at = write time + TTL and arms the alarm no later than that", async () => {
    const store = checkpointStoreFor(env, settingsOf({ LLM_PROVIDER_CHECKPOINT_TTL_MINUTES: "1" }));
    const t = uniq("kv-ttl");
    const before = Date.now();
    await store.append(t, [user("hi")]);
    const after = Date.now();
    const { expires, alarm } = await runInDurableObject(stub(t), async (_o, state) => ({
      expires: state.storage.sql.exec<{ expires_at: number }>("SELECT expires_at FROM checkpoint_threads WHERE thread_id = ?", t).one().expires_at,
      alarm: await state.storage.getAlarm(),
    }));
    expect(expires).toBeGreaterThanOrEqual(before + 60_000);
    expect(expires).toBeLessThanOrEqual(after + 60_000);
    expect(alarm).not.toBeNull();
    expect(must(alarm, "alarm")).toBeLessThanOrEqual(expires);
  });

  it("treats a passed expires_at as gone on read", async () => {
    const store = checkpointStoreFor(env, settingsOf({ LLM_PROVIDER_CHECKPOINT_TTL_MINUTES: "5" }));
    const t = uniq("kv-expired");
    await store.append(t, [user("old")]);
    await runInDurableObject(stub(t), async (_o, state) => {
      state.storage.sql.exec("UPDATE checkpoint_threads SET expires_at = ? WHERE thread_id = ?", Date.now() - 1, t);
    });
    expect(await store.read(t)).toEqual([]);
    // A later write starts afresh rather than resurrecting the expired memory.
    await store.append(t, [user("new")]);
    expect(await store.read(t)).toEqual([user("new")]);
  });

  it("refreshes the TTL on every write (driven by an injected clock)", async () => {
    const t = uniq("kv-refresh");
    await runInDurableObject(stub(t), async (_o, state) => {
      const s = state.storage;
      const mem = { storage: s, threadId: t };
      appendCheckpoint(mem, [user("a")], { nowMs: 1_000, ttlMinutes: 1 });
      appendCheckpoint(mem, [assistant("b")], { nowMs: 50_000, ttlMinutes: 1 });
      expect(readCheckpoint(mem, 100_000)).toEqual([user("a"), assistant("b")]);
      expect(checkpointAlarmDue(s)).toBe(110_000);
      expect(readCheckpoint(mem, 110_000)).toEqual([]);
      expect(checkpointAlarmDue(s)).toBeNull();
    });
  });

  it("keeps memory forever when no TTL is set", async () => {
    const t = uniq("kv-forever");
    await runInDurableObject(stub(t), async (_o, state) => {
      const mem = { storage: state.storage, threadId: t };
      appendCheckpoint(mem, [user("a")], { nowMs: 0, ttlMinutes: null });
      expect(checkpointAlarmDue(state.storage)).toBeNull();
      expect(readCheckpoint(mem, Number.MAX_SAFE_INTEGER)).toEqual([user("a")]);
      expect(purgeExpiredCheckpoint(state.storage, Number.MAX_SAFE_INTEGER)).toBe(0);
    });
  });

  it("is purged by the thread object's alarm once expired", async () => {
    const store = checkpointStoreFor(env, settingsOf({ LLM_PROVIDER_CHECKPOINT_TTL_MINUTES: "1" }));
    const t = uniq("kv-alarm");
    await store.append(t, [user("to be purged")]);
    await runInDurableObject(stub(t), async (_o, state) => {
      state.storage.sql.exec("UPDATE checkpoint_threads SET expires_at = ? WHERE thread_id = ?", Date.now() - 1, t);
    });
    expect(await runDurableObjectAlarm(stub(t))).toBe(true);
    const left = await runInDurableObject(stub(t), async (_o, state) => ({
      messages: state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM checkpoint_messages").one().n,
      threads: state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM checkpoint_threads").one().n,
    }));
    expect(left).toEqual({ messages: 0, threads: 0 });
  });

  it("uses the calling object's own storage without RPC when it is that thread's object", async () => {
    const t = uniq("kv-local");
    await runInDurableObject(stub(t), async (_o, state) => {
      const local = { storage: state.storage, threadId: t, armAlarm: async () => undefined };
      const store = checkpointStoreFor(env as Env, settingsOf(), { local });
      await store.append(t, [user("local write")]);
      expect(await store.read(t)).toEqual([user("local write")]);
    });
    // The same rows are what the RPC path reads from outside.
    expect(await checkpointStoreFor(env, settingsOf()).read(t)).toEqual([user("local write")]);
  });
});

describe("memory provider: per isolate, idle TTL on access", () => {
  it("expires a thread idle past the TTL and refreshes on each write", async () => {
    let clock = Date.parse("2026-01-01T00:00:00Z");
    const store = checkpointStoreFor(env, settingsOf({ LLM_PROVIDER_CHECKPOINT: "memory", LLM_PROVIDER_CHECKPOINT_TTL_MINUTES: "1" }), {
      now: () => new Date(clock),
    });
    const t = uniq("mem-ttl");
    await store.append(t, [user("a")]);
    clock += 59_000;
    await store.append(t, [assistant("b")]);
    clock += 59_000; // 118 s after the first write, 59 s after the last
    expect(await store.read(t)).toEqual([user("a"), assistant("b")]);
    clock += 1_000;
    expect(await store.read(t)).toEqual([]);
  });
});

describe("d1 provider and the sweep", () => {
  const d1Vars = { LLM_PROVIDER_CHECKPOINT: "d1", LLM_PROVIDER_CHECKPOINT_TTL_MINUTES: "10" };

  it("keeps idle threads until the sweep deletes those whose newest write is older than the TTL", async () => {
    const now = Date.now();
    const settings = settingsOf(d1Vars);
    const at = (ms: number) => checkpointStoreFor(env, settings, { now: () => new Date(ms) });
    const stale = uniq("d1-stale");
    const refreshed = uniq("d1-refreshed");
    const fresh = uniq("d1-fresh");
    await at(now - 30 * 60_000).append(stale, [user("old")]);
    await at(now - 30 * 60_000).append(refreshed, [user("old")]);
    await at(now - 60_000).append(refreshed, [assistant("recent")]);
    await at(now - 60_000).append(fresh, [user("recent")]);

    // SQL providers do not expire on read (spec §8): only the sweep removes memory.
    expect(await at(now).read(stale)).toEqual([user("old")]);

    const report = await sweepCheckpoints(env, settings, new Date(now));
    expect(report.provider).toBe("d1");
    expect(report.ttl_minutes).toBe(10);
    expect(report.skipped).toBeUndefined();
    expect(report.swept_threads).toContain(stale);
    expect(report.swept_threads).not.toContain(refreshed);
    expect(report.swept_threads).not.toContain(fresh);
    expect(report.swept_count).toBe(report.swept_threads.length);
    expect(await at(now).read(stale)).toEqual([]);
    expect(await at(now).read(refreshed)).toEqual([user("old"), assistant("recent")]);
    expect(await at(now).read(fresh)).toEqual([user("recent")]);
  });

  it("POST /api/checkpoints/sweep sweeps on d1 with a TTL (admin only)", async () => {
    const stale = uniq("d1-door");
    await checkpointStoreFor(env, settingsOf(d1Vars), { now: () => new Date(Date.now() - 60 * 60_000) }).append(stale, [user("x")]);
    const r = await callWith(d1Vars, "POST", "/api/checkpoints/sweep", { key: await admin() });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ provider: "d1", ttl_minutes: 10 });
    expect(r.body.data.swept_threads).toContain(stale);
    expect(r.body.data.swept_count).toBeGreaterThanOrEqual(1);
    expect(r.body.data).not.toHaveProperty("skipped");

    const k = await mintKey({ scopes: ["checkpoints"] });
    expect((await callWith(d1Vars, "POST", "/api/checkpoints/sweep", { key: k.key })).status).toBe(403);
  });

  it("is a reported no-op on kv, on memory and without a TTL", async () => {
    const key = await admin();
    const kv = await call("POST", "/api/checkpoints/sweep", { key });
    expect(kv.status).toBe(200);
    expect(kv.body.data).toMatchObject({ provider: "kv", ttl_minutes: null, swept_count: 0, swept_threads: [] });
    expect(kv.body.data.skipped).toMatch(/kv/);
    const mem = await callWith({ LLM_PROVIDER_CHECKPOINT: "memory", LLM_PROVIDER_CHECKPOINT_TTL_MINUTES: "5" }, "POST", "/api/checkpoints/sweep", { key });
    expect(mem.body.data).toMatchObject({ provider: "memory", ttl_minutes: 5, swept_count: 0, swept_threads: [] });
    expect(mem.body.data.skipped).toMatch(/memory/);
    const noTtl = await callWith({ LLM_PROVIDER_CHECKPOINT: "d1" }, "POST", "/api/checkpoints/sweep", { key });
    expect(noTtl.body.data).toMatchObject({ provider: "d1", ttl_minutes: null, swept_count: 0, swept_threads: [] });
    expect(noTtl.body.data.skipped).toMatch(/TTL/);
  });
});

/**
 * Every in-memory structure that grows with traffic has a bound and an eviction rule
 * (docs/performance.md, "Memory under sustained load"). Each test here drives one structure past
 * its bound, the way traffic would, and reads its size back: at or under the bound, and back to
 * nothing once the work it held is done. The thread test drives a hot thread with many messages
 * and proves it holds nothing per message once it is idle.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ACCESS_EPOCH_MAX_SUBJECTS, type AccessEpoch } from "../../durable-objects/access-epoch";
import { apiThreadId } from "../../src/shared/thread-id";
import type { ThreadParts } from "../../src/conversations/thread/compose";
import { InlineWaiters } from "../../src/conversations/thread/inline-waiters";
import { ROUTE_SNAPSHOT_MS, RouteSnapshots } from "../../src/conversations/thread/route-reads";
import { flushSheds, noteShed, pendingShedCount } from "../../src/observability/shed-counter";
import { EpochCache } from "../../src/platform/epochs/cache";
import { JQ_REMEMBERED_MAX, JQ_REMEMBERED_MAX_CHARS, JQ_REMEMBERED_MAX_PROGRAM_CHARS, jqRemembered, jqRun } from "../../src/platform/jq/engine";
import { LINEAR_CACHE_MAX, checkAgainstSchema, linearPatternCount } from "../../src/platform/json-schema";
import { MEMORY_MAX_CHARS, MEMORY_MAX_THREADS, memoryCheckpointStore, memoryCheckpointUse } from "../../src/targets/checkpoints/memory";
import {
  MUSTACHE_CACHE_MAX_CHARS,
  MUSTACHE_CACHE_MAX_ENTRIES,
  MUSTACHE_CACHE_MAX_TEMPLATE_CHARS,
  mustacheCache,
  renderTemplate,
} from "../../src/templates/templated-text";
import { echoRoute, send } from "../helpers/bridge";
import { uniq } from "../helpers/http";
import { eventually, stubFor } from "../helpers/threads";

/** The admin key's user_id (test/helpers/http.ts): api thread ids carry it. */
const CALLER = "root";

describe("isolate caches", () => {
  it("an epoch cache keeps at most its bound over three times as many subjects, the most recent ones", async () => {
    const bound = 16;
    const cache = new EpochCache<number>(bound);
    const subjects = Array.from({ length: 3 * bound }, (_, i) => `route:${uniq(`mb${i}`)}` as const);
    let loads = 0;
    for (const s of subjects) {
      await cache.get(env, s, async () => ++loads);
      expect(cache.size).toBeLessThanOrEqual(bound);
    }
    expect(cache.size).toBe(bound);
    // The newest are the ones kept: reading them loads nothing.
    for (const s of subjects.slice(-bound)) await cache.get(env, s, async () => ++loads);
    expect(loads).toBe(3 * bound);
  });

  it("mustache's parse cache keeps at most its entries and characters, and never a template longer than its cap", () => {
    mustacheCache.clear();
    for (let i = 0; i < 2 * MUSTACHE_CACHE_MAX_ENTRIES; i++) expect(renderTemplate(`{{a}} ${i}`, { a: "x" })).toBe(`x ${i}`);
    expect(mustacheCache.size).toBe(MUSTACHE_CACHE_MAX_ENTRIES);
    // Long (but cacheable) texts: the character bound evicts before the entry bound does.
    const long = MUSTACHE_CACHE_MAX_TEMPLATE_CHARS - 100;
    for (let i = 0; i < Math.ceil((2 * MUSTACHE_CACHE_MAX_CHARS) / long); i++) renderTemplate(`${i}{{a}}`.padEnd(long, "."), { a: "x" });
    expect(mustacheCache.textChars).toBeLessThanOrEqual(MUSTACHE_CACHE_MAX_CHARS);
    expect(mustacheCache.size).toBeLessThan(MUSTACHE_CACHE_MAX_ENTRIES);
    const before = mustacheCache.size;
    const tooLong = "{{a}}".padEnd(MUSTACHE_CACHE_MAX_TEMPLATE_CHARS + 1, ".");
    expect(renderTemplate(tooLong, { a: "y" }).startsWith("y.")).toBe(true);
    expect(mustacheCache.size).toBeLessThanOrEqual(before);
  });

  it("the memory checkpoint provider keeps at most its characters and threads, least recently written first", async () => {
    const store = memoryCheckpointStore(null, () => new Date());
    const text = "m".repeat(10_000);
    // Twice the character bound, spread over a few threads written in turn.
    const threads = Array.from({ length: 8 }, () => uniq("mem"));
    for (let i = 0; i < Math.ceil((2 * MEMORY_MAX_CHARS) / text.length); i++) {
      await store.append(threads[i % threads.length], [{ role: "user", content: text }]);
      expect(memoryCheckpointUse().chars).toBeLessThanOrEqual(MEMORY_MAX_CHARS);
    }
    // Past the thread bound: one short message each.
    for (let i = 0; i <= MEMORY_MAX_THREADS; i++) await store.append(`${threads[0]}-${i}`, [{ role: "user", content: "hi" }]);
    expect(memoryCheckpointUse().threads).toBeLessThanOrEqual(MEMORY_MAX_THREADS);
    // The newest write is always kept.
    expect(await store.read(`${threads[0]}-${MEMORY_MAX_THREADS}`)).toEqual([{ role: "user", content: "hi" }]);
  });
});

describe("per-isolate memos that traffic can feed", () => {
  it("jq's compile verdicts keep at most their programs and characters, and no program over the cap", async () => {
    for (let i = 0; i < JQ_REMEMBERED_MAX + 20; i++) expect(await jqRun(`. + ${i}`, 1)).toEqual([1 + i]);
    expect(jqRemembered().programs).toBeLessThanOrEqual(JQ_REMEMBERED_MAX);
    // Long programs (a template rendered with a turn's data): the character bound holds.
    const long = (i: number) => `${i} | ${" ".repeat(JQ_REMEMBERED_MAX_PROGRAM_CHARS - 40)} .`;
    for (let i = 0; i < Math.ceil((1.5 * JQ_REMEMBERED_MAX_CHARS) / JQ_REMEMBERED_MAX_PROGRAM_CHARS); i++) await jqRun(long(i), 1);
    expect(jqRemembered().chars).toBeLessThanOrEqual(JQ_REMEMBERED_MAX_CHARS);
    const before = jqRemembered();
    await jqRun(`1 | ${" ".repeat(JQ_REMEMBERED_MAX_PROGRAM_CHARS)} .`, 1);
    expect(jqRemembered()).toEqual(before);
  });

  it("compiled schema patterns keep at most their bound", () => {
    for (let i = 0; i < LINEAR_CACHE_MAX + 50; i++) expect(checkAgainstSchema({ type: "string", pattern: `^p${i}$` }, `p${i}`)).toEqual({ ok: true });
    expect(linearPatternCount()).toBeLessThanOrEqual(LINEAR_CACHE_MAX);
  });

  it("rate-cap shed counts wait in memory only until the next flush", async () => {
    for (let i = 0; i < 200; i++) noteShed(env, uniq(`shed${i}`).toLowerCase());
    expect(pendingShedCount()).toBeGreaterThanOrEqual(200);
    await flushSheds(env);
    expect(pendingShedCount()).toBe(0);
  });
});

describe("the access-epoch object", () => {
  it("past its subject bound it starts a new incarnation: every token changes, memory starts over", async () => {
    const stub = env.ACCESS_EPOCHS.get(env.ACCESS_EPOCHS.idFromName(uniq("memory-bounds-epoch")));
    await runInDurableObject(stub, async (instance: AccessEpoch) => {
      const first = `key:${uniq("first")}`;
      await instance.bump([first]);
      const [before] = await instance.read([first]);
      const batch = 10_000;
      for (let n = 0; n <= ACCESS_EPOCH_MAX_SUBJECTS; n += batch) {
        await instance.bump(Array.from({ length: batch }, (_, i) => `route:s${n + i}`));
        expect(instance.subjectCount).toBeLessThanOrEqual(ACCESS_EPOCH_MAX_SUBJECTS);
      }
      const [after] = await instance.read([first]);
      expect(after).not.toBe(before);
    });
  });
});

describe("a thread object's per-message state", () => {
  it("inline waiters: every waiter leaves, answered or timed out", async () => {
    const waiters = new InlineWaiters();
    const timedOut = Array.from({ length: 500 }, (_, i) => waiters.wait(`t${i}`, 1));
    const answered = Array.from({ length: 500 }, (_, i) => waiters.wait(`a${i}`, 60_000));
    expect(waiters.size).toBe(1000);
    const record = { message_id: "x" } as Parameters<InlineWaiters["answer"]>[1];
    for (let i = 0; i < 500; i++) waiters.answer(`a${i}`, record);
    expect(await Promise.all(answered)).toEqual(answered.map(() => record));
    expect(await Promise.all(timedOut)).toEqual(timedOut.map(() => null));
    expect(waiters.size).toBe(0);
  });

  it("route snapshots: the sweep keeps only the queued turns' entries", () => {
    const snaps = new RouteSnapshots();
    const route = { route_name: "r" } as Parameters<RouteSnapshots["remember"]>[1]["route"];
    for (let i = 0; i < 1000; i++) snaps.remember(`m${i}`, { route, key: undefined, at: 1_000 });
    snaps.keepOnly((id) => id === "m7");
    expect(snaps.size).toBe(1);
    expect(snaps.take("m7", 1_000 + ROUTE_SNAPSHOT_MS - 1)?.route).toBe(route);
    expect(snaps.size).toBe(0);
  });

  it("a hot thread holds nothing per message once its messages are answered", async () => {
    // The rate cap out of the way (its default is 20 turns an hour per caller).
    const { name } = await echoRoute({ turns_per_hour_override: 1_000_000 });
    const user = uniq("hot");
    const threadId = apiThreadId(name, CALLER, user);
    const heldNow = () => runInDurableObject(stubFor(threadId), (instance) => (instance as unknown as { parts: ThreadParts }).parts.held());
    // Waves of concurrent sends: turns run while later accepts are still filing their bookkeeping.
    // A wave starts once at most one wave's records are open, so the queue stays under its default
    // bound of 20 and every send is accepted.
    const statuses: number[] = [];
    for (let wave = 0; wave < 10; wave++) {
      if (wave > 0) await eventually(heldNow, (h) => h.open <= 10, 500);
      const sent = await Promise.all(Array.from({ length: 10 }, (_, i) => send(name, { external_user_id: user, text: `hot ${wave}/${i}` })));
      statuses.push(...sent.map((r) => r.status));
    }
    expect(statuses.filter((s) => s !== 202)).toEqual([]);
    const held = await eventually(heldNow, (h) => h.open === 0, 500);
    expect(held).toEqual({ snapshots: 0, firstRuns: 0, handoff: 0, waiters: 0, handed: 0, live: 0, open: 0 });
  });
});

describe("the interactions hub's long-poll waiters", () => {
  it("hold one entry per open `since` call, each released by its deadline (or a publish): none are left", async () => {
    const stub = env.INTERACTION_HUB.get(env.INTERACTION_HUB.idFromName(uniq("hub")));
    const waiting = () => runInDurableObject(stub, (obj) => (obj as unknown as { waiters: Set<unknown> }).waiters.size);
    const top = (await stub.since({ after: null, audience: null, waitMs: 0, limit: 1 })).last_id;
    // 200 readers at once: each holds one entry while it waits, and leaves by its timer.
    const readers = Array.from({ length: 200 }, () => stub.since({ after: top, audience: null, waitMs: 1500, limit: 10 }));
    expect(await eventually(waiting, (n) => n === 200)).toBe(200);
    const answered = await Promise.all(readers);
    expect(answered.every((a) => a.events.length === 0)).toBe(true);
    expect(await waiting()).toBe(0);
  });
});

import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { uniq } from "../helpers/http";
import { StorageCounter } from "../helpers/storage-count";
import { floorReserve } from "../../src/conversations/door/token-bucket";
import { must } from "../../src/platform/must";

type Bucket = DurableObjectStub & { take(capacity: number, key: string, max: number): Promise<{ allowed: boolean; notify?: boolean }> };

function bucket(key: string): Bucket {
  return env.ADDRESS_BUCKETS.get(env.ADDRESS_BUCKETS.idFromName(key)) as unknown as Bucket;
}

const directory = () =>
  env.BUCKET_DIRECTORY.get(env.BUCKET_DIRECTORY.idFromName("all")) as unknown as DurableObjectStub & {
    register(key: string, max: number): Promise<string[]>;
    size(): Promise<number>;
  };

describe("AddressBucket object", () => {
  it("refuses past capacity and reports the notice once per window", async () => {
    const key = uniq("bucket");
    const b = bucket(key);
    expect(await b.take(2, key, 50_000)).toEqual({ allowed: true });
    expect(await b.take(2, key, 50_000)).toEqual({ allowed: true });
    expect(await b.take(2, key, 50_000)).toMatchObject({ allowed: false, notify: true });
    expect(await b.take(2, key, 50_000)).toMatchObject({ allowed: false, notify: false });
  });

  it("arms one alarm per lifetime that re-arms until full, then forgets the bucket and leaves the directory", async () => {
    const key = uniq("bucket");
    const b = bucket(key);
    await b.take(3, key, 50_000);
    const sizeWith = await directory().size();
    expect(await runInDurableObject(b, (_o, state) => state.storage.getAlarm())).not.toBeNull();
    await b.take(3, key, 50_000);
    // Not full yet when the alarm fires: it stays and re-arms.
    expect(await runDurableObjectAlarm(b)).toBe(true);
    expect(await runInDurableObject(b, (_o, state) => state.storage.get("bucket"))).toBeDefined();
    expect(await runInDurableObject(b, (_o, state) => state.storage.getAlarm())).not.toBeNull();
    // An hour later (rewritten state) the bucket is full: the alarm forgets it.
    await runInDurableObject(b, async (_o, state) => {
      const stored = must(await state.storage.get<{ state: { tokens: number; updatedAtMs: number }; capacity: number; key: string }>("bucket"), "the entry");
      await state.storage.put("bucket", { ...stored, state: { ...stored.state, updatedAtMs: Date.now() - 3_600_000 } });
    });
    expect(await runDurableObjectAlarm(b)).toBe(true);
    expect(await runInDurableObject(b, (_o, state) => state.storage.get("bucket"))).toBeUndefined();
    expect(await directory().size()).toBe(sizeWith - 1);
  });
});

describe("address_bucket_max_entries: a flood evicts the oldest buckets", () => {
  it("keeps at most max live buckets; an evicted address starts again from a full bucket", async () => {
    const [a, b, c] = [uniq("flood-a"), uniq("flood-b"), uniq("flood-c")];
    // With a bound of 1, `a` is the only live bucket once it registers (older ones are evicted).
    expect(await bucket(a).take(1, a, 1)).toEqual({ allowed: true });
    expect(await directory().size()).toBe(1);
    expect(await bucket(a).take(1, a, 2)).toMatchObject({ allowed: false });
    await bucket(b).take(1, b, 2);
    expect(await directory().size()).toBe(2);
    await bucket(c).take(1, c, 2);
    expect(await directory().size()).toBe(2);
    // The oldest live bucket, `a`, was evicted to make room: it forgot its spent token.
    expect(await runInDurableObject(bucket(a), (_o, state) => state.storage.get("bucket"))).toBeUndefined();
    expect(await runInDurableObject(bucket(b), (_o, state) => state.storage.get("bucket"))).toBeDefined();
    expect(await bucket(a).take(1, a, 3)).toEqual({ allowed: true });
  });

  it("the directory answers the oldest keys past the bound", async () => {
    const dir = env.BUCKET_DIRECTORY.get(env.BUCKET_DIRECTORY.idFromName(uniq("dir"))) as unknown as { register(key: string, max: number): Promise<string[]> };
    expect(await dir.register("k1", 2)).toEqual([]);
    expect(await dir.register("k2", 2)).toEqual([]);
    expect(await dir.register("k3", 2)).toEqual(["k1"]);
    expect(await dir.register("k4", 1)).toEqual(["k2", "k3"]);
  });
});

describe("the bucket in memory over a stored floor (durable-objects/address-bucket.ts)", () => {
  /** Ends the bucket's object as an eviction would: its memory goes, its storage stays. */
  async function evict(key: string): Promise<void> {
    await runInDurableObject(bucket(key), (_o, state) => state.abort("evicted")).catch(() => undefined);
  }

  it("a bucket emptied by rapid takes is still empty, and refuses, after its object's memory is dropped", async () => {
    const key = uniq("attack");
    const b = bucket(key);
    const verdicts = [];
    for (let i = 0; i < 21; i++) verdicts.push(await b.take(20, key, 50_000));
    expect(verdicts.filter((v) => v.allowed)).toHaveLength(20);
    expect(verdicts[20]).toMatchObject({ allowed: false, notify: true });
    await evict(key);
    // A fresh instance over the same storage: it starts from the floor, not from a full bucket.
    expect(await bucket(key).take(20, key, 50_000)).toMatchObject({ allowed: false, notify: false });
    await evict(key);
    for (let i = 0; i < 5; i++) expect(await bucket(key).take(20, key, 50_000)).toMatchObject({ allowed: false });
  });

  it("an evicted bucket holds at most what the live one held, and at most floorReserve tokens fewer", async () => {
    const key = uniq("half");
    const b = bucket(key);
    for (let i = 0; i < 10; i++) expect(await b.take(20, key, 50_000)).toEqual({ allowed: true });
    await evict(key);
    let allowed = 0;
    while ((await bucket(key).take(20, key, 50_000)).allowed) allowed++;
    // The live bucket held 10 tokens; the floor holds back floorReserve(20) = 2 at most.
    expect(allowed).toBeLessThanOrEqual(10);
    expect(allowed).toBeGreaterThanOrEqual(10 - floorReserve(20));
  });

  it("writes its floor on one take in floorReserve + 1 or fewer, and reads nothing per take", async () => {
    const key = uniq("quiet");
    const b = bucket(key);
    const counter = new StorageCounter();
    const restore = await counter.attach(b as unknown as DurableObjectStub);
    try {
      for (let i = 0; i < 20; i++) expect(await b.take(20, key, 50_000)).toEqual({ allowed: true });
    } finally {
      await restore();
    }
    expect(counter.count("get")).toBe(0);
    // The new bucket's first take, then one in every floorReserve(20) + 1 = 3.
    expect(counter.count("put"), counter.describe()).toBeLessThanOrEqual(1 + Math.ceil(19 / 3));
    expect(counter.count("put")).toBeGreaterThan(0);
  });
});

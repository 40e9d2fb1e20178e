/**
 * The per-isolate overlay cache (src/config/isolate-settings.ts): what a request costs in D1, how
 * a change made by another isolate arrives within the refresh bound, and how a broken overlay is
 * refused. Each test drives its own cache with an injected clock (no sleeping); "another isolate"
 * is a direct D1 write, which is all another isolate's write is.
 */
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { IsolateSettings, isolateSettings, requestSettings } from "../../src/config/isolate-settings";
import { D1Counter } from "../helpers/d1-count";
import { must } from "../../src/platform/must";

const REFRESH_MS = 2000;
const CAP = "CONVERSATIONS_PER_ADDRESS_TURNS_PER_HOUR";

/** What another isolate's write leaves in D1: rows plus a generation bump. */
async function writeElsewhere(rows: Array<{ name: string; value: string; secret?: 0 | 1 }>): Promise<number> {
  const now = new Date().toISOString();
  const stmts = rows.map((r) =>
    env.DB.prepare(
      "INSERT INTO settings_overlay (name, value, secret, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value, secret = excluded.secret",
    ).bind(r.name, r.value, r.secret ?? 0, now),
  );
  stmts.push(env.DB.prepare("UPDATE settings_generation SET generation = generation + 1 WHERE id = 1"));
  await env.DB.batch(stmts);
  return must(await env.DB.prepare("SELECT generation FROM settings_generation WHERE id = 1").first<number>("generation"), "the row");
}

function cacheWithClock(start = 1_000_000) {
  const clock = { now: start };
  const cache = new IsolateSettings({ now: () => clock.now, refreshMs: REFRESH_MS });
  const pending: Promise<unknown>[] = [];
  const waitUntil = (p: Promise<unknown>) => void pending.push(p);
  const settle = async () => {
    while (pending.length) await pending.shift();
  };
  return { clock, cache, waitUntil, settle, pending };
}

function cap(result: { ok: boolean; settings?: { conversations: { perAddressTurnsPerHour: number } } }): number {
  if (!result.ok || !result.settings) throw new Error("settings invalid");
  return result.settings.conversations.perAddressTurnsPerHour;
}

afterEach(async () => {
  await env.DB.batch([
    env.DB.prepare("DELETE FROM settings_overlay"),
    env.DB.prepare("UPDATE settings_generation SET generation = generation + 1 WHERE id = 1"),
  ]);
});

describe("the overlay cache of one isolate", () => {
  it("loads once on a cold cache, then serves requests with no D1 statement until the interval passes", async () => {
    const { cache, clock, waitUntil, pending } = cacheWithClock();
    const counter = new D1Counter();
    const counted = { ...env, DB: counter.wrap(env.DB, "worker") };
    const first = await cache.forRequest(counted, waitUntil);
    expect(first.result.ok).toBe(true);
    expect(counter.count("worker")).toEqual({ roundTrips: 1, statements: 2 }); // generation + rows, one batch
    for (let i = 0; i < 50; i++) {
      clock.now += 30; // 1.5 s in all: still inside the 2 s bound
      await cache.forRequest(counted, waitUntil);
    }
    expect(counter.count("worker")).toEqual({ roundTrips: 1, statements: 2 });
    expect(pending).toHaveLength(0);
  });

  it("applies a change made elsewhere within one refresh interval, checking in the background", async () => {
    const { cache, clock, waitUntil, settle, pending } = cacheWithClock();
    expect(cap((await cache.forRequest(env, waitUntil)).result)).toBe(20);
    const generation = await writeElsewhere([{ name: CAP, value: "3" }]);

    clock.now += REFRESH_MS - 1;
    expect(cap((await cache.forRequest(env, waitUntil)).result), "inside the bound the cache is served").toBe(20);
    expect(pending).toHaveLength(0);

    clock.now += 1;
    // The request that finds the cache stale is served from it and starts the check (never waits on D1).
    expect(cap((await cache.forRequest(env, waitUntil)).result)).toBe(20);
    expect(pending).toHaveLength(1);
    // A second request meanwhile starts no second check.
    await cache.forRequest(env, waitUntil);
    expect(pending).toHaveLength(1);
    await settle();

    const after = await cache.forRequest(env, waitUntil);
    expect(cap(after.result)).toBe(3);
    expect(after.generation).toBe(generation);
    expect(cache.lastOp()).toMatchObject({ op: "refresh", generation });
  });

  it("costs one small statement per interval while the generation stands still", async () => {
    const { cache, clock, waitUntil, settle } = cacheWithClock();
    const counter = new D1Counter();
    const counted = { ...env, DB: counter.wrap(env.DB, "worker") };
    await cache.forRequest(counted, waitUntil);
    clock.now += REFRESH_MS;
    await cache.forRequest(counted, waitUntil);
    await settle();
    expect(counter.calls.map((c) => c.sql.join(" | "))).toEqual([
      expect.stringContaining("FROM settings_overlay"),
      "SELECT generation, updated_at FROM settings_generation WHERE id = 1",
    ]);
    expect(cache.lastOp()?.op).toBe("check");
  });

  it("keeps serving the cached settings when a check fails, and retries one interval later", async () => {
    const { cache, clock } = cacheWithClock();
    let down = false;
    const flaky = new Proxy(env.DB, {
      get(target, prop) {
        if (prop === "prepare" && down) {
          return () => {
            throw new Error("D1 is down");
          };
        }
        const v = Reflect.get(target, prop);
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
    const flakyEnv = { ...env, DB: flaky };
    await cache.forRequest(flakyEnv); // the cache reads through this binding from now on
    await writeElsewhere([{ name: CAP, value: "4" }]);
    down = true;
    clock.now += REFRESH_MS;
    const first: Promise<unknown>[] = [];
    expect(cap((await cache.forRequest(flakyEnv, (p) => void first.push(p))).result)).toBe(20);
    await Promise.all(first);
    expect(cache.lastOp()?.op).toBe("check-failed");
    // No retry on every request: the next check waits one more interval.
    const again: Promise<unknown>[] = [];
    expect(cap((await cache.forRequest(flakyEnv, (p) => void again.push(p))).result)).toBe(20);
    expect(again).toHaveLength(0);
    down = false;
    clock.now += REFRESH_MS;
    const later: Promise<unknown>[] = [];
    await cache.forRequest(flakyEnv, (p) => void later.push(p));
    await Promise.all(later);
    expect(cap((await cache.forRequest(flakyEnv)).result)).toBe(4);
  });

  it("fails a cold load loudly (the request cannot know its settings)", async () => {
    const { cache } = cacheWithClock();
    const broken = {
      ...env,
      DB: {
        prepare() {
          throw new Error("D1 is down");
        },
      },
    };
    await expect(cache.forRequest(broken)).rejects.toThrow("D1 is down");
    expect(cache.generation()).toBeNull();
  });

  it("answers a cold peek (an object's synchronous read) with the env alone, and the overlay once loaded", async () => {
    await writeElsewhere([{ name: CAP, value: "6" }]);
    const { cache } = cacheWithClock();
    const cold = cache.peek(env);
    expect(cold.generation).toBeNull();
    expect(cap(cold.result)).toBe(20);
    await cache.ensure(env);
    expect(cap(cache.peek(env).result)).toBe(6);
  });

  it("never lets a check that started before a local write overwrite what that write installed", async () => {
    const { cache, clock, waitUntil, settle } = cacheWithClock();
    // The cache's own handle answers a batch only once the gate opens (after reading, so its answer is stale by then).
    let release: () => void = () => {};
    let gate: Promise<void> = Promise.resolve();
    let readStale = false;
    const gated = new Proxy(env.DB, {
      get(target, prop) {
        if (prop === "batch") {
          return async (stmts: D1PreparedStatement[]) => {
            const r = await target.batch(stmts);
            readStale = true;
            await gate;
            return r;
          };
        }
        const v = Reflect.get(target, prop);
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
    await cache.forRequest({ ...env, DB: gated }, waitUntil);
    await writeElsewhere([{ name: CAP, value: "7" }]);
    gate = new Promise((r) => (release = r));
    readStale = false;
    clock.now += REFRESH_MS;
    await cache.forRequest(env, waitUntil); // starts the check: it reads 7, then waits at the gate
    for (let i = 0; i < 100 && !readStale; i++) await new Promise((r) => setTimeout(r, 10));
    expect(readStale).toBe(true);
    await writeElsewhere([{ name: CAP, value: "8" }]);
    await cache.reload(env); // what a write in this isolate does
    expect(cap((await cache.forRequest(env)).result)).toBe(8);
    release();
    await settle();
    expect(cap((await cache.forRequest(env)).result)).toBe(8);
  });

  it("merges over the env: the overlay wins, names without a row keep the env's value", async () => {
    await writeElsewhere([{ name: CAP, value: "9" }]);
    const { cache } = cacheWithClock();
    const base = { ...env, CONVERSATIONS_THREAD_QUEUE_DEPTH: "7", [CAP]: "11" };
    const eff = await cache.forRequest(base);
    if (!eff.result.ok) throw new Error(eff.result.errors.join());
    expect(eff.result.settings.conversations.perAddressTurnsPerHour).toBe(9);
    expect(eff.result.settings.conversations.threadQueueDepth).toBe(7);
    expect(eff.env[CAP]).toBe("9");
    expect(eff.env.DB).toBe(env.DB);
  });

  it("ignores stored names the overlay may not set (env-only settings stay the env's)", async () => {
    await writeElsewhere([{ name: "ACCESS_CONTROL_BOOTSTRAP_TOKEN", value: "overlay-token" }]);
    const { cache } = cacheWithClock();
    const eff = await cache.forRequest(env);
    expect(eff.result.ok).toBe(true);
    expect(eff.env.ACCESS_CONTROL_BOOTSTRAP_TOKEN).toBe(env.ACCESS_CONTROL_BOOTSTRAP_TOKEN);
    expect(eff.snapshot?.ignored).toEqual(["ACCESS_CONTROL_BOOTSTRAP_TOKEN"]);
  });

  it("makes the settings invalid, naming the setting and never its value, when a stored secret cannot be opened", async () => {
    await writeElsewhere([{ name: "CHANNEL_SLACK_BOT_TOKEN", value: JSON.stringify({ kid: "0000", iv: "AAAA", ct: "SECRETSEALED" }), secret: 1 }]);
    const { cache } = cacheWithClock();
    const eff = await cache.forRequest(env);
    expect(eff.result.ok).toBe(false);
    if (eff.result.ok) return;
    expect(eff.result.errors.join()).toContain("CHANNEL_SLACK_BOT_TOKEN");
    expect(eff.result.errors.join()).not.toContain("SECRETSEALED");
  });
});

describe("the settings a request runs with", () => {
  it("refuses every door but /api/config/* when the overlay makes the settings invalid; those run on the env alone", async () => {
    // Valid alone, invalid together with the env's lease: refresh must stay below the lease.
    await writeElsewhere([{ name: "CONVERSATIONS_INTAKE_CLAIM_REFRESH_SECONDS", value: "500" }]);
    await isolateSettings.reload(env, "refresh"); // the shared cache requestSettings reads
    const door = await requestSettings(env, "/api/conversations");
    expect(door.ok).toBe(false);
    if (!door.ok) {
      expect(door.errors.join()).toContain("CONVERSATIONS_INTAKE_CLAIM_REFRESH_SECONDS");
      expect(door.errors.join()).not.toContain("500");
    }
    const repair = await requestSettings(env, "/api/config/env");
    expect(repair.ok).toBe(true);
    if (repair.ok) expect(repair.env).toBe(env);
    await env.DB.prepare("DELETE FROM settings_overlay").run();
    await isolateSettings.reload(env, "refresh");
  });
});

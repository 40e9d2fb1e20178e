/**
 * The NotificationFeed object: a SQLite ring per feed, newest first and trimmed to its
 * cap on insert; an identity feed's idle TTL, refreshed by each push and enforced by the object's
 * alarm (which deletes the whole storage) and by reads before the alarm has run.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { SHARED_FEED, identityFeed, notificationFeedStub } from "../../src/notifications/rpc";
import type { NotificationFeed } from "../../durable-objects/notification-feed";
import { uniq } from "../helpers/http";
import { must } from "../../src/platform/must";

const DAY_MS = 86_400_000;
const entry = (message: string) => JSON.stringify({ id: crypto.randomUUID(), created_at: new Date().toISOString(), message });
const messages = async (name: string, limit = 1000) =>
  (JSON.parse(await notificationFeedStub(env, name).list(limit)) as Array<{ message: string }>).map((n) => n.message);
const objectOf = (name: string) => env.NOTIFICATION_FEEDS.get(env.NOTIFICATION_FEEDS.idFromName(name)) as unknown as DurableObjectStub<NotificationFeed>;

/** What the object holds: its tables, row count, stored expiry and alarm. */
function inspect(name: string) {
  return runInDurableObject(objectOf(name), async (_instance: NotificationFeed, state) => {
    const tables = state.storage.sql
      .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('entries', 'meta')")
      .toArray()
      .map((r) => r.name)
      .sort();
    const rows = tables.includes("entries") ? Number(state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM entries").one().n) : 0;
    const expiry = tables.includes("meta")
      ? state.storage.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = 'expires_at'").toArray()[0]?.value
      : undefined;
    return { tables, rows, expiresAt: expiry === undefined ? null : Number(expiry), alarm: await state.storage.getAlarm() };
  });
}

describe("the feed ring", () => {
  it("lists newest first and keeps only the newest `cap` entries, whatever the volume", async () => {
    const name = identityFeed(uniq("ring"));
    const feed = notificationFeedStub(env, name);
    for (let i = 0; i < 25; i++) await feed.push(entry(`m${i}`), { cap: 10, idleTtlMs: DAY_MS });
    expect(await messages(name)).toEqual(Array.from({ length: 10 }, (_, i) => `m${24 - i}`));
    expect((await inspect(name)).rows).toBe(10);
    // A read limit below the cap answers the newest ones.
    expect(await messages(name, 3)).toEqual(["m24", "m23", "m22"]);
    // A smaller cap later trims on the next insert.
    await feed.push(entry("m25"), { cap: 2, idleTtlMs: DAY_MS });
    expect(await messages(name)).toEqual(["m25", "m24"]);
  });

  it("a feed never written reads empty and stays empty (a read creates nothing)", async () => {
    const name = identityFeed(uniq("never"));
    expect(await notificationFeedStub(env, name).list(1000)).toBe("[]");
    expect(await inspect(name)).toEqual({ tables: [], rows: 0, expiresAt: null, alarm: null });
  });

  it("the shared feed has no TTL and no alarm", async () => {
    await notificationFeedStub(env, SHARED_FEED).push(entry("s"), { cap: 1000, idleTtlMs: null });
    const s = await inspect(SHARED_FEED);
    expect(s.expiresAt).toBeNull();
    expect(s.alarm).toBeNull();
  });
});

describe("an identity feed's idle TTL", () => {
  it("each push moves the expiry and the alarm to now + TTL", async () => {
    const name = identityFeed(uniq("ttl"));
    const feed = notificationFeedStub(env, name);
    const before = Date.now();
    await feed.push(entry("a"), { cap: 10, idleTtlMs: DAY_MS });
    const first = await inspect(name);
    expect(first.expiresAt).toBeGreaterThanOrEqual(before + DAY_MS);
    expect(first.alarm).toBe(first.expiresAt);
    await new Promise((r) => setTimeout(r, 5));
    await feed.push(entry("b"), { cap: 10, idleTtlMs: 2 * DAY_MS });
    const second = await inspect(name);
    expect(second.expiresAt).toBeGreaterThan(must(first.expiresAt, "first.expiresAt") + DAY_MS - 1);
    expect(second.alarm).toBe(second.expiresAt);
  });

  it("the alarm deletes the feed's whole storage once idle past its TTL; a not-yet-idle feed is re-armed", async () => {
    const name = identityFeed(uniq("idle"));
    const feed = notificationFeedStub(env, name);
    await feed.push(entry("old"), { cap: 10, idleTtlMs: DAY_MS });
    // Not idle yet: the alarm keeps the feed and re-arms at its expiry.
    expect(await runDurableObjectAlarm(objectOf(name))).toBe(true);
    const kept = await inspect(name);
    expect(kept.rows).toBe(1);
    expect(kept.alarm).toBe(kept.expiresAt);
    // Idle past its TTL (the clock moved on): the alarm deletes everything.
    await runInDurableObject(objectOf(name), (_i: NotificationFeed, state) => {
      state.storage.sql.exec("UPDATE meta SET value = ? WHERE key = 'expires_at'", String(Date.now() - 1));
    });
    expect(await runDurableObjectAlarm(objectOf(name))).toBe(true);
    expect(await inspect(name)).toEqual({ tables: [], rows: 0, expiresAt: null, alarm: null });
    expect(await messages(name)).toEqual([]);
    // A later push starts a fresh feed.
    await feed.push(entry("new"), { cap: 10, idleTtlMs: DAY_MS });
    expect(await messages(name)).toEqual(["new"]);
  });

  it("reads treat an idle feed as empty before its alarm runs, and a push then starts afresh", async () => {
    const name = identityFeed(uniq("late"));
    const feed = notificationFeedStub(env, name);
    await feed.push(entry("stale"), { cap: 10, idleTtlMs: DAY_MS });
    await runInDurableObject(objectOf(name), (_i: NotificationFeed, state) => {
      state.storage.sql.exec("UPDATE meta SET value = ? WHERE key = 'expires_at'", String(Date.now() - 1));
    });
    expect(await messages(name)).toEqual([]);
    await feed.push(entry("fresh"), { cap: 10, idleTtlMs: DAY_MS });
    expect(await messages(name)).toEqual(["fresh"]);
  });
});

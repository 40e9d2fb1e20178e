/**
 * The access epochs and the isolate caches they validate (src/platform/epochs): a cached read is
 * used only while its subject's token is unchanged; a bump, or an object that restarted (a fresh
 * instance mints a new token), makes it stale; the triggers record every watched write and a
 * writing request publishes them before it answers.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { AccessEpoch } from "../../../durable-objects/access-epoch";
import { EpochCache } from "../../../src/platform/epochs/cache";
import { publishAccessChanges } from "../../../src/platform/epochs/publish";
import { bumpEpochs, epochShard, readEpoch } from "../../../src/platform/epochs/rpc";
import { epochLayout } from "../../../src/platform/settings/epoch-settings";
import { echoRoute } from "../../helpers/bridge";
import { admin, call, mintKey, uniq } from "../../helpers/http";

/** The tables whose writes can change a cached key or route read (migrations/0026_access_changes.sql). */
const WATCHED = ["api_keys", "roles", "auth_scopes", "routes", "conversation_configs", "state_pending_saves", "web_sites"];

async function pending(): Promise<string[]> {
  const rows = await env.DB.prepare("SELECT subject FROM access_changes ORDER BY seq").all<{ subject: string }>();
  return rows.results.map((r) => r.subject);
}

/**
 * The deployed layout: the workers tests run on one shard of one replica (vitest.config.ts), since
 * every test file starts its objects afresh; these tests spread subjects as a deployment does.
 */
const deployed = Object.assign({}, env, { ACCESS_EPOCH_SHARDS: "8", ACCESS_EPOCH_REPLICAS: "4" });

describe("access epochs", () => {
  it("the layout is a setting, 8 shards of 4 replicas unless set", () => {
    expect(epochLayout({})).toEqual({ shards: 8, replicas: 4 });
    expect(epochLayout({ ACCESS_EPOCH_SHARDS: "2", ACCESS_EPOCH_REPLICAS: "0" })).toEqual({ shards: 2, replicas: 4 });
  });

  it("a token holds until a bump, and every replica of its shard is bumped", async () => {
    const subject = `route:${uniq("epoch")}` as const;
    const before = await readEpoch(deployed, subject);
    expect(await readEpoch(deployed, subject)).toBe(before);
    await bumpEpochs(deployed, [subject]);
    const after = await readEpoch(deployed, subject);
    expect(after).not.toBe(before);
    // Whichever replica an isolate reads, it sees the bump: each replica counts one bump.
    const shard = epochShard(subject, 8);
    for (let r = 0; r < 4; r++) {
      const replica = env.ACCESS_EPOCHS.get(env.ACCESS_EPOCHS.idFromName(`${shard}/${r}`));
      expect((await replica.read([subject]))[0]).toMatch(/\/1$/);
    }
  });

  it("a bump leaves the other subjects of its shard alone", async () => {
    const subject = `route:${uniq("a")}` as const;
    let other = `route:${uniq("b")}` as const;
    while (epochShard(other, 8) !== epochShard(subject, 8)) other = `route:${uniq("b")}`;
    const before = await readEpoch(deployed, other);
    await bumpEpochs(deployed, [subject]);
    expect(await readEpoch(deployed, other)).toBe(before);
  });

  it("a restarted object mints a new token: a restart can only invalidate", async () => {
    const stub = env.ACCESS_EPOCHS.get(env.ACCESS_EPOCHS.idFromName(uniq("restart")));
    const subjects = ["route:r"];
    const [before] = await stub.read(subjects);
    // A second instance over the same object's state stands for the object after an eviction.
    const [after] = await runInDurableObject(stub, (_instance, state) => new AccessEpoch(state, env).read(subjects));
    expect(after).not.toBe(before);
    expect(await stub.read(subjects)).toEqual([before]);
  });

  it("the cache reloads only when the token changed", async () => {
    const cache = new EpochCache<{ n: number }>(8);
    const subject = `key:${uniq("hash")}` as const;
    let loads = 0;
    const load = async () => ({ n: ++loads });
    expect(await cache.get(env, subject, load)).toEqual({ n: 1 });
    expect(await cache.get(env, subject, load)).toEqual({ n: 1 });
    await bumpEpochs(env, [subject]);
    expect(await cache.get(env, subject, load)).toEqual({ n: 2 });
    // A value older than the cache's age bound is read again even when its token still matches.
    expect(await cache.get(env, subject, load, Date.now() + 6 * 60_000)).toEqual({ n: 3 });
    // An absent value is not cached: the next use loads again.
    expect(await cache.get(env, `key:${uniq("none")}`, async () => null)).toBeNull();
  });

  it("cached values are frozen: a request cannot change what the next one reads", async () => {
    const cache = new EpochCache<{ inner: { v: number } }>(8);
    const value = await cache.read(env, `route:${uniq("frozen")}`, async () => ({ inner: { v: 1 } }));
    expect(() => {
      value.inner.v = 2;
    }).toThrow(TypeError);
  });

  it("the cache keeps at most its bound, dropping the least recently used", async () => {
    const cache = new EpochCache<number>(2);
    let loads = 0;
    const load = async () => ++loads;
    const [a, b, c] = [uniq("a"), uniq("b"), uniq("c")].map((s) => `route:${s}` as const);
    await cache.get(env, a, load);
    await cache.get(env, b, load);
    await cache.get(env, a, load); // a is now the most recently used
    await cache.get(env, c, load); // evicts b
    expect(loads).toBe(3);
    await cache.get(env, a, load);
    expect(loads).toBe(3);
    await cache.get(env, b, load);
    expect(loads).toBe(4);
  });
});

describe("access changes: recorded by triggers, published by the writer", () => {
  it("every watched table has an insert, update and delete trigger (pending saves: insert and delete)", async () => {
    const rows = await env.DB.prepare("SELECT tbl_name, sql FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'access_changes_%'").all<{
      tbl_name: string;
      sql: string;
    }>();
    for (const table of WATCHED) {
      const events = rows.results.filter((r) => r.tbl_name === table).map((r) => /AFTER (INSERT|UPDATE|DELETE)/.exec(r.sql)?.[1]);
      const want = table === "state_pending_saves" ? ["DELETE", "INSERT"] : ["DELETE", "INSERT", "UPDATE"];
      expect(events.sort(), table).toEqual(want);
    }
  });

  it("a key edit records the key, its owned keys and the routes it executes; the request publishes them", async () => {
    const r = await echoRoute();
    const owned = await mintKey({ scopes: ["conversations"], owner_user_id: r.key.user_id });
    await publishAccessChanges(env);
    // Written behind the doors' back, the change is recorded but not yet published.
    await env.DB.prepare("UPDATE api_keys SET description = 'edited' WHERE user_id = ?").bind(r.key.user_id).run();
    const recorded = await pending();
    expect(recorded).toContain(`user:${r.key.user_id}`);
    expect(recorded).toContain(`user:${owned.user_id}`);
    expect(recorded).toContain(`route:${r.name}`);
    expect(recorded.filter((s) => s.startsWith("key:")).length).toBeGreaterThanOrEqual(2);
    // A writing request publishes whatever is recorded before it answers.
    const edit = await call("PUT", `/api/auth/api-keys/${owned.user_id}`, { key: await admin(), body: { description: "again" } });
    expect(edit.status).toBe(200);
    expect(await pending()).toEqual([]);
  });

  it("a route written through its door is published before the door answers", async () => {
    const r = await echoRoute();
    const again = await call("POST", `/api/conversations/${r.name}`, {
      key: await admin(),
      body: { door: "api", target_kind: "tool", target_name: "echo", execution_key: r.key.user_id, turns_per_hour_override: 7 },
    });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(await pending()).toEqual([]);
  });
});

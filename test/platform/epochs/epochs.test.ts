/**
 * The access epochs and the isolate caches they validate (src/platform/epochs): a cached read is
 * used only while its subject's token is unchanged; a bump, or an object that restarted (a fresh
 * instance mints a new token), makes it stale; the triggers record every watched write and a
 * writing request publishes them before it answers.
 */
import { env } from "cloudflare:workers";
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it, vi } from "vitest";
import { AccessEpoch } from "../../../durable-objects/access-epoch";
import { EpochCache } from "../../../src/platform/epochs/cache";
import { UNPUBLISHED_CODE, publishAccessChanges, publishingWrites } from "../../../src/platform/epochs/publish";
import { bumpEpochs, epochShard, readEpoch } from "../../../src/platform/epochs/rpc";
import { EPOCH_LAYOUT, bumpLayouts, epochLayout } from "../../../src/platform/settings/epoch-settings";
import type { Env } from "../../../src/platform/env";
import { echoRoute } from "../../helpers/bridge";
import { admin, call, mintKey, uniq } from "../../helpers/http";

/** The tables whose writes can change a cached key or route read (migrations/0026_access_changes.sql). */
const WATCHED = ["api_keys", "roles", "auth_scopes", "routes", "conversation_configs", "state_pending_saves", "web_sites", "route_hours"];

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

/** `env` whose epoch objects refuse `failures` bumps (then bump for real): an unreachable epoch shard. */
function failingBumps(failures: number): { env: Env; bumps: () => number } {
  let tries = 0;
  const ns = env.ACCESS_EPOCHS;
  const fake = {
    idFromName: (name: string) => ns.idFromName(name),
    get: (id: DurableObjectId) => {
      const real = ns.get(id);
      return {
        read: (subjects: string[]) => real.read(subjects),
        bump: async (subjects: string[]) => {
          tries++;
          if (tries <= failures) throw new Error("epoch object unreachable");
          return real.bump(subjects);
        },
      };
    },
  };
  return { env: Object.assign({}, env, { ACCESS_EPOCHS: fake }) as unknown as Env, bumps: () => tries };
}

/** A writing request's handler: edits a key's description through the env it is given (the counting one). */
const editKey = (userId: string) => async (_req: Request, e: Env) => {
  await e.DB.prepare("UPDATE api_keys SET description = 'edited by the test' WHERE user_id = ?").bind(userId).run();
  return Response.json({ data: { edited: true } });
};

const NO_CTX = { waitUntil() {}, passThroughOnException() {}, props: {} } as unknown as ExecutionContext;

describe("epoch publication fails closed", () => {
  it("a write whose changes cannot be published answers 503 access_changes_unpublished, logged once as its http_5xx line; the rows wait for the next publisher", async () => {
    const k = await mintKey({ scopes: ["conversations:read"] });
    await publishAccessChanges(env);
    const { env: broken, bumps } = failingBumps(Number.POSITIVE_INFINITY);
    const errors = vi.spyOn(console, "error").mockImplementation(() => undefined);
    let res: Response;
    let logged: string[];
    try {
      res = await publishingWrites(editKey(k.user_id), [0, 0, 0])(new Request("https://bridge.test/api/x", { method: "PUT" }), broken, NO_CTX);
    } finally {
      logged = errors.mock.calls.map((c) => String(c[0]));
      errors.mockRestore();
    }
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ code: UNPUBLISHED_CODE });
    expect(bumps()).toBeGreaterThanOrEqual(3);
    const lines = logged.filter((l) => l.includes('"http_5xx"'));
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0])).toMatchObject({
      event: "http_5xx",
      status: 503,
      code: UNPUBLISHED_CODE,
      route: "PUT (a writing request, published after its answer)",
    });
    expect(JSON.parse(lines[0]).reason).toContain("after 3 attempts");
    // The write stood and its change is still recorded: the next publisher (a request, the cron) bumps it.
    expect(await pending()).toContain(`user:${k.user_id}`);
    await publishAccessChanges(env);
    expect(await pending()).toEqual([]);
  });

  it("a publication that fails and then succeeds on a retry answers the request's own response", async () => {
    const k = await mintKey({ scopes: ["conversations:read"] });
    await publishAccessChanges(env);
    const { env: flaky } = failingBumps(1);
    const res = await publishingWrites(editKey(k.user_id), [0, 0, 0])(new Request("https://bridge.test/api/x", { method: "PUT" }), flaky, NO_CTX);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ data: { edited: true } });
    expect(await pending()).toEqual([]);
  });

  it("a request that wrote nothing never touches the epochs", async () => {
    const { env: broken, bumps } = failingBumps(Number.POSITIVE_INFINITY);
    const res = await publishingWrites(async () => Response.json({ ok: true }))(new Request("https://bridge.test/api/x"), broken, NO_CTX);
    expect(res.status).toBe(200);
    expect(bumps()).toBe(0);
  });
});

describe("changing the epoch layout during a gradual deploy", () => {
  const OLD = { ACCESS_EPOCH_SHARDS: "8", ACCESS_EPOCH_REPLICAS: "4" };
  const NEW = { ACCESS_EPOCH_SHARDS: "3", ACCESS_EPOCH_REPLICAS: "2" };
  const envWith = (vars: Record<string, string>) => Object.assign({}, env, vars) as unknown as Env;

  /** A subject whose shard differs under the two layouts, so no object is shared by chance. */
  function subjectApart(): `route:${string}` {
    for (;;) {
      const s = `route:${uniq("layout")}` as const;
      if (epochShard(s, 8) !== epochShard(s, 3)) return s;
    }
  }

  it("ACCESS_EPOCH_ALSO_BUMP lists layouts as <shards>x<replicas>; a malformed list is named and bumps nothing more", () => {
    expect(bumpLayouts({})).toEqual([{ shards: 8, replicas: 4 }]);
    expect(bumpLayouts({ ...NEW, ACCESS_EPOCH_ALSO_BUMP: "8x4, 3x2" })).toEqual([
      { shards: 3, replicas: 2 },
      { shards: 8, replicas: 4 },
    ]);
    const errors: string[] = [];
    expect(EPOCH_LAYOUT.also.read({ ACCESS_EPOCH_ALSO_BUMP: "8by4" }, errors)).toEqual([]);
    expect(errors).toEqual([expect.stringContaining("ACCESS_EPOCH_ALSO_BUMP must list layouts")]);
    expect(bumpLayouts({ ACCESS_EPOCH_ALSO_BUMP: "0x4" })).toEqual([{ shards: 8, replicas: 4 }]);
  });

  it("without it, a writer of the new layout leaves readers of the old one stale (the hazard)", async () => {
    const s = subjectApart();
    const before = await readEpoch(envWith(OLD), s);
    await bumpEpochs(envWith(NEW), [s]);
    expect(await readEpoch(envWith(OLD), s)).toBe(before);
  });

  it("step 1 (old layout, also the new) and step 2 (new layout, also the old): every writer reaches readers of either layout", async () => {
    const step1 = envWith({ ...OLD, ACCESS_EPOCH_ALSO_BUMP: "3x2" });
    const step2 = envWith({ ...NEW, ACCESS_EPOCH_ALSO_BUMP: "8x4" });
    for (const writer of [step1, step2]) {
      const s = subjectApart();
      const oldBefore = await readEpoch(envWith(OLD), s);
      const newBefore = await readEpoch(envWith(NEW), s);
      await bumpEpochs(writer, [s]);
      expect(await readEpoch(envWith(OLD), s)).not.toBe(oldBefore);
      expect(await readEpoch(envWith(NEW), s)).not.toBe(newBefore);
      // Every replica of either layout counts the bump, whichever one an isolate reads.
      for (const [shards, replicas] of [
        [8, 4],
        [3, 2],
      ]) {
        for (let r = 0; r < replicas; r++) {
          const replica = env.ACCESS_EPOCHS.get(env.ACCESS_EPOCHS.idFromName(`${epochShard(s, shards)}/${r}`));
          expect((await replica.read([s]))[0]).toMatch(/\/1$/);
        }
      }
    }
  });
});

/**
 * The fleet lock: the MarketplaceLock object's verbs, and the doors while another
 * holder has it: every marketplace write answers the retriable 503 (`marketplace_locked`, `Retry-After`),
 * reads and previews go on, the store gate's 501 comes first, a lapsed lease frees the lock, and a
 * door releases it however it ends.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { marketplaceLockStub } from "../../src/marketplace/rpc";
import { BASE, admin, call, fetchWithEnv } from "../helpers/http";

const M = "/api/marketplace";
const lock = () => marketplaceLockStub(env);
const HOLDER = "test-holder";

afterEach(async () => {
  await lock().release(HOLDER);
});

describe("the MarketplaceLock object", () => {
  it("one holder at a time; renew and release only by the holder; a lease lapses", async () => {
    const taken = await lock().acquire(HOLDER, "test", 60_000);
    expect(taken).toMatchObject({ ok: true, lease: { holder: HOLDER, operation: "test" } });
    const refused = await lock().acquire("someone-else", "install x", 60_000);
    expect(refused.ok).toBe(false);
    expect(refused.ok ? 0 : refused.retry_after_ms).toBeGreaterThan(59_000);
    expect(await lock().renew("someone-else", 1000)).toBeNull();
    expect(await lock().release("someone-else")).toBe(false);
    expect((await lock().current())?.holder).toBe(HOLDER);
    expect(await lock().release(HOLDER)).toBe(true);
    expect(await lock().current()).toBeNull();

    await lock().acquire(HOLDER, "test", 30);
    await new Promise((r) => setTimeout(r, 60));
    expect(await lock().current()).toBeNull();
    expect(await lock().renew(HOLDER, 1000)).toBeNull();
    expect((await lock().acquire("next", "test", 1000)).ok).toBe(true);
    await lock().release("next");
  });

  it("keeps the lease in the object's SQLite", async () => {
    await lock().acquire(HOLDER, "stored", 60_000);
    const stub = env.MARKETPLACE_LOCK.get(env.MARKETPLACE_LOCK.idFromName("fleet"));
    const rows = await runInDurableObject(stub, (_instance, state) => state.storage.sql.exec("SELECT holder, operation FROM lease").toArray());
    expect(rows).toEqual([{ holder: HOLDER, operation: "stored" }]);
  });
});

describe("the doors while the lock is held elsewhere", () => {
  const writes: Array<[string, unknown]> = [
    [`${M}/install`, { ref: "examples/greetings" }],
    [`${M}/update`, { ref: "examples/greetings" }],
    [`${M}/uninstall`, { ref: "examples/greetings" }],
    [`${M}/upgrade-all`, undefined],
  ];

  it("every write answers 503 marketplace_locked with Retry-After; reads and preview go on", async () => {
    const key = await admin();
    await lock().acquire(HOLDER, "held by a test", 30_000);
    for (const [path, body] of writes) {
      const r = await call("POST", path, { key, body });
      expect(r.status, path).toBe(503);
      expect(Object.keys(r.body)).toEqual(["error", "code"]);
      expect(r.body.code).toBe("marketplace_locked");
      expect(r.body.error).toContain("lock");
      const retry = Number(r.headers.get("retry-after"));
      expect(retry).toBeGreaterThanOrEqual(1);
      expect(retry).toBeLessThanOrEqual(30);
    }
    expect((await call("GET", `${M}/installed`, { key })).status).toBe(200);
    expect((await call("GET", `${M}/search`, { key })).status).toBe(200);
    expect((await call("POST", `${M}/install/preview`, { key, body: { ref: "examples/greetings" } })).status).toBe(200);
    // The store gate comes before the lock.
    const noStore = await fetchWithEnv(
      { ...env, MARKETPLACE_STORE_URL: "" },
      new Request(`${BASE}${M}/upgrade-all`, { method: "POST", headers: { "x-api-key": key } }),
    );
    expect(noStore.status).toBe(501);
    // Nothing was installed meanwhile, and the holder still has it.
    expect((await call("GET", `${M}/installed`, { key })).body.data.total).toBe(0);
    expect((await lock().current())?.holder).toBe(HOLDER);
  });

  it("a holder that died frees the lock when its lease lapses", async () => {
    const key = await admin();
    await lock().acquire(HOLDER, "a dead holder", 40);
    await new Promise((r) => setTimeout(r, 80));
    const r = await call("POST", `${M}/install`, { key, body: { ref: "examples/greetings" } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect((await call("POST", `${M}/uninstall`, { key, body: { ref: "examples/greetings" } })).status).toBe(200);
  });

  it("a door releases the lock whether it succeeds or is refused", async () => {
    const key = await admin();
    expect((await call("POST", `${M}/install`, { key, body: { ref: "examples/nothing-here" } })).status).toBe(404);
    expect(await lock().current()).toBeNull();
    expect((await call("POST", `${M}/uninstall`, { key, body: { ref: "examples/greetings" } })).status).toBe(404);
    expect(await lock().current()).toBeNull();
    expect((await call("POST", `${M}/upgrade-all`, { key })).status).toBe(200);
    expect(await lock().current()).toBeNull();
  });
});

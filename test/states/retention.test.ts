/**
 * Retention: records past their state's retention_days read as absent and are swept by
 * `POST /api/state-retention/prune` (admin) and by the cron pass, which runs the same sweep.
 */
import { createExecutionContext, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import worker from "../../src/index";
import { admin, call, mintKey, uniq } from "../helpers/http";

const SCHEMA = { type: "object", properties: { n: { type: "integer" } } };

/** Moves a record's expiry into the past, as if its retention had run out. */
async function age(state: string) {
  await runInDurableObject(env.STATE_STORES.get(env.STATE_STORES.idFromName(state)), (_o, s) => {
    s.storage.sql.exec("UPDATE records SET expires_at = 1 WHERE expires_at IS NOT NULL");
  });
}

async function seeded(retention: number | null) {
  const key = await admin();
  const state = uniq("ret").toLowerCase();
  await call("PUT", `/api/states/${state}`, { key, body: { schema: SCHEMA, subject_kinds: ["thing"], retention_days: retention } });
  const url = (k: string) => `/api/states/${state}/records/tool/echo/thing/${k}`;
  for (const k of ["a", "b"]) expect((await call("PUT", url(k), { key, body: { n: 1 } })).status).toBe(200);
  return { key, state, url };
}

describe("state retention", () => {
  it("the prune door sweeps expired records and reports the counts; records without retention stay", async () => {
    const kept = await seeded(null);
    const { key, state, url } = await seeded(30);
    await age(state);
    await age(kept.state);
    // Expired records read as absent before any sweep.
    expect((await call("GET", url("a"), { key })).body.data).toBeNull();
    const pruned = await call("POST", "/api/state-retention/prune", { key });
    expect(pruned.status).toBe(200);
    expect(pruned.body.data.by_state[state]).toBe(1);
    expect(pruned.body.data.by_state[kept.state]).toBeUndefined();
    expect((await call("GET", `/api/states/${state}/stats`, { key })).body.data.records).toBe(0);
    expect((await call("GET", `/api/states/${kept.state}/stats`, { key })).body.data.records).toBe(2);
    const nonAdmin = await mintKey({ scopes: ["states"] });
    expect((await call("POST", "/api/state-retention/prune", { key: nonAdmin.key })).status).toBe(403);
  });

  it("the cron pass runs the same sweep", async () => {
    const { key, state } = await seeded(1);
    await age(state);
    const ctx = createExecutionContext();
    await worker.scheduled({ scheduledTime: Date.now(), cron: "*/15 * * * *", noRetry() {} } as ScheduledController, env, ctx);
    await waitOnExecutionContext(ctx);
    expect((await call("GET", `/api/states/${state}/stats`, { key })).body.data.records).toBe(0);
  });
});

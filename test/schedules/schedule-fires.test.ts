/**
 * Schedule fires (docs/schedules.md "Fires", "Missed fires"), driven through the
 * object's alarm work with a fake clock (`parts.alarm.runAt(now)` inside runInDurableObject; the alarm itself
 * passes the real clock): each fire is a background tool run as the bound key with its own record
 * and listing row; the live key is re-checked at each fire, so grant loss or a re-minted key makes
 * the fire's run `denied` (recorded); after downtime one catch-up fire; a deleted schedule fires
 * nothing; a fire recorded but not yet submitted when the object restarted is submitted once.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { recordAlarm } from "../../src/schedules/schedule-store";
import { admin, call, mintKey, uniq } from "../helpers/http";
import { endedRun, indexRow, scheduleObject } from "../tool-runs/helpers";
import { must } from "../../src/platform/must";

const DAY = 86_400_000;

async function daily(opts: { key?: { user_id: string }; message?: string } = {}) {
  const k = opts.key ?? (await mintKey({ scopes: ["tool:echo"] }));
  const name = uniq("daily");
  const r = await call("POST", "/api/schedules", {
    key: await admin(),
    body: { tool_name: "echo", tool_kwargs: { message: opts.message ?? "fired" }, schedule_kwargs: { cron: "0 3 * * *" }, execution_key: k.user_id, name },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return { name, key: k, next: Date.parse(r.body.data.schedule.next_fire_at) };
}

/** Runs the alarm's work at `now` (fake) and answers the schedule as its object holds it. */
async function tickAt(name: string, now: number) {
  return runInDurableObject(scheduleObject(name), async (instance, state) => {
    await instance.parts.alarm.runAt(now);
    return { state: await instance.read(), alarm: await state.storage.getAlarm() };
  });
}

describe("a fire", () => {
  it("is a background tool run as the bound key, listed and readable, and moves the schedule to its next slot", async () => {
    const { name, key, next } = await daily();
    const { state, alarm } = await tickAt(name, next + 2000);
    expect(state).toMatchObject({ fires: 1, next_fire_at: next + DAY, last_fire_at: next + 2000 });
    expect(alarm).toBe(next + DAY);
    const fire = must(state, "state").recent_fires[0];
    expect(fire).toMatchObject({ slot_at: next, catch_up: false, skipped: 0 });
    const run = await endedRun(must(fire.run_id, "fire.run_id"));
    expect(run).toMatchObject({
      status: "succeeded",
      result: "fired",
      caller: key.user_id,
      origin: "schedule",
      schedule_name: name,
      slot_at: new Date(next).toISOString(),
    });
    expect(await indexRow(must(fire.run_id, "fire.run_id"))).toMatchObject({ origin: "schedule", schedule_name: name, status: "succeeded" });
    const listed = (await call("GET", "/api/tool-runs?tool_name=echo&pageSize=200", { key: await admin() })).body.data.items;
    expect(listed.find((i: any) => i.run_id === fire.run_id)).toMatchObject({ origin: "schedule", schedule_name: name });
    // The listing mirror follows the fire.
    const row = (await call("GET", "/api/schedules?pageSize=200", { key: await admin() })).body.data.items.find((s: any) => s.name === name);
    expect(row).toMatchObject({ fires: 1, last_run_id: fire.run_id, next_fire_at: new Date(next + DAY).toISOString() });
    // The next slot fires again, a day later.
    const second = await tickAt(name, next + DAY + 500);
    expect(second.state).toMatchObject({ fires: 2, next_fire_at: next + 2 * DAY });
    expect(must(second.state, "second.state").recent_fires.map((f) => f.slot_at)).toEqual([next + DAY, next]);
  });

  it("an alarm before the slot fires nothing and keeps the alarm", async () => {
    const { name, next } = await daily();
    const { state, alarm } = await tickAt(name, next - 60_000);
    expect(state).toMatchObject({ fires: 0, next_fire_at: next, recent_fires: [] });
    expect(alarm).toBe(next);
  });
});

describe("missed fires after downtime", () => {
  it("one catch-up fire for the latest missed slot, the rest skipped, then the next regular slot", async () => {
    const { name, next } = await daily();
    const now = next + 3 * DAY + 2 * 3_600_000;
    const { state, alarm } = await tickAt(name, now);
    expect(must(state, "state").fires).toBe(1);
    expect(must(state, "state").recent_fires).toHaveLength(1);
    expect(must(state, "state").recent_fires[0]).toMatchObject({ slot_at: next + 3 * DAY, catch_up: true, skipped: 3, fired_at: now });
    expect(alarm).toBe(next + 4 * DAY);
    expect((await endedRun(must(must(state, "state").recent_fires[0].run_id, "the newest fire's run_id"))).status).toBe("succeeded");
    const view = (await call("GET", "/api/schedules?pageSize=200", { key: await admin() })).body.data.items.find((s: any) => s.name === name);
    expect(view.next_fire_at).toBe(new Date(next + 4 * DAY).toISOString());
  });

  it("a missed slot older than the catch-up window (one day) is skipped without a fire", async () => {
    // A daily job always has a slot less than a day old once it is due; a yearly one shows the window.
    const name = uniq("yearly");
    const k = await mintKey({ scopes: ["tool:echo"] });
    const r = await call("POST", "/api/schedules", {
      key: await admin(),
      body: { tool_name: "echo", tool_kwargs: { message: "y" }, schedule_kwargs: { cron: "0 0 1 1 *" }, execution_key: k.user_id, name },
    });
    const slot = Date.parse(r.body.data.schedule.next_fire_at);
    const { state, alarm } = await tickAt(name, slot + 2 * DAY);
    expect(must(state, "state").fires).toBe(0);
    expect(must(state, "state").recent_fires[0]).toMatchObject({ run_id: null, slot_at: null, skipped: 1, catch_up: false });
    expect(new Date(must(alarm, "alarm")).getUTCFullYear()).toBe(new Date(slot).getUTCFullYear() + 1);
    expect(must(await env.DB.prepare("SELECT COUNT(*) AS n FROM tool_runs WHERE schedule_name = ?").bind(name).first<{ n: number }>(), "the row").n).toBe(0);
  });
});

describe("the bound key is re-checked at every fire", () => {
  it("a grant lost after creation: the fire's run is denied and recorded", async () => {
    const k = await mintKey({ scopes: ["tool:echo", "tools:read"] });
    const { name, next } = await daily({ key: k });
    const narrowed = await call("POST", `/api/auth/api-keys/${k.user_id}/scopes`, { key: await admin(), body: { remove: ["tool:echo"] } });
    expect(narrowed.status, JSON.stringify(narrowed.body)).toBe(200);
    const { state } = await tickAt(name, next + 1000);
    const run = await endedRun(must(must(state, "state").recent_fires[0].run_id, "the newest fire's run_id"));
    expect(run).toMatchObject({ status: "failed", error_kind: "denied", origin: "schedule", result: null });
    expect(run.error).toMatch(/may not run tool echo/);
    expect(await indexRow(run.run_id)).toMatchObject({ status: "failed", error_kind: "denied" });
    // The schedule stays and keeps its slots: restoring the grant makes the next fire run.
    await call("POST", `/api/auth/api-keys/${k.user_id}/scopes`, { key: await admin(), body: { add: ["tool:echo"] } });
    const again = await tickAt(name, next + DAY + 1000);
    expect((await endedRun(must(must(again.state, "again.state").recent_fires[0].run_id, "the newest fire's run_id"))).status).toBe("succeeded");
  });

  it("a key revoked and re-minted under the same user_id no longer satisfies the binding", async () => {
    const user_id = uniq("reminted");
    const k = await mintKey({ user_id, scopes: ["tool:echo"] });
    const { name, next } = await daily({ key: k });
    await call("DELETE", `/api/auth/api-keys/${user_id}`, { key: await admin() });
    await mintKey({ user_id, scopes: ["tool:echo"] });
    const { state } = await tickAt(name, next + 1000);
    const run = await endedRun(must(must(state, "state").recent_fires[0].run_id, "the newest fire's run_id"));
    expect(run).toMatchObject({ status: "failed", error_kind: "denied", error: "execution key was re-minted; re-bind the route" });
  });
});

describe("deleting", () => {
  it("stops fires: the alarm work finds nothing and stores nothing", async () => {
    const { name, next } = await daily();
    expect((await call("DELETE", `/api/schedules/${name}`, { key: await admin() })).status).toBe(200);
    const before = await env.DB.prepare("SELECT COUNT(*) AS n FROM tool_runs WHERE schedule_name = ?").bind(name).first<{ n: number }>();
    const after = await runInDurableObject(scheduleObject(name), async (instance, state) => {
      await instance.parts.alarm.runAt(next + 1000);
      return {
        state: await instance.read(),
        alarm: await state.storage.getAlarm(),
        tables: state.storage.sql.exec("SELECT name FROM sqlite_master WHERE type = 'table'").toArray().length,
      };
    });
    expect(after).toEqual({ state: null, alarm: null, tables: 0 });
    expect(must(await env.DB.prepare("SELECT COUNT(*) AS n FROM tool_runs WHERE schedule_name = ?").bind(name).first<{ n: number }>(), "the row").n).toBe(
      must(before, "before").n,
    );
  });
});

describe("restart between recording a fire and submitting its run", () => {
  it("the next alarm submits the recorded fire's run once, with its slot", async () => {
    const { name, next } = await daily({ message: "late" });
    const runId = crypto.randomUUID();
    // What a restart leaves: the fire recorded (unsubmitted), the schedule moved on.
    await runInDurableObject(scheduleObject(name), (_o, state) =>
      recordAlarm(state.storage.sql, { run_id: runId, slot_at: next, fired_at: next + 10, catch_up: false, skipped: 0 }, next + DAY),
    );
    expect(await indexRow(runId)).toBeNull();
    await tickAt(name, next + 20);
    expect(await endedRun(runId)).toMatchObject({ status: "succeeded", result: "late", slot_at: new Date(next).toISOString(), schedule_name: name });
    // Submitted once: a further alarm does not submit it again (submitting is idempotent anyway).
    const { state } = await tickAt(name, next + 30);
    expect(must(state, "state").recent_fires.filter((f) => f.run_id === runId)).toHaveLength(1);
    expect(must(await env.DB.prepare("SELECT COUNT(*) AS n FROM tool_runs WHERE run_id = ?").bind(runId).first<{ n: number }>(), "the row").n).toBe(1);
  });
});

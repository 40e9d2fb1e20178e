/**
 * Schedules pause while TOOL_RUNS_STORE_URL is unset (docs/schedules.md "Settings"): set through
 * the runtime settings overlay, which this isolate's objects read at once, a fire's due slot is
 * skipped and counted, no run is submitted, and the schedule re-arms for its next slot; with the
 * store back, fires resume.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { admin, call, mintKey, uniq } from "../helpers/http";
import { scheduleObject } from "../tool-runs/helpers";
import { must } from "../../src/platform/must";

const DAY = 86_400_000;

afterEach(async () => {
  await call("POST", "/api/config/env", { key: await admin(), body: { unset: ["TOOL_RUNS_STORE_URL"] } });
});

describe("a schedule without the tool-runs store", () => {
  it("skips its due slot, submits nothing, and resumes once the store is back", async () => {
    const k = await mintKey({ scopes: ["tool:echo"] });
    const name = uniq("paused");
    const r = await call("POST", "/api/schedules", {
      key: await admin(),
      body: { tool_name: "echo", tool_kwargs: { message: "p" }, schedule_kwargs: { cron: "0 3 * * *" }, execution_key: k.user_id, name },
    });
    expect(r.status).toBe(200);
    const next = Date.parse(r.body.data.schedule.next_fire_at);
    const off = await call("POST", "/api/config/env", { key: await admin(), body: { set: { TOOL_RUNS_STORE_URL: "" } } });
    expect(off.status, JSON.stringify(off.body)).toBe(200);
    expect((await call("GET", "/api/schedules", { key: await admin() })).body).toMatchObject({ code: "tool-runs-not-configured" });
    const tick = (now: number) =>
      runInDurableObject(scheduleObject(name), async (instance, state) => {
        await instance.parts.alarm.runAt(now);
        return { state: await instance.read(), alarm: await state.storage.getAlarm() };
      });
    const paused = await tick(next + 1000);
    expect(must(paused.state, "paused.state").fires).toBe(0);
    expect(must(paused.state, "paused.state").recent_fires[0]).toMatchObject({ run_id: null, skipped: 1 });
    expect(paused.alarm).toBe(next + DAY);
    expect(must(await env.DB.prepare("SELECT COUNT(*) AS n FROM tool_runs WHERE schedule_name = ?").bind(name).first<{ n: number }>(), "the row").n).toBe(0);
    await call("POST", "/api/config/env", { key: await admin(), body: { unset: ["TOOL_RUNS_STORE_URL"] } });
    const resumed = await tick(next + DAY + 1000);
    expect(must(resumed.state, "resumed.state").fires).toBe(1);
  });
});

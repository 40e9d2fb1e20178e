/**
 * The schedules doors (docs/schedules.md): create in both spellings, with a
 * timezone; identical specs update in place; run-once; pass-role binding and the key's run grant
 * at creation; listing, deletion, restricted callers, the store gate and the server clock.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { BASE, admin, call, fetchWithEnv, mintKey, uniq } from "../helpers/http";
import { endedRun, scheduleObject } from "../tool-runs/helpers";

const create = async (body: Record<string, unknown>, key?: string) => call("POST", "/api/schedules", { key: key ?? (await admin()), body });

async function echoKey() {
  return mintKey({ scopes: ["tool:echo"] });
}

describe("POST /api/schedules", () => {
  it("creates a cron schedule bound to a key, arms its object for the next slot and lists it", async () => {
    const k = await echoKey();
    const r = await create({ tool_name: "echo", tool_kwargs: { message: "tick" }, schedule_kwargs: { cron: "*/5 * * * *" }, execution_key: k.user_id });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const { name, created, once, schedule, run_id } = r.body.data;
    expect({ created, once, run_id }).toEqual({ created: true, once: false, run_id: null });
    expect(name).toMatch(/^echo_[0-9a-f]{12}$/);
    expect(schedule).toMatchObject({
      name,
      tool_name: "echo",
      tool_kwargs: { message: "tick" },
      schedule_kwargs: { cron: "*/5 * * * *" },
      cron: "*/5 * * * *",
      timezone: "UTC",
      execution_key: k.user_id,
      execution_key_fingerprint: k.fingerprint,
      created_by: "root",
      fires: 0,
      last_fire_at: null,
      last_run_id: null,
      recent_fires: [],
    });
    const next = Date.parse(schedule.next_fire_at);
    expect(next).toBeGreaterThan(Date.now());
    expect(next - Date.now()).toBeLessThanOrEqual(5 * 60_000);
    expect(new Date(next).getUTCMinutes() % 5).toBe(0);
    const alarm = await runInDurableObject(scheduleObject(name), (_o, state) => state.storage.getAlarm());
    expect(alarm).toBe(next);
    const list = await call("GET", "/api/schedules?pageSize=200", { key: await admin() });
    const { recent_fires, ...listed } = schedule;
    expect(list.body.data.items.find((s: any) => s.name === name)).toEqual(listed);
  });

  it("the crontab fields and a timezone: slots are computed in that zone", async () => {
    const k = await echoKey();
    const r = await create({
      tool_name: "echo",
      tool_kwargs: { message: "morning" },
      schedule_kwargs: { minute: 0, hour: 9, day_of_week: "mon-fri", timezone: "America/New_York" },
      execution_key: k.user_id,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const s = r.body.data.schedule;
    expect(s).toMatchObject({
      cron: "0 9 * * mon-fri",
      timezone: "America/New_York",
      schedule_kwargs: { minute: 0, hour: 9, day_of_week: "mon-fri", timezone: "America/New_York" },
    });
    const next = new Date(s.next_fire_at);
    const local = new Intl.DateTimeFormat("en-US", {
      timeZone: "America/New_York",
      hour: "numeric",
      minute: "numeric",
      weekday: "short",
      hour12: false,
    }).format(next);
    expect(local).toMatch(/^(Mon|Tue|Wed|Thu|Fri) 09:00$/);
  });

  it("re-adding an identical spec updates it in place (another key re-binds it); a given name is replaced the same way", async () => {
    const a = await echoKey();
    const b = await echoKey();
    const spec = { tool_name: "echo", tool_kwargs: { message: uniq("same") }, schedule_kwargs: { cron: "0 4 * * *" } };
    const first = await create({ ...spec, execution_key: a.user_id });
    const again = await create({ ...spec, schedule_kwargs: { minute: 0, hour: 4 }, execution_key: b.user_id });
    expect(again.status).toBe(200);
    expect(again.body.data).toMatchObject({ name: first.body.data.name, created: false });
    expect(again.body.data.schedule).toMatchObject({
      execution_key: b.user_id,
      execution_key_fingerprint: b.fingerprint,
      created_at: first.body.data.schedule.created_at,
    });
    const named = uniq("nightly");
    expect((await create({ ...spec, execution_key: a.user_id, name: named })).body.data).toMatchObject({ name: named, created: true });
    const replaced = await create({
      tool_name: "echo",
      tool_kwargs: { message: "other" },
      schedule_kwargs: { cron: "30 1 * * *" },
      execution_key: a.user_id,
      name: named,
    });
    expect(replaced.body.data).toMatchObject({ name: named, created: false, schedule: { cron: "30 1 * * *", tool_kwargs: { message: "other" } } });
    const listed = (await call("GET", "/api/schedules?pageSize=200", { key: await admin() })).body.data.items.filter(
      (s: any) => s.name === named || s.name === first.body.data.name,
    );
    expect(listed).toHaveLength(2);
  });

  it("empty schedule_kwargs runs the tool once, now, as the bound key, and keeps no schedule", async () => {
    const k = await echoKey();
    const before = (await call("GET", "/api/schedules?pageSize=200", { key: await admin() })).body.data.total;
    const r = await create({ tool_name: "echo", tool_kwargs: { message: "now" }, schedule_kwargs: {}, execution_key: k.user_id });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data).toMatchObject({ name: null, created: true, once: true, schedule: null, run_id: expect.any(String) });
    const run = await endedRun(r.body.data.run_id);
    expect(run).toMatchObject({ status: "succeeded", result: "now", caller: k.user_id, origin: "schedule" });
    expect((await call("GET", "/api/schedules?pageSize=200", { key: await admin() })).body.data.total).toBe(before);
  });

  it("refuses bad input with 400 naming the field, never the value, and an unknown tool with 404", async () => {
    const k = await echoKey();
    const base = { tool_name: "echo", tool_kwargs: { message: "x" }, execution_key: k.user_id };
    const cases: Array<[Record<string, unknown>, number, RegExp]> = [
      [{ ...base, schedule_kwargs: { cron: "* * * * *", hour: 1 } }, 400, /schedule_kwargs.*not both/],
      [{ ...base, schedule_kwargs: { cron: "99 * * * SECRETWORD" } }, 400, /schedule_kwargs\.cron: not a valid/],
      [{ ...base, schedule_kwargs: { cron: "* * * * *", timezone: "Atlantis/Capital" } }, 400, /schedule_kwargs\.timezone/],
      [{ ...base, schedule_kwargs: { cron: "0 0 30 2 *" } }, 400, /never fires/],
      [{ ...base, schedule_kwargs: { seconds: 5 } }, 400, /schedule_kwargs/],
      [{ ...base, schedule_kwargs: { cron: "* * * * *" }, colour: "red" }, 400, /colour/],
      [{ ...base, schedule_kwargs: { cron: "* * * * *" }, name: "bad name!" }, 400, /name/],
      [{ ...base, tool_kwargs: { message: 777 }, schedule_kwargs: { cron: "* * * * *" } }, 400, /tool_kwargs: \/message: type/],
      [{ ...base, schedule_kwargs: { cron: "* * * * *" }, execution_key: undefined }, 400, /execution_key/],
      [{ ...base, tool_name: uniq("nope"), schedule_kwargs: { cron: "* * * * *" } }, 404, /tool not found/],
    ];
    for (const [body, status, text] of cases) {
      const r = await create(body);
      expect(r.status, JSON.stringify(body)).toBe(status);
      expect(r.body.error, JSON.stringify(body)).toMatch(text);
      expect(r.body.error).not.toMatch(/SECRETWORD|Atlantis|777|red/);
    }
  });

  it("binds the execution key by the pass-role rule and requires its run grant", async () => {
    const caller = await mintKey({ scopes: ["schedules:write", "tool:echo"] });
    const owned = await mintKey({ scopes: ["tool:echo"], owner_user_id: caller.user_id });
    const foreign = await echoKey();
    const spec = { tool_name: "echo", tool_kwargs: { message: "x" }, schedule_kwargs: { cron: "0 5 * * *" } };
    // Its own identity and a key it owns bind.
    expect((await create({ ...spec, execution_key: caller.user_id }, caller.key)).status).toBe(200);
    expect((await create({ ...spec, execution_key: owned.user_id, name: uniq("owned") }, caller.key)).status).toBe(200);
    // A foreign key and an absent one: the same uniform 403 for a non-admin.
    for (const key of [foreign.user_id, uniq("absent")]) {
      const r = await create({ ...spec, execution_key: key, name: uniq("x") }, caller.key);
      expect(r.status).toBe(403);
      expect(r.body).toEqual({ error: "Forbidden" });
    }
    // An admin binds any existing key; an absent one is 404.
    expect((await create({ ...spec, execution_key: uniq("absent") })).status).toBe(404);
    // A condition that reads .request cannot hold at a fire.
    const conditioned = await mintKey({ scopes: ["tool:echo"], condition: '.request.path == "/x"' });
    const c = await create({ ...spec, execution_key: conditioned.user_id });
    expect(c.status).toBe(400);
    expect(c.body.error).toMatch(/execution_key/);
    // A key that may not run the tool is refused at creation.
    const other = await mintKey({ scopes: ["tool:set_conversation_mode"] });
    const g = await create({ ...spec, execution_key: other.user_id });
    expect(g.status).toBe(403);
    expect(g.body.error).toBe("execution_key may not run this tool");
    // Maintenance tools: an admin key only.
    const nonAdmin = await mintKey({ scopes: ["tools:write"] });
    expect((await create({ tool_name: "maintenance.prune_expired", schedule_kwargs: { cron: "0 * * * *" }, execution_key: nonAdmin.user_id })).status).toBe(
      403,
    );
    expect((await create({ tool_name: "maintenance.prune_expired", schedule_kwargs: { cron: "0 * * * *" }, execution_key: "root" })).status).toBe(200);
  });
});

describe("DELETE /api/schedules/{schedule_name}", () => {
  it("removes the schedule, its alarm and its listing row; a second delete is 404", async () => {
    const k = await echoKey();
    const name = uniq("gone");
    await create({ tool_name: "echo", tool_kwargs: { message: "x" }, schedule_kwargs: { cron: "* * * * *" }, execution_key: k.user_id, name });
    const key = await admin();
    const r = await call("DELETE", `/api/schedules/${name}`, { key });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({ removed: true, name });
    const left = await runInDurableObject(scheduleObject(name), async (_o, state) => ({
      alarm: await state.storage.getAlarm(),
      tables: state.storage.sql.exec("SELECT name FROM sqlite_master WHERE type = 'table'").toArray().length,
    }));
    expect(left).toEqual({ alarm: null, tables: 0 });
    expect((await call("GET", "/api/schedules?pageSize=200", { key })).body.data.items.some((s: any) => s.name === name)).toBe(false);
    expect((await call("DELETE", `/api/schedules/${name}`, { key })).status).toBe(404);
    expect((await call("DELETE", "/api/schedules/bad%20name", { key })).status).toBe(400);
  });
});

describe("restricted callers", () => {
  it("list only their own schedules and may not replace or delete another identity's", async () => {
    const owner = await mintKey({ scopes: ["schedules:write", "tool:echo"] });
    const owned = await mintKey({ scopes: ["schedules:write", "tool:echo"], owner_user_id: owner.user_id });
    const theirs = uniq("theirs");
    const mine = uniq("mine");
    expect(
      (
        await create(
          { tool_name: "echo", tool_kwargs: { message: "o" }, schedule_kwargs: { cron: "0 6 * * *" }, execution_key: owner.user_id, name: theirs },
          owner.key,
        )
      ).status,
    ).toBe(200);
    expect(
      (
        await create(
          { tool_name: "echo", tool_kwargs: { message: "m" }, schedule_kwargs: { cron: "0 6 * * *" }, execution_key: owned.user_id, name: mine },
          owned.key,
        )
      ).status,
    ).toBe(200);
    const listed = await call("GET", "/api/schedules?pageSize=200", { key: owned.key });
    expect(listed.body.data.items.map((s: any) => s.name)).toEqual([mine]);
    expect(
      (
        await create(
          { tool_name: "echo", tool_kwargs: { message: "x" }, schedule_kwargs: { cron: "0 7 * * *" }, execution_key: owned.user_id, name: theirs },
          owned.key,
        )
      ).status,
    ).toBe(403);
    expect((await call("DELETE", `/api/schedules/${theirs}`, { key: owned.key })).status).toBe(403);
    expect((await call("DELETE", `/api/schedules/${mine}`, { key: owned.key })).status).toBe(200);
    expect((await call("GET", "/api/schedules?pageSize=200", { key: owner.key })).body.data.items.some((s: any) => s.name === theirs)).toBe(true);
  });
});

describe("the store gate and the server clock", () => {
  it("answers 501 tool-runs-not-configured without TOOL_RUNS_STORE_URL; the clock needs no store", async () => {
    const key = await admin();
    const noStore = { ...env, TOOL_RUNS_STORE_URL: "" };
    const send = (method: string, path: string, body?: unknown) =>
      fetchWithEnv(
        noStore,
        new Request(`${BASE}${path}`, {
          method,
          headers: { "x-api-key": key, "content-type": "application/json" },
          body: body ? JSON.stringify(body) : undefined,
        }),
      );
    for (const [method, path, body] of [
      ["POST", "/api/schedules", { tool_name: "echo", tool_kwargs: { message: "x" }, schedule_kwargs: {}, execution_key: "root" }],
      ["GET", "/api/schedules", undefined],
      ["DELETE", "/api/schedules/anything", undefined],
    ] as const) {
      const res = await send(method, path, body);
      expect(res.status, `${method} ${path}`).toBe(501);
      expect(await res.json()).toMatchObject({ code: "tool-runs-not-configured" });
    }
    const clock = await send("GET", "/api/schedules/server-datetime");
    expect(clock.status).toBe(200);
  });

  it("GET /api/schedules/server-datetime answers the UTC clock", async () => {
    const before = Date.now();
    const r = await call("GET", "/api/schedules/server-datetime", { key: await admin() });
    expect(r.status).toBe(200);
    expect(Object.keys(r.body.data).sort()).toEqual(["epoch_ms", "epoch_seconds", "now", "timezone"]);
    expect(r.body.data.timezone).toBe("UTC");
    expect(Date.parse(r.body.data.now)).toBe(r.body.data.epoch_ms);
    expect(r.body.data.epoch_ms).toBeGreaterThanOrEqual(before);
    expect(r.body.data.epoch_seconds).toBe(Math.floor(r.body.data.epoch_ms / 1000));
    const reader = await mintKey({ scopes: ["schedules:read"] });
    expect((await call("GET", "/api/schedules/server-datetime", { key: reader.key })).status).toBe(200);
    expect((await call("POST", "/api/schedules", { key: reader.key, body: {} })).status).toBe(403);
  });
});

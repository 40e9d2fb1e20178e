/**
 * `GET /api/states/{name}/consumers` lists the hooks and schedules whose state_binding names the
 * state, beside configs and presets (test/states/turn-binding.test.ts covers those two); a binding
 * of another state, even one whose name starts alike, is not listed; a restricted caller sees only
 * the hooks and schedules it registered.
 */
import { describe, expect, it } from "vitest";
import { admin, call, mintKey, uniq } from "../helpers/http";

const SCHEMA = { type: "object", properties: { count: { type: "integer" } } };
const binding = (state: string) => ({ states: [{ state, subject_expr: { content: ".who" } }] });

async function declare(name = uniq("bound").toLowerCase()): Promise<string> {
  const r = await call("PUT", `/api/states/${name}`, { key: await admin(), body: { schema: SCHEMA, subject_kinds: ["user"] } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return name;
}

async function hook(name: string, state: string | null, key?: string, executionKey = "root") {
  const body = {
    name,
    topic: uniq("topic").toLowerCase(),
    tool: "echo",
    execution_key: executionKey,
    expr: "{message: .who}",
    ...(state ? { state_binding: binding(state) } : {}),
  };
  const r = await call("POST", "/api/hooks", { key: key ?? (await admin()), body });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
}

async function schedule(name: string, state: string | null, key?: string, executionKey = "root") {
  const body = {
    name,
    tool_name: "echo",
    tool_kwargs: { message: "tick" },
    schedule_kwargs: { cron: "0 3 * * *" },
    execution_key: executionKey,
    ...(state ? { state_binding: binding(state) } : {}),
  };
  const r = await call("POST", "/api/schedules", { key: key ?? (await admin()), body });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
}

const consumers = async (state: string, key?: string) => (await call("GET", `/api/states/${state}/consumers`, { key: key ?? (await admin()) })).body.data;

describe("state consumers: hooks and schedules", () => {
  it("lists the hook and the schedule that bind the state, not those binding another state or none, and drops them once deleted", async () => {
    const key = await admin();
    const state = await declare();
    const other = await declare(`${state}-other`);
    const [boundHook, otherHook, plainHook] = [uniq("hook-a").toLowerCase(), uniq("hook-b").toLowerCase(), uniq("hook-c").toLowerCase()];
    const [boundSchedule, otherSchedule, plainSchedule] = [uniq("sched-a"), uniq("sched-b"), uniq("sched-c")];
    await hook(boundHook, state);
    await hook(otherHook, other);
    await hook(plainHook, null);
    await schedule(boundSchedule, state);
    await schedule(otherSchedule, other);
    await schedule(plainSchedule, null);

    expect(await consumers(state)).toEqual({
      items: [
        { kind: "hook", name: boundHook },
        { kind: "schedule", name: boundSchedule },
      ],
      total: 2,
    });
    expect(await consumers(other)).toEqual({
      items: [
        { kind: "hook", name: otherHook },
        { kind: "schedule", name: otherSchedule },
      ],
      total: 2,
    });

    expect((await call("DELETE", `/api/hooks/${boundHook}`, { key })).status).toBe(200);
    expect((await call("DELETE", `/api/schedules/${boundSchedule}`, { key })).status).toBe(200);
    expect(await consumers(state)).toEqual({ items: [], total: 0 });
  });

  it("a restricted caller sees only the hooks and schedules it registered; an unowned key sees them all", async () => {
    const scopes = ["hooks:write", "schedules:write", "tool:echo", "states:read"];
    const owner = await mintKey({ scopes });
    const mine = await mintKey({ scopes, owner_user_id: owner.user_id });
    const stranger = await mintKey({ scopes, owner_user_id: owner.user_id });
    const state = await declare();
    const [rootHook, myHook, mySchedule] = [uniq("root-hook").toLowerCase(), uniq("my-hook").toLowerCase(), uniq("my-sched")];
    await hook(rootHook, state);
    await hook(myHook, state, mine.key, mine.user_id);
    await schedule(mySchedule, state, mine.key, mine.user_id);

    expect(await consumers(state, mine.key)).toEqual({
      items: [
        { kind: "hook", name: myHook },
        { kind: "schedule", name: mySchedule },
      ],
      total: 2,
    });
    expect(await consumers(state, stranger.key)).toEqual({ items: [], total: 0 });
    const all = await consumers(state, owner.key);
    expect(all.items).toEqual(
      expect.arrayContaining([
        { kind: "hook", name: rootHook },
        { kind: "hook", name: myHook },
        { kind: "schedule", name: mySchedule },
      ]),
    );
    expect(all.total).toBe(3);
  });
});

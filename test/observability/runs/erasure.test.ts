/**
 * Traces go with the rest (spec §4.6): thread forget removes the thread's traces and
 * their index rows, a person erase removes every run attributed to the person (its thread's turns
 * and runs kept by the shards), and record retention removes a turn's trace with its record.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { recordRun } from "../../../src/observability/runs/recorder";
import { allShards, runShard } from "../../../src/shards/rpc";
import { createRoute, send } from "../../helpers/bridge";
import { admin, call, mintKey } from "../../helpers/http";
import { listingCaughtUp } from "../../helpers/listing";
import { makeDue, runAlarm, stubFor } from "../../helpers/threads";
import { declareTool, network } from "../../operator/helpers";
import { read, runsCaughtUp, toolRoute, turn } from "./helpers";
import { must } from "../../../src/platform/must";

const enc = encodeURIComponent;

/** The run traces a thread object holds. */
async function threadTraces(threadId: string): Promise<string[]> {
  return runInDurableObject(stubFor(threadId), (_o, state) =>
    state.storage.sql
      .exec<{ message_id: string }>("SELECT message_id FROM run_traces ORDER BY message_id")
      .toArray()
      .map((r) => r.message_id),
  );
}

describe("thread forget", () => {
  it("removes the thread's traces, their index rows and its load row", async () => {
    const r = await toolRoute("echo");
    const a = await turn(r.name, "one", { user: "forget-me" });
    const b = await turn(r.name, "two", { user: "forget-me" });
    await runsCaughtUp(a.thread_id);
    expect((await threadTraces(a.thread_id)).sort()).toEqual([a.message_id, b.message_id].sort());
    expect((await read(`/api/runs?session=${enc(a.thread_id)}`)).total).toBe(2);
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM thread_loads WHERE thread_id = ?").bind(a.thread_id).first("n")).toBe(1);

    const res = await call("DELETE", `/api/conversations/${r.name}/thread?thread_id=${enc(a.thread_id)}`, { key: await admin() });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(await threadTraces(a.thread_id)).toEqual([]);
    await Promise.all(allShards(env).map((s) => s.flush()));
    expect((await read(`/api/runs?session=${enc(a.thread_id)}`)).total).toBe(0);
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM thread_loads WHERE thread_id = ?").bind(a.thread_id).first("n")).toBe(0);
    expect((await call("GET", `/api/observability/runs/${enc(a.message_id)}/trace`, { key: await admin() })).status).toBe(404);
  });
});

describe("record retention", () => {
  it("a pruned record takes its trace and its index row with it", async () => {
    const r = await toolRoute("echo");
    const t = await turn(r.name, "short-lived", { user: "ret" });
    await runsCaughtUp(t.thread_id);
    expect((await read(`/api/runs?interaction=${enc(t.message_id)}`)).total).toBe(1);
    await makeDue(t.thread_id, "expires_at");
    await runAlarm(t.thread_id);
    expect(await threadTraces(t.thread_id)).toEqual([]);
    await listingCaughtUp(t.thread_id);
    expect((await read(`/api/runs?interaction=${enc(t.message_id)}`)).total).toBe(0);
  });
});

describe("person erase", () => {
  it("removes the person thread's traces and every run attributed to the person", async () => {
    const title = `erase-${crypto.randomUUID().slice(0, 8)}`;
    await declareTool(title, `https://${title}.example/run`);
    network({ [`${title}.example`]: (kwargs) => `tool saw ${kwargs.message}` });
    const k = await mintKey({ scopes: [`tool:${title}`] });
    const route = await createRoute({ door: "api", target_kind: "tool", target_name: title, execution_key: k.user_id, turns_per_hour_override: 1000 });
    const key = await admin();
    expect(
      (await call("PUT", `/api/conversation-configs/tool/${title}`, { key, body: { target_kind: "tool", target_name: title, multichannel: true } })).status,
    ).toBe(200);
    const say = async (who: string, text: string) =>
      (await send(route.name, { external_user_id: who, text, wait_seconds: 10 })).body.data as { message_id: string; thread_id: string; answer: string };
    await say("ida", "hello");
    const code = must((await say("ida", "/link")).answer.match(/LINK-[A-Z0-9]{8}/), "the match")[0];
    await say("jon", code);
    const onPerson = await say("jon", "on the person thread");
    expect(onPerson.thread_id).toMatch(/^bridge:@person:/);
    const personId = onPerson.thread_id.slice("bridge:@person:".length);
    // A run outside the bridge attributed to the person (a tool run on their behalf).
    const outside = crypto.randomUUID();
    await recordRun(env, {
      trace_id: outside,
      kind: "tool_run",
      trigger: "background",
      target: { kind: "tool", name: title, version: null },
      route_name: null,
      thread_id: null,
      interaction_id: outside,
      user_id: personId,
      principal: "root",
      started_at: new Date().toISOString(),
      duration_ms: 1,
      outcome: "ok",
      error: null,
      steps: [],
      input: null,
      output: null,
    });
    await runsCaughtUp(onPerson.thread_id);
    const before = await read(`/api/runs?user=${enc(personId)}`);
    expect(before.items.map((x: { trace_id: string }) => x.trace_id)).toEqual(expect.arrayContaining([onPerson.message_id, outside]));

    const erased = await call("DELETE", `/api/conversations/persons/${personId}`, { key });
    expect(erased.status, JSON.stringify(erased.body)).toBe(200);
    expect(await threadTraces(onPerson.thread_id)).toEqual([]);
    expect(await runShard(env, outside).readTrace(outside, Date.now())).toBeNull();
    await Promise.all(allShards(env).map((s) => s.flush()));
    expect((await read(`/api/runs?user=${enc(personId)}`)).total).toBe(0);
    expect((await read(`/api/runs?session=${enc(onPerson.thread_id)}`)).total).toBe(0);
  });
});

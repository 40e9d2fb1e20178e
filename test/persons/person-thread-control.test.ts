/**
 * A linked person's thread on the mode doors and the operator-send door (spec §3.2,
 * §4.7; bridge-facts §5.3–§5.4): the default mode follows every route the person spans, an
 * override is person-wide, and an operator message goes out through the right route and address.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { personDirectoryStub } from "../../src/persons/rpc";
import { createRoute, send } from "../helpers/bridge";
import { admin, call, mintKey } from "../helpers/http";
import { eventually, rawRows } from "../helpers/threads";
import { declareTool, gate, getMode, network, operatorSend, setMode } from "../operator/helpers";
import { ROUTE_SNAPSHOT_MS } from "../../src/conversations/thread/route-reads";
import { must } from "../../src/platform/must";

/** A multichannel tool target with two api routes, `a` and `b`, and a person linked across them (alice on a, bob on b). */
async function linkedAcrossRoutes(modes: { a?: string; b?: string } = {}) {
  const host = `pmode-${crypto.randomUUID().slice(0, 8)}.example`;
  const title = host.split(".")[0];
  await declareTool(title, `https://${host}/run`);
  const runs: string[] = [];
  let held: { wait: () => Promise<void> } | null = null;
  network({
    [host]: async (kwargs) => {
      runs.push(kwargs.message);
      await held?.wait();
      return `ran ${kwargs.message}`;
    },
  });
  const k = await mintKey({ scopes: [`tool:${title}`] });
  const body = (initial_mode = "agent") => ({
    door: "api",
    target_kind: "tool",
    target_name: title,
    execution_key: k.user_id,
    initial_mode,
    turns_per_hour_override: 1000,
  });
  const a = await createRoute(body(modes.a));
  const bBody = body(modes.b);
  const b = await createRoute(bBody);
  const cfg = await call("PUT", `/api/conversation-configs/tool/${title}`, {
    key: await admin(),
    body: { target_kind: "tool", target_name: title, multichannel: true },
  });
  expect(cfg.status).toBe(200);
  // The two addresses meet the target (each a first contact), then link through the directory.
  const directory = personDirectoryStub(env, "tool", title);
  const target = { kind: "tool" as const, name: title };
  const alice = await directory.ensure({ target, address: { door: "api", address: "root/alice" }, route_name: a.name }, null, Date.now());
  await directory.ensure({ target, address: { door: "api", address: "root/bob" }, route_name: b.name }, null, Date.now());
  const { code } = await directory.mint({ target, address: { door: "api", address: "root/alice" }, route_name: a.name }, Date.now());
  expect((await directory.redeem({ target, address: { door: "api", address: "root/bob" }, route_name: b.name }, "root", code, Date.now())).ok).toBe(true);
  const say = async (routeName: string, who: string, text: string) => {
    const res = await send(routeName, { external_user_id: who, text, wait_seconds: 10 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.data as { answer?: string | null; status: string; thread_id: string; message_id: string };
  };
  const block = (g: { wait: () => Promise<void> }) => (held = g);
  return { title, a, b, bBody, runs, say, block, personThread: `bridge:@person:${alice.person.person_id}`, personId: alice.person.person_id };
}

describe("the mode doors on a person thread", () => {
  it("default agent when every spanned route is agent; an override set from one route reads and rules from the other", async () => {
    const p = await linkedAcrossRoutes();
    expect((await getMode(p.a.name, p.personThread)).body.data).toEqual({ mode: "agent", source: "route" });
    expect((await say(p, "a", "alice", "hello")).answer).toBe("ran hello");

    const set = await setMode(p.a.name, p.personThread, "manual");
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body.data).toEqual({ route_name: p.a.name, thread_id: p.personThread, mode: "manual", source: "thread" });
    expect((await getMode(p.b.name, p.personThread)).body.data).toEqual({ mode: "manual", source: "thread" });
    // The takeover holds on both channels: neither message runs the tool.
    expect((await say(p, "b", "bob", "anyone?")).status).toBe("silent");
    expect((await say(p, "a", "alice", "hello?")).status).toBe("silent");
    expect(p.runs).toEqual(["hello"]);

    expect((await setMode(p.b.name, p.personThread, "agent")).status).toBe(200);
    expect((await say(p, "a", "alice", "back")).answer).toBe("ran back");
  });

  it("defaults to manual when any spanned route is manual (the turn too); a deleted route imposes nothing", async () => {
    const p = await linkedAcrossRoutes({ b: "manual" });
    expect((await getMode(p.a.name, p.personThread)).body.data).toEqual({ mode: "manual", source: "route" });
    expect((await getMode(p.b.name, p.personThread)).body.data).toEqual({ mode: "manual", source: "route" });
    const silent = await say(p, "a", "alice", "via the agent route");
    expect(silent.thread_id).toBe(p.personThread);
    expect(silent.status).toBe("silent");
    expect(p.runs).toEqual([]);

    expect((await call("DELETE", `/api/conversations/${p.b.name}`, { key: await admin() })).status).toBe(200);
    expect((await getMode(p.a.name, p.personThread)).body.data).toEqual({ mode: "agent", source: "route" });
    expect((await say(p, "a", "alice", "now")).answer).toBe("ran now");
  });

  it("a turn that waited past the door's read decides the default from a fresh read of the target's routes", async () => {
    const p = await linkedAcrossRoutes();
    const hold = gate();
    p.block(hold);
    const first = send(p.a.name, { external_user_id: "alice", text: "slow", wait_seconds: 15 });
    await eventually(
      async () => p.runs.length,
      (n) => n === 1,
    );
    const queued = await send(p.a.name, { external_user_id: "alice", text: "queued" });
    expect(queued.status).toBe(202);
    // While it waits, route b turns manual (a re-post), and the door's read of the target's routes grows stale.
    const repost = await call("POST", `/api/conversations/${p.b.name}`, { key: await admin(), body: { ...p.bBody, initial_mode: "manual" } });
    expect(repost.status, JSON.stringify(repost.body)).toBe(200);
    await new Promise((r) => setTimeout(r, ROUTE_SNAPSHOT_MS + 100));
    hold.open();
    expect((await first).status).toBe(200);
    const rows = await eventually(
      () => rawRows(p.personThread),
      (rs) => rs.length === 2 && rs.every((r) => r.turn_state === "done"),
    );
    expect(JSON.parse(rows[1].record)).toMatchObject({ inbound_text: "queued", answer_status: "silent" });
    expect(p.runs).toEqual(["slow"]);
  });

  it("404 on a route the person does not span, or one re-created for another target", async () => {
    const p = await linkedAcrossRoutes();
    const other = await linkedAcrossRoutes();
    expect(await getMode(other.a.name, p.personThread)).toMatchObject({ status: 404, body: { error: "person not found on this route" } });
    expect((await setMode(other.a.name, p.personThread, "manual")).status).toBe(404);
    // Route b, deleted and re-created for another target: the person's address row still names it.
    const key = await admin();
    expect((await call("DELETE", `/api/conversations/${p.b.name}`, { key })).status).toBe(200);
    const k = await mintKey({ scopes: [`tool:${other.title}`] });
    await createRoute({ door: "api", target_kind: "tool", target_name: other.title, execution_key: k.user_id }, p.b.name);
    expect((await getMode(p.b.name, p.personThread)).status).toBe(404);
    expect((await operatorSend(p.b.name, { thread_id: p.personThread, text: "x" })).status).toBe(404);
  });
});

describe("operator send on a person thread", () => {
  async function record(threadId: string, messageId: string) {
    const rows = await eventually(
      () => rawRows(threadId),
      (rs) => rs.some((r) => r.message_id === messageId),
    );
    return JSON.parse(
      must(
        rows.find((r) => r.message_id === messageId),
        "the item found",
      ).record,
    );
  }

  it("without an address answers the newest message's route and address; an explicit address picks its own route", async () => {
    const p = await linkedAcrossRoutes();
    await say(p, "a", "alice", "first from alice");
    await say(p, "b", "bob", "then bob");

    const byNewest = await operatorSend(p.a.name, { thread_id: p.personThread, text: "hi bob" });
    expect(byNewest.status, JSON.stringify(byNewest.body)).toBe(200);
    expect(byNewest.body.data.thread_id).toBe(p.personThread);
    expect(await record(p.personThread, byNewest.body.data.message_id)).toMatchObject({
      route_name: p.b.name,
      client_address: "bob",
      origin: "operator",
      answer: "hi bob",
    });

    // Named from route b, alice's address goes out through route a, where she wrote.
    const toAlice = await operatorSend(p.b.name, { thread_id: p.personThread, text: "hi alice", address: "root/alice" });
    expect(toAlice.status).toBe(200);
    expect(await record(p.personThread, toAlice.body.data.message_id)).toMatchObject({ route_name: p.a.name, client_address: "alice" });
    // The newest record is now the operator's own to alice: the conversation goes on with her.
    const again = await operatorSend(p.a.name, { thread_id: p.personThread, text: "more for alice" });
    expect(await record(p.personThread, again.body.data.message_id)).toMatchObject({ route_name: p.a.name, client_address: "alice" });
    // No turn ran for any of them, and the mode is unchanged.
    expect(p.runs).toEqual(["first from alice", "then bob"]);
    expect((await getMode(p.a.name, p.personThread)).body.data).toEqual({ mode: "agent", source: "route" });
  });

  it("refuses: an address not the person's 400, an empty person thread without an address 400, a route the person does not span 404", async () => {
    const p = await linkedAcrossRoutes();
    const foreign = await operatorSend(p.a.name, { thread_id: p.personThread, text: "x", address: "root/mallory" });
    expect(foreign.status).toBe(400);
    expect(foreign.body.error).toContain("address");
    const empty = await operatorSend(p.a.name, { thread_id: p.personThread, text: "x" });
    expect(empty.status).toBe(400);
    expect(empty.body.error).toContain("address");
    const other = await linkedAcrossRoutes();
    expect((await operatorSend(other.a.name, { thread_id: p.personThread, text: "x", address: "root/alice" })).status).toBe(404);
    expect(await rawRows(p.personThread)).toEqual([]);
    // Naming an address works on the empty thread.
    expect((await operatorSend(p.a.name, { thread_id: p.personThread, text: "hello", address: "root/bob" })).status).toBe(200);
  });
});

function say(p: Awaited<ReturnType<typeof linkedAcrossRoutes>>, which: "a" | "b", who: string, text: string) {
  return p.say(p[which].name, who, text);
}

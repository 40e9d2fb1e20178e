/**
 * Pairing turns and the first-contact greeting (decisions §12), through the api door
 * with inline answers: what a participant sees, and that pairing never runs the target.
 */
import { describe, expect, it } from "vitest";
import { PAIRING_REPLIES } from "../../src/persons/pairing";
import { createRoute, send } from "../helpers/bridge";
import { admin, call, mintKey } from "../helpers/http";
import { rawRows } from "../helpers/threads";
import { declareTool, network } from "../operator/helpers";
import { must } from "../../src/platform/must";

async function setup(config: Record<string, unknown>, route: Record<string, unknown> = {}) {
  const host = `pairing-${crypto.randomUUID().slice(0, 8)}.example`;
  const title = host.split(".")[0];
  await declareTool(title, `https://${host}/run`);
  const runs: any[] = [];
  network({ [host]: (kwargs) => (runs.push(kwargs), `tool saw ${kwargs.message}`) });
  const k = await mintKey({ scopes: [`tool:${title}`] });
  const r = await createRoute({ door: "api", target_kind: "tool", target_name: title, execution_key: k.user_id, turns_per_hour_override: 1000, ...route });
  const put = await call("PUT", `/api/conversation-configs/tool/${title}`, {
    key: await admin(),
    body: { target_kind: "tool", target_name: title, multichannel: true, ...config },
  });
  expect(put.status, JSON.stringify(put.body)).toBe(200);
  const say = async (who: string, text: string) => {
    const res = await send(r.name, { external_user_id: who, text, wait_seconds: 10 });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body.data as { answer: string | null; status: string; thread_id: string };
  };
  return { route: r, runs, say };
}

describe("the first-contact greeting", () => {
  it("is prepended once, with a freshly minted code; a later message is not greeted", async () => {
    const { say } = await setup({ greeting_template: "Welcome! Your code: {pairing_code}" });
    const first = await say("ann", "hello");
    expect(first.answer).toMatch(/^Welcome! Your code: LINK-[A-Z0-9]{8}\n\ntool saw hello$/);
    expect((await say("ann", "again")).answer).toBe("tool saw again");
  });

  it("stands alone when the turn is silent (manual mode), and a same-turn /link repeats its code", async () => {
    const manual = await setup({ greeting_template: "Hi {{there}}, code {pairing_code}" }, { initial_mode: "manual" });
    const silent = await manual.say("bo", "anyone?");
    expect(silent.answer).toMatch(/^Hi \{there\}, code LINK-[A-Z0-9]{8}$/);
    expect(manual.runs).toHaveLength(0);
    const both = await manual.say("cy", "/link");
    const codes = must(must(both.answer, "both.answer").match(/LINK-[A-Z0-9]{8}/g), "the match");
    expect(codes).toHaveLength(2);
    expect(codes[0]).toBe(codes[1]);
  });
});

describe("pairing turns", () => {
  it("/link, a code from another conversation, /unlink: the replies a participant sees; the target never runs", async () => {
    const { say, runs } = await setup({});
    await say("dee", "first");
    const link = await say("dee", " /link ");
    const code = must(must(link.answer, "link.answer").match(/LINK-[A-Z0-9]{8}/), "the match")[0];
    expect(link.answer).toMatch(/^Your pairing code is LINK-[A-Z0-9]{8}\. Send it from your other conversation to link the two\. It expires at .+\+00:00\.$/);
    const linked = await say("eve", `here it is: ${code} thanks`);
    expect(linked.answer).toBe(PAIRING_REPLIES.linked);
    const next = await say("eve", "after linking");
    expect(next.thread_id).toMatch(/^bridge:@person:/);
    expect((await say("dee", "me too")).thread_id).toBe(next.thread_id);
    // Used codes, made-up codes: one uniform reply.
    expect((await say("fay", code)).answer).toBe(PAIRING_REPLIES.invalid);
    expect((await say("fay", "LINK-NOTREAL0")).answer).toBe(PAIRING_REPLIES.invalid);
    expect((await say("eve", "/unlink")).answer).toBe(PAIRING_REPLIES.unlinked);
    expect((await say("eve", "/unlink")).answer).toBe(PAIRING_REPLIES.notLinked);
    expect((await say("eve", "alone again")).thread_id).not.toMatch(/^bridge:@person:/);
    // Only the plain messages reached the tool.
    expect(runs.map((k) => k.message)).toEqual(["first", "after linking", "me too", "alone again"]);
  });

  it("pairs in manual mode too", async () => {
    const { say, runs } = await setup({}, { initial_mode: "manual" });
    expect((await say("gus", "/link")).answer).toMatch(/^Your pairing code is LINK-/);
    expect((await say("gus", "/unlink")).answer).toBe(PAIRING_REPLIES.notLinked);
    expect(runs).toHaveLength(0);
  });

  it("a target without multichannel passes pairing texts to the target as plain text", async () => {
    const { say, runs } = await setup({ multichannel: false });
    expect((await say("hal", "/link")).answer).toBe("tool saw /link");
    expect(runs).toHaveLength(1);
  });
});

describe("person erase (spec §4.6)", () => {
  it("removes the person thread's records and the person; a second erase answers erased: false", async () => {
    const { say } = await setup({});
    await say("ida", "one");
    const code = must(must((await say("ida", "/link")).answer, '(await say("ida", "/link")).answer').match(/LINK-[A-Z0-9]{8}/), "the match")[0];
    await say("jon", code);
    const onPerson = await say("jon", "on the person thread");
    await say("ida", "me too");
    const personId = onPerson.thread_id.slice("bridge:@person:".length);
    const key = await admin();
    const first = await call("DELETE", `/api/conversations/persons/${personId}`, { key });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.data).toEqual({ person_id: personId, removed: 2, erased: true });
    expect((await call("GET", `/api/conversations/persons/${personId}`, { key })).status).toBe(404);
    expect(await rawRows(onPerson.thread_id)).toEqual([]);
    expect((await call("DELETE", `/api/conversations/persons/${personId}`, { key })).body.data).toEqual({ person_id: personId, removed: 0, erased: false });
    // Its addresses are strangers again: the next message is a first contact on a route thread.
    expect((await say("jon", "who am I")).thread_id).not.toMatch(/^bridge:@person:/);
  });

  it("refuses: 400 a blank id, 403 without the write grant; an unknown id is not 404", async () => {
    const key = await admin();
    expect((await call("DELETE", "/api/conversations/persons/%20", { key })).status).toBe(400);
    const reader = await mintKey({ scopes: ["conversations:read"] });
    expect((await call("DELETE", `/api/conversations/persons/${crypto.randomUUID()}`, { key: reader.key })).status).toBe(403);
    const unknown = crypto.randomUUID();
    expect((await call("DELETE", `/api/conversations/persons/${unknown}`, { key })).body.data).toEqual({ person_id: unknown, removed: 0, erased: false });
  });
});

describe("the get_pairing_code built-in tool", () => {
  it("mints a code for a channel conversation of a multichannel target, which that conversation's partner can redeem", async () => {
    const key = await admin();
    const { route } = await setup({});
    const title = route.route.target_name;
    const k = await mintKey({ scopes: [`tool:${title}`] });
    const ours = `+1888${String(Date.now()).slice(-7)}`;
    await createRoute({ door: "channel", channel: "twilio", our_identity: ours, target_kind: "tool", target_name: title, execution_key: k.user_id });
    const run = await call("POST", "/api/run-tool", {
      key,
      body: { tool_name: "get_pairing_code", arguments: { channel: "twilio", our_identity: ours, sender: "+15550001" } },
    });
    expect(run.status, JSON.stringify(run.body)).toBe(200);
    expect(run.body.data).toMatchObject({ code: expect.stringMatching(/^LINK-[A-Z0-9]{8}$/), expires_at: expect.stringMatching(/\+00:00$/) });
    const redeemed = await send(route.name, { external_user_id: "kim", text: run.body.data.code, wait_seconds: 10 });
    expect(redeemed.body.data.answer).toBe(PAIRING_REPLIES.linked);

    // Refused for an unknown conversation, and on a target that is not multichannel.
    const none = await call("POST", "/api/run-tool", {
      key,
      body: { tool_name: "get_pairing_code", arguments: { channel: "twilio", our_identity: "+10000000000", sender: "x" } },
    });
    expect(none.status).toBe(500);
    expect(none.body.code).toBe("tool-error");
    await call("PUT", `/api/conversation-configs/tool/${title}`, { key, body: { target_kind: "tool", target_name: title, multichannel: false } });
    const off = await call("POST", "/api/run-tool", {
      key,
      body: { tool_name: "get_pairing_code", arguments: { channel: "twilio", our_identity: ours, sender: "+15550001" } },
    });
    expect(off.body.code).toBe("tool-error");
  });
});

describe("the person thread on the transcript and forget doors", () => {
  it("reads the person thread's records from any route it spans, and forgets it from any of them", async () => {
    const key = await admin();
    const web = await setup({});
    const title = web.route.route.target_name;
    const k = await mintKey({ scopes: [`tool:${title}`] });
    // A second api route to the same multichannel target.
    const app = await createRoute({ door: "api", target_kind: "tool", target_name: title, execution_key: k.user_id, turns_per_hour_override: 1000 });
    const sayApp = async (who: string, text: string) => (await send(app.name, { external_user_id: who, text, wait_seconds: 10 })).body.data;
    await web.say("lou", "on the web");
    const code = must(must((await web.say("lou", "/link")).answer, '(await web.say("lou", "/link")).answer').match(/LINK-[A-Z0-9]{8}/), "the match")[0];
    expect((await sayApp("lou-app", code)).answer).toBe(PAIRING_REPLIES.linked);
    const fromWeb = await web.say("lou", "web again");
    const fromApp = await sayApp("lou-app", "app again");
    expect(fromApp.thread_id).toBe(fromWeb.thread_id);
    const enc = encodeURIComponent(fromWeb.thread_id);
    for (const routeName of [web.route.name, app.name]) {
      const t = await call("GET", `/api/conversations/${routeName}/transcript?thread_id=${enc}`, { key });
      expect(t.status, JSON.stringify(t.body)).toBe(200);
      expect(t.body.data.items.map((r: any) => [r.route_name, r.inbound_text])).toEqual([
        [web.route.name, "web again"],
        [app.name, "app again"],
      ]);
    }
    // A route the person never wrote on does not hold its thread.
    const other = await setup({});
    expect((await call("GET", `/api/conversations/${other.route.name}/transcript?thread_id=${enc}`, { key })).status).toBe(404);
    expect((await call("DELETE", `/api/conversations/${other.route.name}/thread?thread_id=${enc}`, { key })).status).toBe(404);
    const forgot = await call("DELETE", `/api/conversations/${app.name}/thread?thread_id=${enc}`, { key });
    expect(forgot.body.data).toEqual({ removed: 2, route_name: app.name, thread_id: fromWeb.thread_id });
    expect((await call("GET", `/api/conversations/${web.route.name}/transcript?thread_id=${enc}`, { key })).status).toBe(404);
    // The person itself stays: forgetting a thread is not erasing a person.
    expect((await call("GET", `/api/conversations/persons/${fromWeb.thread_id.slice("bridge:@person:".length)}`, { key })).status).toBe(200);
  });
});

describe("events on a multichannel target", () => {
  it("carry the person read-only and key a linked person's event to its person thread, by address or by thread id", async () => {
    const key = await admin();
    const { say, runs, route } = await setup({}, { payload_expr: "{message, person_id, person_addresses}" });
    await say("max", "hello");
    const code = must(must((await say("max", "/link")).answer, '(await say("max", "/link")).answer').match(/LINK-[A-Z0-9]{8}/), "the match")[0];
    await say("mia", code);
    const personThread = (await say("max", "linked")).thread_id;
    const personId = personThread.slice("bridge:@person:".length);
    const before = runs.length;
    const byAddress = await call("POST", `/api/conversations/${route.name}/events`, {
      key,
      body: { address: "mia", event: { event_id: crypto.randomUUID(), kind: "ping", payload: {} }, wait_seconds: 10 },
    });
    expect(byAddress.status, JSON.stringify(byAddress.body)).toBe(200);
    expect(byAddress.body.data.thread_id).toBe(personThread);
    const byThread = await call("POST", `/api/conversations/${route.name}/events`, {
      key,
      body: { thread_id: personThread, event: { event_id: crypto.randomUUID(), kind: "ping", payload: {} }, wait_seconds: 10 },
    });
    expect(byThread.body.data.thread_id).toBe(personThread);
    expect(runs.slice(before).map((k) => [k.person_id, k.person_addresses.length])).toEqual([
      [personId, 2],
      [personId, 2],
    ]);
    // A stranger on this target has no thread, and an event never creates a person.
    expect(
      (
        await call("POST", `/api/conversations/${route.name}/events`, {
          key,
          body: { address: "nobody", event: { event_id: crypto.randomUUID(), kind: "ping", payload: {} } },
        })
      ).status,
    ).toBe(404);
  });
});

/**
 * State binding at turn time (bridge-facts §7): a tool route whose target config binds a
 * state reads the subject's record before dispatch (input injections), writes after it (updates),
 * reports every failure as the turn's error outcome, and is checked when the config is saved.
 * Thread forget and person erase take the subject's records with them.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { personDirectoryStub } from "../../src/persons/rpc";
import { createRoute, readRecord, send } from "../helpers/bridge";
import { admin, call, mintKey, uniq } from "../helpers/http";
import { declareTool, network } from "../operator/helpers";

const PROFILE = { type: "object", properties: { name: { type: "string" }, visits: { type: "integer" } } };
const tt = (content: string) => ({ content });

/** A declared tool that answers {text, name?} from what it was given; the route maps `.text`. */
async function boundRoute(binding: (state: string) => Record<string, unknown>, kinds = ["thread"]) {
  const key = await admin();
  const state = uniq("prof").toLowerCase();
  expect((await call("PUT", `/api/states/${state}`, { key, body: { schema: PROFILE, subject_kinds: kinds } })).status).toBe(200);
  const host = `bound-${crypto.randomUUID().slice(0, 8)}.example`;
  const title = host.split(".")[0];
  await declareTool(title, `https://${host}/run`);
  const seen: any[] = [];
  network({
    [host]: (kwargs) => {
      seen.push(kwargs);
      const m = /^my name is (.+)$/.exec(kwargs.message ?? "");
      return { text: `hello ${kwargs.profile?.name ?? "stranger"}`, name: m ? (m[1] === "five" ? 5 : m[1]) : null };
    },
  });
  const k = await mintKey({ scopes: [`tool:${title}`] });
  const route = await createRoute({
    door: "api",
    target_kind: "tool",
    target_name: title,
    execution_key: k.user_id,
    reply_expr: ".text",
    turns_per_hour_override: 1000,
  });
  const cfg = await call("PUT", `/api/conversation-configs/tool/${title}`, {
    key,
    body: { target_kind: "tool", target_name: title, state_binding: binding(state) },
  });
  return { key, state, title, route, seen, cfg };
}

const profileBinding = (state: string) => ({
  states: [
    {
      state,
      subject_expr: tt(".turn.subject.thread"),
      scope_expr: tt('.message != "skip"'),
      input_injections: [{ into: "profile", jq: tt(".record") }],
      updates: [
        { jq: tt('if .output.name != null then [{op: "set", path: ["name"], value: .output.name}] else [] end'), op_id: tt('"turn-" + .input.turn.id') },
      ],
    },
  ],
});

describe("state binding in turns", () => {
  it("injects the record before dispatch and writes the update after; scope false skips; the payload names the subject", async () => {
    const b = await boundRoute(profileBinding);
    expect(b.cfg.status, JSON.stringify(b.cfg.body)).toBe(200);
    const say = async (text: string) => (await send(b.route.name, { external_user_id: "ann", text, wait_seconds: 10 })).body.data;
    const first = await say("my name is Ann");
    expect(first.answer).toBe("hello stranger");
    expect(b.seen[0].profile).toEqual({});
    expect(b.seen[0].turn.subject).toEqual({ target_kind: "tool", target_name: b.title, person: null, thread: first.thread_id, locale: null });
    const rec = await call("GET", `/api/states/${b.state}/records/tool/${b.title}/thread/${encodeURIComponent(first.thread_id)}`, { key: b.key });
    expect(rec.body.data).toMatchObject({ data: { name: "Ann" }, seq: 1 });
    const writes = await call("GET", `/api/states/${b.state}/records/tool/${b.title}/thread/${encodeURIComponent(first.thread_id)}/writes`, { key: b.key });
    expect(writes.body.data.items[0].origin).toMatchObject({
      door: "turn",
      turn_id: first.message_id,
      op_id: `turn-${first.message_id}`,
      consumer: `conversation_config:tool/${b.title}`,
    });

    expect((await say("again")).answer).toBe("hello Ann");
    expect(b.seen[1].profile).toEqual({ name: "Ann" });
    // Out of scope: no injection, no update.
    await say("skip");
    expect(b.seen[2]).not.toHaveProperty("profile");
  });

  it("a failing update is the turn's error outcome, with the detail in the record's error", async () => {
    const b = await boundRoute(profileBinding);
    const res = await send(b.route.name, { external_user_id: "bo", text: "my name is five", wait_seconds: 10 });
    expect(res.body.data).toMatchObject({ status: "error", answer: "Sorry, something went wrong handling your message. Please try again." });
    const record = await readRecord(b.route.name, res.body.data.message_id);
    expect(record.body.data.error).toMatch(/state binding \(.+\) update: .*effective schema/);
  });

  it("a subject_expr answering something else, or a non-boolean scope, is the turn's error outcome", async () => {
    const bad = await boundRoute((state) => ({ states: [{ state, subject_expr: tt("42") }] }));
    const r1 = await send(bad.route.name, { external_user_id: "x", text: "hi", wait_seconds: 10 });
    expect((await readRecord(bad.route.name, r1.body.data.message_id)).body.data.error).toContain("subject_expr must answer a subject");
    const scope = await boundRoute((state) => ({ states: [{ state, subject_expr: tt(".turn.subject.thread"), scope_expr: tt('"yes"') }] }));
    const r2 = await send(scope.route.name, { external_user_id: "x", text: "hi", wait_seconds: 10 });
    expect((await readRecord(scope.route.name, r2.body.data.message_id)).body.data.error).toContain("scope_expr must answer true or false");
    expect(bad.seen).toHaveLength(0);
  });

  it("is checked at save: an undeclared state 404, a program not attached 404, jq that does not compile 400; nothing stored", async () => {
    const b = await boundRoute(profileBinding);
    const put = (binding: unknown) =>
      call("PUT", `/api/conversation-configs/tool/${b.title}`, { key: b.key, body: { target_kind: "tool", target_name: b.title, state_binding: binding } });
    expect((await put({ states: [{ state: `no-${b.state}`, subject_expr: tt(".turn.subject.thread") }] })).status).toBe(404);
    expect(
      (await put({ states: [{ state: b.state, subject_expr: tt(".turn.subject.thread"), input_injections: [{ into: "x", template_jq: "nothing" }] }] })).status,
    ).toBe(404);
    expect((await put({ states: [{ state: b.state, subject_expr: tt(".turn.subject.thread | | ") }] })).status).toBe(400);
    expect((await put({ states: [{ state: b.state, subject_expr: tt(".x"), templates: ["no-such-template"] }] })).status).toBe(404);
    const kept = await call("GET", `/api/conversation-configs/tool/${b.title}`, { key: b.key });
    expect(kept.body.data.state_binding).toEqual(expect.objectContaining({ states: [expect.objectContaining({ state: b.state })] }));
    expect((await call("GET", `/api/states/${b.state}/consumers`, { key: b.key })).body.data.items).toEqual([
      { kind: "conversation_config", target_kind: "tool", target_name: b.title },
    ]);
  });

  it("templates are attached on use at save, and a named update program writes through them", async () => {
    const key = await admin();
    const template = `visits-${crypto.randomUUID().slice(0, 8)}`;
    const doc = {
      kind: "state-template",
      schema: { type: "object", properties: { visits: { type: "integer" } } },
      template_jq: { bump: { purpose: "update", jq: tt('[{op: "set", path: ["visits"], value: ((.record.visits // 0) + 1)}]') } },
    };
    expect((await call("PUT", `/api/state-templates/${template}`, { key, body: doc })).status).toBe(200);
    const b = await boundRoute(
      (state) => ({ states: [{ state, subject_expr: tt(".turn.subject.thread"), templates: [template], updates: [{ template_jq: `${template}.bump` }] }] }),
      ["thread"],
    );
    // The base schema already has `visits`: attaching at the root overlaps (409), and nothing is stored.
    expect(b.cfg.status).toBe(409);
    expect((await call("GET", `/api/states/${b.state}/attachments`, { key })).body.data.total).toBe(0);

    const state = uniq("vis").toLowerCase();
    await call("PUT", `/api/states/${state}`, {
      key,
      body: { schema: { type: "object", properties: { name: { type: "string" } } }, subject_kinds: ["thread"] },
    });
    const ok = await call("PUT", `/api/conversation-configs/tool/${b.title}`, {
      key,
      body: {
        target_kind: "tool",
        target_name: b.title,
        state_binding: { states: [{ state, subject_expr: tt(".turn.subject.thread"), templates: [template], updates: [{ template_jq: `${template}.bump` }] }] },
      },
    });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect((await call("GET", `/api/states/${state}/attachments`, { key })).body.data.items.map((a: any) => a.template)).toEqual([template]);
    const t1 = await send(b.route.name, { external_user_id: "cy", text: "one", wait_seconds: 10 });
    await send(b.route.name, { external_user_id: "cy", text: "two", wait_seconds: 10 });
    const rec = await call("GET", `/api/states/${state}/records/tool/${b.title}/thread/${encodeURIComponent(t1.body.data.thread_id)}`, { key });
    expect(rec.body.data.data).toEqual({ visits: 2 });
  });

  it("thread forget removes the thread's records in every state", async () => {
    const b = await boundRoute(profileBinding);
    const res = await send(b.route.name, { external_user_id: "dee", text: "my name is Dee", wait_seconds: 10 });
    const url = `/api/states/${b.state}/records/tool/${b.title}/thread/${encodeURIComponent(res.body.data.thread_id)}`;
    expect((await call("GET", url, { key: b.key })).body.data.data).toEqual({ name: "Dee" });
    const forgot = await call("DELETE", `/api/conversations/${b.route.name}/thread?thread_id=${encodeURIComponent(res.body.data.thread_id)}`, { key: b.key });
    expect(forgot.status).toBe(200);
    expect((await call("GET", url, { key: b.key })).body.data).toBeNull();
  });

  it("person erase removes the person's records in every state", async () => {
    const key = await admin();
    const title = `ptool-${crypto.randomUUID().slice(0, 8)}`;
    await declareTool(title, `https://${title}.example/run`);
    const state = uniq("pers").toLowerCase();
    await call("PUT", `/api/states/${state}`, { key, body: { schema: PROFILE, subject_kinds: ["person"] } });
    const directory = personDirectoryStub(env, "tool", title);
    const { person } = await directory.ensure(
      { target: { kind: "tool", name: title }, address: { door: "api", address: "root/eve" }, route_name: "r" },
      null,
      Date.now(),
    );
    const url = `/api/states/${state}/records/tool/${title}/person/${person.person_id}`;
    expect((await call("PUT", url, { key, body: { name: "Eve" } })).status).toBe(200);
    // A person of another target is not a subject of this one.
    expect((await call("PUT", `/api/states/${state}/records/tool/other-${title}/person/${person.person_id}`, { key, body: {} })).status).toBe(404);
    const erased = await call("DELETE", `/api/conversations/persons/${person.person_id}`, { key });
    expect(erased.body.data.erased).toBe(true);
    expect((await call("GET", url, { key })).status).toBe(404);
    expect((await call("GET", `/api/states/${state}/stats`, { key })).body.data.records).toBe(0);
  });

  it("a preset's own binding applies to routes that target it, after the route's", async () => {
    const key = await admin();
    const state = uniq("pre").toLowerCase();
    await call("PUT", `/api/states/${state}`, { key, body: { schema: PROFILE, subject_kinds: ["thread"] } });
    const host = `preset-${crypto.randomUUID().slice(0, 8)}.example`;
    const base = host.split(".")[0];
    await declareTool(base, `https://${host}/run`);
    const seen: any[] = [];
    network({ [host]: (k) => (seen.push(k), { text: `hi ${k.profile?.name ?? "you"}`, name: "Pat" }) });
    const presetName = `${base}-p`;
    const binding = {
      states: [
        {
          state,
          subject_expr: tt(".turn.subject.thread"),
          input_injections: [{ into: "profile", jq: tt(".record") }],
          updates: [{ jq: tt('[{op: "set", path: ["name"], value: .output.name}]') }],
        },
      ],
    };
    const created = await call("POST", "/api/presets", { key, body: { name: presetName, base_tool: base, state_binding: binding } });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body.data.state_binding.states[0].state).toBe(state);
    // Checked at save like a config's: an undeclared state is 404.
    expect(
      (
        await call("POST", `/api/presets/${presetName}/versions`, {
          key,
          body: { state_binding: { states: [{ state: `no-${state}`, subject_expr: tt(".x") }] } },
        })
      ).status,
    ).toBe(404);
    const k = await mintKey({ scopes: [`tool:${presetName}`] });
    const route = await createRoute({ door: "api", target_kind: "tool", target_name: presetName, execution_key: k.user_id, reply_expr: ".text" });
    expect((await send(route.name, { external_user_id: "q", text: "one", wait_seconds: 10 })).body.data.answer).toBe("hi you");
    expect((await send(route.name, { external_user_id: "q", text: "two", wait_seconds: 10 })).body.data.answer).toBe("hi Pat");
    expect(seen[1].profile).toEqual({ name: "Pat" });
    expect((await call("GET", `/api/states/${state}/consumers`, { key })).body.data.items).toEqual([{ kind: "preset", name: presetName, version: 1 }]);
  });
});

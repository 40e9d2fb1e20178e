/**
 * States end to end: against a real `wrangler dev`, a tool route whose
 * target config binds a `profile` state to the `thread` subject. The first turn's tool sees an
 * empty injected record and its update writes `{name}`; the second turn's tool sees it; a failing
 * update is the turn's error outcome with the detail in the record's `error`; a narrowing
 * re-declare is 409; forgetting the thread removes the record.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { http } from "./harness";
import { sharedDev } from "./support/shared-dev";
import { type ToolServer, startToolServer } from "./support/tool-server";

let tool: ToolServer;
let base: string;
let adminKey: string;

beforeAll(async () => {
  // The tool greets whoever the injected profile names, and reports a name when told one.
  tool = await startToolServer((k) => {
    const told = /^i am (.+)$/i.exec(k.message ?? "")?.[1] ?? null;
    return { text: `hello ${k.profile?.name ?? "stranger"}`, name: told === "42" ? 42 : told };
  });
  ({ baseUrl: base, adminKey } = await sharedDev());
}, 120_000);

afterAll(async () => {
  await tool?.stop();
});

const PROFILE = { type: "object", properties: { name: { type: "string" } } };
const tt = (content: string) => ({ content });

describe("states against a real wrangler dev", () => {
  it("a bound profile state: injected, updated, loud on failure, additive-only, forgotten with its thread", async () => {
    const key = adminKey;
    expect(
      (await http(base, "PUT", "/api/states/profile", { key, body: { description: "who they are", schema: PROFILE, subject_kinds: ["thread"] } })).status,
    ).toBe(200);
    const declared = await http(base, "POST", "/api/tools-config/entries", {
      key,
      body: {
        title: "greeter",
        kind: "http",
        description: "greets by name",
        url: tool.url,
        input_schema: { type: "object", properties: { message: { type: "string" } } },
      },
    });
    expect(declared.status, JSON.stringify(declared.body)).toBe(200);
    expect((await http(base, "POST", "/api/auth/api-keys", { key, body: { user_id: "greeter-runner", scopes: ["tool:greeter"] } })).status).toBe(200);
    expect(
      (
        await http(base, "POST", "/api/conversations/greet", {
          key,
          body: { door: "api", target_kind: "tool", target_name: "greeter", execution_key: "greeter-runner", reply_expr: ".text" },
        })
      ).status,
    ).toBe(200);
    const binding = {
      states: [
        {
          state: "profile",
          subject_expr: tt(".turn.subject.thread"),
          input_injections: [{ into: "profile", jq: tt(".record") }],
          updates: [{ jq: tt('if .output.name != null then [{op: "set", path: ["name"], value: .output.name}] else [] end') }],
        },
      ],
    };
    const cfg = await http(base, "PUT", "/api/conversation-configs/tool/greeter", {
      key,
      body: { target_kind: "tool", target_name: "greeter", state_binding: binding },
    });
    expect(cfg.status, JSON.stringify(cfg.body)).toBe(200);
    const say = async (text: string) => {
      const r = await http(base, "POST", "/api/conversations/greet/messages", { key, body: { external_user_id: "ann", text, wait_seconds: 20 } });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body.data;
    };

    // 1. The first turn sees an empty record, and its update writes {name}.
    const first = await say("I am Ann");
    expect(first.answer).toBe("hello stranger");
    expect(tool.calls[0].kwargs.profile).toEqual({});
    const recordUrl = `/api/states/profile/records/tool/greeter/thread/${encodeURIComponent(first.thread_id)}`;
    expect((await http(base, "GET", recordUrl, { key })).body.data).toMatchObject({ data: { name: "Ann" }, seq: 1 });

    // 2. The second turn sees it injected.
    expect((await say("hi again")).answer).toBe("hello Ann");
    expect(tool.calls[1].kwargs.profile).toEqual({ name: "Ann" });

    // 3. A failing update (a number where the schema wants a string) is the turn's error outcome.
    const failed = await say("I am 42");
    expect(failed).toMatchObject({ status: "error", answer: "Sorry, something went wrong handling your message. Please try again." });
    const rec = await http(base, "GET", `/api/conversations/greet/messages/${failed.message_id}`, { key });
    expect(rec.body.data.error).toMatch(/state binding \(profile\) update: .*effective schema/);
    expect((await http(base, "GET", recordUrl, { key })).body.data.data).toEqual({ name: "Ann" });

    // 4. A narrowing re-declare is refused while records exist; an additive one is fine.
    const narrowing = await http(base, "PUT", "/api/states/profile", {
      key,
      body: { schema: { type: "object", properties: { nickname: { type: "string" } } }, subject_kinds: ["thread"] },
    });
    expect(narrowing.status).toBe(409);
    const additive = await http(base, "PUT", "/api/states/profile", {
      key,
      body: { schema: { type: "object", properties: { ...PROFILE.properties, nickname: { type: "string" } } }, subject_kinds: ["thread"] },
    });
    expect(additive.status).toBe(200);

    // 5. Forgetting the thread removes its record.
    const forgot = await http(base, "DELETE", `/api/conversations/greet/thread?thread_id=${encodeURIComponent(first.thread_id)}`, { key });
    expect(forgot.status, JSON.stringify(forgot.body)).toBe(200);
    expect((await http(base, "GET", recordUrl, { key })).body.data).toBeNull();
  });
});

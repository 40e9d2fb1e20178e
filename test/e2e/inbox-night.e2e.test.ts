/**
 * "A customer handed off at night is never lost", end to end against a real `wrangler dev`: an llm
 * agent (a local fake LLM) hands the conversation to a human with its `set_conversation_mode` tool,
 * nobody answers, and the thread's own alarm sends the waiting alert to a fake Slack API on
 * loopback (the channel fake of test/e2e/support/fake-providers.ts, which answers
 * `chat.postMessage` as Slack does): exactly one alert, to the policy's channel, naming the route
 * and the thread and carrying none of the customer's words; the thread's inbox door shows it
 * alerted, the Waiting view lists it, and the escalation is armed.
 *
 * The timers. A policy's timers are 60 s at least, so the wait before the alert is shortened the way
 * the other suites shorten their backoffs: the route's policy leaves `sla_seconds` unset, and this
 * server's `CONVERSATIONS_INBOX_SLA_SECONDS` (which takes fractions) is 2 s. The policy still
 * decides where the alert goes. The escalation comes the policy's minimum 60 s after the alert;
 * this file checks it is armed there and leaves its sending to the workerd suite.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BOOTSTRAP_TOKEN, type DevServer, http, startDev } from "./harness";
import { type FakeLlm, startFakeLlm, toolCall } from "./support/fake-llm";
import { type FakeProviders, type ProviderSend, startFakeProviders } from "./support/fake-providers";
import { pollUntil } from "./support/poll";

const SLACK = { token: "xoxb-night-e2e", signing: "slack-night-signing", bot: "UNIGHTBOT" };
const ROUTE = "night";
const CUSTOMER = "cust-night";
const WORDS = "My parcel 7781 never arrived and I need it tomorrow";
const ESCALATE_AFTER_SECONDS = 60;

let dev: DevServer;
let fake: FakeProviders;
let llm: FakeLlm;
let base: string;
let adminKey: string;

/** The night desk's model: every customer is handed to a human, then told so. */
function nightDesk(body: { messages: Array<{ role: string; content: string | null }> }): Record<string, unknown> {
  const last = body.messages[body.messages.length - 1];
  if (last.role === "tool") return { content: "A colleague will answer you in the morning." };
  return { content: null, tool_calls: [toolCall("h1", "set_conversation_mode", { mode: "manual" })] };
}

beforeAll(async () => {
  fake = await startFakeProviders();
  llm = await startFakeLlm(nightDesk);
  dev = await startDev({
    vars: {
      CHANNEL_SLACK_SIGNING_SECRET: SLACK.signing,
      CHANNEL_SLACK_BOT_TOKEN: SLACK.token,
      CHANNEL_SLACK_BOT_USER_ID: SLACK.bot,
      CHANNEL_SLACK_API_BASE: fake.base("slack"),
      FAKE_LLM_KEY: "llm-night-key",
      CONVERSATIONS_INBOX_SLA_SECONDS: "2",
    },
  });
  base = dev.baseUrl;
  const boot = await http(base, "POST", "/api/keys/bootstrap", { body: { user_id: "root", bootstrap_token: BOOTSTRAP_TOKEN } });
  expect(boot.status, JSON.stringify(boot.body)).toBe(200);
  adminKey = boot.body.data.token;
});

afterAll(async () => {
  await dev?.close();
  await fake?.close();
  await llm?.close();
});

const slackSends = (): ProviderSend[] => fake.sends.filter((s) => s.channel === "slack");

async function inboxOf(threadId: string) {
  const r = await http(base, "GET", `/api/conversations/${ROUTE}/thread/inbox?thread_id=${encodeURIComponent(threadId)}`, { key: adminKey });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data;
}

describe("the inbox at night against a real wrangler dev", () => {
  it("a customer the agent hands off raises one Slack alert naming route and thread, and the escalation is armed", async () => {
    const agent = await http(base, "POST", "/api/agents-config/entries", {
      key: adminKey,
      body: {
        title: "night-desk",
        kind: "llm",
        description: "hands every customer to a human",
        config: { base_url: llm.url, model: "fake", api_key: { env: "FAKE_LLM_KEY" }, tool_names: ["set_conversation_mode"] },
      },
    });
    expect(agent.status, JSON.stringify(agent.body)).toBe(200);
    const runner = await http(base, "POST", "/api/auth/api-keys", {
      key: adminKey,
      body: { user_id: "night-runner", scopes: ["agent:night-desk", "tool:set_conversation_mode"] },
    });
    expect(runner.status, JSON.stringify(runner.body)).toBe(200);
    const route = await http(base, "POST", `/api/conversations/${ROUTE}`, {
      key: adminKey,
      body: { door: "api", target_kind: "agent", target_name: "night-desk", execution_key: "night-runner" },
    });
    expect(route.status, JSON.stringify(route.body)).toBe(200);
    const policy = await http(base, "PUT", `/api/conversations/${ROUTE}/inbox`, {
      key: adminKey,
      body: {
        alert: { channel: "slack", recipient: "C-night" },
        escalate_after_seconds: ESCALATE_AFTER_SECONDS,
        escalate_to: { channel: "slack", recipient: "C-lead" },
      },
    });
    expect(policy.status, JSON.stringify(policy.body)).toBe(200);

    const sent = await http(base, "POST", `/api/conversations/${ROUTE}/messages`, {
      key: adminKey,
      body: { external_user_id: CUSTOMER, text: WORDS, wait_seconds: 20 },
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    expect(sent.body.data).toMatchObject({ status: "answered", answer: "A colleague will answer you in the morning." });
    const threadId: string = sent.body.data.thread_id;
    expect(threadId).toBe(`bridge:${ROUTE}:root/${CUSTOMER}`);
    // The agent's tool call is what handed the customer over.
    expect(llm.calls[0].tools.map((t: { function: { name: string } }) => t.function.name)).toEqual(["set_conversation_mode"]);

    // The alert comes from the thread's alarm alone: nothing here calls the bridge until it is in.
    const alerts = await pollUntil("the Slack alert", slackSends, (s) => s.length >= 1, { timeoutMs: 30_000 });
    expect(alerts).toHaveLength(1);
    const [alert] = alerts;
    expect(alert.path).toBe("/slack/chat.postMessage");
    expect(alert.headers.authorization).toBe(`Bearer ${SLACK.token}`);
    expect(alert.body.channel).toBe("C-night");
    expect(alert.body.text).toMatch(/^A customer waits for a human on route night: \d+ min without an answer/);
    // The thread id carries the customer's address: a channel alert names the thread by its ref only.
    expect(alert.body.text).toMatch(/\(ref [0-9a-f]{12}\)\.$/);
    expect(alert.body.text).not.toContain(CUSTOMER);
    for (const word of ["parcel", "7781", "tomorrow"]) expect(alert.body.text).not.toContain(word);

    const alerted = await inboxOf(threadId);
    expect(alerted).toMatchObject({ status: "open", waiting_reason: "agent_handoff", assignee: null, sla_stage: "alerted" });
    // The escalation is armed the policy's delay after the alert.
    const escalateAt = Date.parse(alerted.sla_due_at);
    expect(escalateAt - Date.parse(alerted.waiting_since)).toBeGreaterThanOrEqual(2_000 + ESCALATE_AFTER_SECONDS * 1000);

    // The shared feed holds the same text, and the morning's Waiting view lists the thread.
    const feed = await http(base, "GET", "/api/notifications", { key: adminKey });
    // The feed is internal: its copy names the thread itself beside the same ref.
    const ref = String(alert.body.text.match(/ref ([0-9a-f]{12})/)?.[1]);
    expect(feed.body.data.notifications.map((n: { message: string }) => n.message)).toContainEqual(expect.stringContaining(`(thread ${threadId}, ref ${ref})`));
    const waiting = await pollUntil(
      "the thread in the Waiting view",
      () => http(base, "GET", "/api/inbox/threads?view=waiting", { key: adminKey }),
      (r) => r.body?.data?.items?.some((i: { thread_id: string }) => i.thread_id === threadId),
      { timeoutMs: 15_000 },
    );
    expect(waiting.body.data.items.find((i: { thread_id: string }) => i.thread_id === threadId)).toMatchObject({
      route_name: ROUTE,
      inbox_status: "open",
      assignee: null,
    });

    // Nothing more now: one alert, and the escalation armed a minute out. Its sending, once, to the
    // lead's target, is the workerd suite's (test/conversations/inbox.test.ts), which runs the
    // thread's alarm at the stored instant instead of holding a test slot idle for a minute.
    await new Promise((r) => setTimeout(r, 3_000));
    expect(slackSends()).toHaveLength(1);
    expect(await inboxOf(threadId)).toMatchObject({ status: "open", sla_stage: "alerted" });
  }, 180_000);
});

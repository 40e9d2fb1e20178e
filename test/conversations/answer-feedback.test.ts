/**
 * Answer feedback (docs/inbox.md, "Answer feedback") through the real doors: a web visitor rates
 * an answer of their own page (and only that), the rating is on the record, its run trace and the
 * page's entry after a reload, counted in the metrics (JSON and OpenMetrics), listed for review,
 * and sent to the route's events_url; a Telegram customer's 👍/👎 tap on an answer's buttons rates
 * it without a turn, and a tap naming someone else's answer rates nothing.
 */
import { describe, expect, it } from "vitest";
import { createRoute, echoKey, readRecord } from "../helpers/bridge";
import { admin, call, uniq } from "../helpers/http";
import { listingCaughtUp } from "../helpers/listing";
import { fakeNetwork } from "../helpers/network";
import { eventually, rawRows } from "../helpers/threads";
import { ORIGIN, type Visitor, link, newVisitor, openStream, say, settled, webDesk as linkedDesk } from "../helpers/web-visitor";
import { TEST_ENV, postTelegram } from "../helpers/webhooks";
import { enc } from "../operator/helpers";
import { FEEDBACK_QUESTION, feedbackReplyId, parseFeedbackReplyId } from "../../src/channels/rich/feedback";
import { planOutbound } from "../../src/channels/rich/outbound";
import { adapterFor } from "../../src/channels/registry";
import { must } from "../../src/platform/must";
import { webhook } from "../helpers/webhooks";
import { answerFeedbackFigures, feedbackLabel } from "../../src/observability/answer-feedback-figures";
import { feedbackCounters } from "../../src/conversations/thread/answer-feedback";

const EVENTS = "https://events.example.com/feedback";

/** A web desk on the echo tool: its route name and identity. */
async function webDesk() {
  const k = await echoKey();
  const identity = uniq("fb").replace(/[^A-Za-z0-9_-]/g, "-");
  const r = await createRoute({ door: "channel", channel: "web", our_identity: identity, target_kind: "tool", target_name: "echo", execution_key: k.user_id });
  return { web: r.name, identity };
}

/** The visitor says `text`; answers the record id once the answer is on the page. */
async function answered(desk: { web: string; identity: string }, v: Visitor, text: string): Promise<string> {
  const sent = await say(desk, v, text);
  expect(sent.status, JSON.stringify(sent.body)).toBe(200);
  await settled(v.home);
  return sent.body.data.message_id as string;
}

function rate(desk: { identity: string }, v: Visitor, body: Record<string, unknown>, headers: Record<string, string> = {}) {
  return call("POST", "/api/channels/web/feedback", { body: { identity: desk.identity, ...body }, headers: { origin: ORIGIN, cookie: v.cookie, ...headers } });
}

/** The events receiver: records every POST and answers 204. */
function receiver() {
  const calls = fakeNetwork(async (req) =>
    new URL(req.url).host === "events.example.com" ? new Response(null, { status: 204 }) : new Response("", { status: 599 }),
  );
  return () => calls.filter((c) => c.url === EVENTS).map((c) => c.json);
}

describe("the web feedback door", () => {
  it("rates, re-rates and clears an answer of the visitor's own page; the record, its trace and the page's entry say it", async () => {
    const events = receiver();
    const desk = await webDesk();
    expect((await call("PUT", `/api/conversations/${desk.web}/inbox`, { key: await admin(), body: { events_url: EVENTS } })).status).toBe(200);
    const v = await newVisitor(desk);
    const id = await answered(desk, v, "where is my parcel?");

    const up = await rate(desk, v, { message_id: id, rating: "up" });
    expect(up.status, JSON.stringify(up.body)).toBe(200);
    expect(up.body.data).toEqual({ message_id: id, rating: "up" });
    expect((await readRecord(desk.web, id)).body.data.feedback).toMatchObject({ rating: "up" });

    const down = await rate(desk, v, { message_id: id, rating: "down" });
    expect(down.body.data).toEqual({ message_id: id, rating: "down" });
    const rec = (await readRecord(desk.web, id)).body.data;
    expect(rec.feedback.rating).toBe("down");
    expect(Date.parse(rec.feedback.at)).not.toBeNaN();
    const trace = await call("GET", `/api/observability/runs/${enc(id)}/trace`, { key: await admin() });
    expect(trace.status).toBe(200);
    expect(trace.body.data.feedback).toMatchObject({ rating: "down" });

    // A reload shows the rating on the answer entry, and says nothing of ratings on the visitor's own.
    const page = await openStream(desk, v);
    page.ws?.close();
    const entries = page.frames.filter((f) => f.type === "entry").map((f) => f.entry);
    expect(entries.map((e) => [e.role, e.message_id, e.rating])).toEqual([
      ["visitor", id, undefined],
      ["bot", id, "down"],
    ]);
    expect("rating" in entries[0]).toBe(false);

    // The same rating again changes nothing; null takes it back.
    expect((await rate(desk, v, { message_id: id, rating: "down" })).body.data).toEqual({ message_id: id, rating: "down" });
    const cleared = await rate(desk, v, { message_id: id, rating: null });
    expect(cleared.body.data).toEqual({ message_id: id, rating: null });
    expect("feedback" in (await readRecord(desk.web, id)).body.data).toBe(false);
    const again = await openStream(desk, v);
    again.ws?.close();
    expect(again.frames.filter((f) => f.type === "entry").map((f) => f.entry.rating)).toEqual([undefined, null]);

    // Each change went to the route's events_url as a `rated` event naming the answer.
    const posted = await eventually(
      async () => events(),
      (e) => e.filter((x: { event: string }) => x.event === "rated").length === 3,
    );
    const rated = posted.filter((x: { event: string }) => x.event === "rated");
    expect(rated.map((e: { detail: unknown }) => e.detail)).toEqual([
      { message_id: id, rating: "up" },
      { message_id: id, rating: "down" },
      { message_id: id, rating: null },
    ]);
    expect(rated[0]).toMatchObject({ route_name: desk.web, thread_id: v.home, by: null });
  });

  it("answers 404 for anything but an answer of the visitor's own page, and a rating cannot be forged for another visitor", async () => {
    const desk = await webDesk();
    const alice = await newVisitor(desk);
    const bob = await newVisitor(desk);
    const hers = await answered(desk, alice, "alice asks");
    const his = await answered(desk, bob, "bob asks");

    // Bob names Alice's answer: 404, exactly like an id that exists nowhere, and her record is untouched.
    const forged = await rate(desk, bob, { message_id: hers, rating: "down" });
    expect(forged.status).toBe(404);
    expect(forged.body.code).toBe("unknown_answer");
    const unknown = await rate(desk, bob, { message_id: crypto.randomUUID(), rating: "down" });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual(forged.body);
    expect("feedback" in (await readRecord(desk.web, hers)).body.data).toBe(false);
    // His own is his to rate.
    expect((await rate(desk, bob, { message_id: his, rating: "up" })).status).toBe(200);

    // A session is required, the Origin is checked, and the body is exactly the door's.
    expect(
      (await call("POST", "/api/channels/web/feedback", { body: { identity: desk.identity, message_id: his, rating: "up" }, headers: { origin: ORIGIN } }))
        .status,
    ).toBe(401);
    expect((await rate(desk, bob, { message_id: his, rating: "up" }, { origin: "https://elsewhere.example" })).status).toBe(403);
    const extra = await rate(desk, bob, { message_id: his, rating: "up", stars: 5 });
    expect(extra.status).toBe(400);
    expect((await rate(desk, bob, { message_id: his, rating: "meh" })).status).toBe(400);
    expect((await rate(desk, bob, { message_id: his })).status).toBe(400);
  });
});

describe("a linked visitor", () => {
  it("rates an answer kept on the person's thread from their own page", async () => {
    const desk = await linkedDesk();
    const v = await newVisitor(desk);
    const { person } = await link(desk, v, uniq("cust"));
    const sent = await say(desk, v, "asked after linking");
    expect(sent.status).toBe(200);
    const id = sent.body.data.message_id as string;
    await settled(person);
    await eventually(
      async () => {
        const s = await openStream(desk, v);
        s.ws?.close();
        return s.frames.filter((f) => f.type === "entry" && f.entry.message_id === id && f.entry.role === "bot").length;
      },
      (n) => n === 1,
    );
    expect((await rawRows(v.home)).some((r) => JSON.parse(r.record).message_id === id)).toBe(false);

    const rated = await rate(desk, v, { message_id: id, rating: "down" });
    expect(rated.status, JSON.stringify(rated.body)).toBe(200);
    const rec = await call("GET", `/api/conversations/${desk.web}/transcript?thread_id=${enc(person)}`, { key: await admin() });
    expect(rec.body.data.items.find((r: { message_id: string }) => r.message_id === id).feedback).toMatchObject({ rating: "down" });
    const page = await openStream(desk, v);
    page.ws?.close();
    expect(page.frames.find((f) => f.type === "entry" && f.entry.message_id === id && f.entry.role === "bot").entry.rating).toBe("down");
  });
});

describe("a rating reaches the team", () => {
  it("counts in the metrics by route and target, lists the thread for review, and shows in OpenMetrics", async () => {
    const desk = await webDesk();
    const v = await newVisitor(desk);
    const first = await answered(desk, v, "first question");
    const second = await answered(desk, v, "second question");
    const other = await newVisitor(desk);
    const liked = await answered(desk, other, "a good one");

    expect((await rate(desk, v, { message_id: first, rating: "up" })).status).toBe(200);
    // Changed its mind: the answer counts once, as down.
    expect((await rate(desk, v, { message_id: first, rating: "down" })).status).toBe(200);
    expect((await rate(desk, v, { message_id: second, rating: "down" })).status).toBe(200);
    expect((await rate(desk, other, { message_id: liked, rating: "up" })).status).toBe(200);
    await listingCaughtUp(v.home, other.home);

    const m = (await call("GET", "/api/observability/metrics?window=1h", { key: await admin() })).body.data.answer_feedback;
    expect(m.by_route.find((r: { route_name: string }) => r.route_name === desk.web)).toEqual({ route_name: desk.web, up: 1, down: 2 });
    expect(m.by_route_target.find((r: { route_name: string }) => r.route_name === desk.web)).toEqual({
      route_name: desk.web,
      target_kind: "tool",
      target_name: "echo",
      up: 1,
      down: 2,
    });
    const echo = m.by_target.find((t: { target_kind: string; target_name: string }) => t.target_kind === "tool" && t.target_name === "echo");
    expect(echo.down).toBeGreaterThanOrEqual(2);
    const om = await call("GET", "/api/observability/metrics", { key: await admin(), headers: { accept: "application/openmetrics-text; version=1.0.0" } });
    expect(om.body).toContain(`bridge_answer_feedback{route="${desk.web}",target_kind="tool",target_name="echo",rating="down"} 2\n`);
    expect(om.body).toContain(`bridge_answer_feedback{route="${desk.web}",target_kind="tool",target_name="echo",rating="up"} 1\n`);

    // The route's listing filter and the inbox's review queue hold the thread with down-rated answers only.
    const listed = await call("GET", `/api/conversations/${desk.web}/threads?rated=down`, { key: await admin() });
    expect(listed.body.data.items.map((t: { thread_id: string; rated_down: number }) => [t.thread_id, t.rated_down])).toEqual([[v.home, 2]]);
    const queue = await call("GET", `/api/inbox/threads?view=rated_down&route=${desk.web}`, { key: await admin() });
    expect(queue.body.data.items.map((t: { thread_id: string; rated_down: number }) => [t.thread_id, t.rated_down])).toEqual([[v.home, 2]]);
    const all = await call("GET", `/api/conversations/${desk.web}/threads`, { key: await admin() });
    expect(all.body.data.items.find((t: { thread_id: string }) => t.thread_id === other.home).rated_down).toBe(0);
  });

  it("counts a change in the minute of the rating it replaces (pure)", () => {
    const label = feedbackLabel("desk", "agent", "helper");
    const at = Date.UTC(2026, 0, 1, 10, 5, 30);
    const counters = [
      ...feedbackCounters(label, null, { rating: "up", at }),
      ...feedbackCounters(label, { rating: "up", at: new Date(at).toISOString() }, { rating: "down", at: at + 120_000 }),
    ];
    expect(counters).toEqual([
      { minute: Math.floor(at / 60_000), name: "answer_feedback_up", label, value: 1 },
      { minute: Math.floor(at / 60_000), name: "answer_feedback_up", label, value: -1 },
      { minute: Math.floor(at / 60_000) + 2, name: "answer_feedback_down", label, value: 1 },
    ]);
    const sums = new Map<string, number>();
    for (const c of counters) sums.set(`${c.name}|${c.label}`, (sums.get(`${c.name}|${c.label}`) ?? 0) + c.value);
    const figures = answerFeedbackFigures([...sums].map(([k, n]) => ({ name: k.split("|")[0], label: k.split("|")[1], n })));
    expect(figures).toMatchObject({ up: 0, down: 1, by_target: [{ target_kind: "agent", target_name: "helper", up: 0, down: 1 }] });
  });
});

describe("answer feedback buttons on a channel", () => {
  it("Telegram: the answer carries 👍/👎, a tap rates that answer without a turn, and a tap from another chat rates nothing", async () => {
    const calls = fakeNetwork(async (req) =>
      new URL(req.url).host === "telegram.fake" ? Response.json({ ok: true, result: { message_id: 77 } }) : new Response("", { status: 599 }),
    );
    const k = await echoKey();
    const r = await createRoute({
      door: "channel",
      channel: "telegram",
      our_identity: TEST_ENV.telegramBotId,
      target_kind: "tool",
      target_name: "echo",
      execution_key: k.user_id,
      answer_feedback: true,
    });
    try {
      expect(r.route.answer_feedback).toBe(true);
      expect((await call("GET", `/api/conversations/${r.name}`, { key: await admin() })).body.data.answer_feedback).toBe(true);
      const chat = Number(String(Date.now()).slice(-8));
      const threadId = `bridge:${r.name}:${chat}`;
      const update = (n: number, body: Record<string, unknown>) => ({ update_id: Number(String(Date.now()).slice(-8)) * 10 + n, ...body });
      const said = update(1, {
        message: { message_id: 1, date: 1, chat: { id: chat, type: "private" }, from: { id: chat, is_bot: false, first_name: "A" }, text: "hi bot" },
      });
      expect((await postTelegram(said)).status).toBe(200);
      const rows = await eventually(
        () => rawRows(threadId),
        (x) => x[0]?.status === "provisional",
      );
      const id = JSON.parse(rows[0].record).message_id as string;
      const sent = calls.filter((c) => c.url.endsWith("/sendMessage")).map((c) => c.json);
      expect(sent).toEqual([
        {
          chat_id: String(chat),
          text: "hi bot",
          reply_markup: {
            inline_keyboard: [
              [
                { text: "👍 Helpful", callback_data: feedbackReplyId("up", id) },
                { text: "👎 Not helpful", callback_data: feedbackReplyId("down", id) },
              ],
            ],
          },
        },
      ]);

      const tap = (n: number, from: number, data: string) =>
        update(n, {
          callback_query: { id: `q${n}`, from: { id: from, is_bot: false }, message: { message_id: 77, chat: { id: from, type: "private" } }, data },
        });
      expect((await postTelegram(tap(2, chat, feedbackReplyId("down", id)))).status).toBe(200);
      expect((await readRecord(r.name, id)).body.data.feedback).toMatchObject({ rating: "down" });
      // No turn: the thread still holds its one record, and nothing more was sent.
      expect(await rawRows(threadId)).toHaveLength(1);
      expect(calls.filter((c) => c.url.endsWith("/sendMessage"))).toHaveLength(1);

      // Another chat forges a tap naming this answer: the webhook's sender is not the answer's customer.
      const stranger = chat + 1;
      expect((await postTelegram(tap(3, stranger, feedbackReplyId("up", id)))).status).toBe(200);
      expect((await readRecord(r.name, id)).body.data.feedback).toMatchObject({ rating: "down" });
      expect(await rawRows(`bridge:${r.name}:${stranger}`)).toHaveLength(0);
    } finally {
      // The (telegram, bot id) claim is the test configuration's one: freed for other files.
      await call("DELETE", `/api/conversations/${r.name}`, { key: await admin() });
    }
  });

  it("reads back only its own reply ids (pure)", () => {
    const id = crypto.randomUUID();
    expect(parseFeedbackReplyId(feedbackReplyId("up", id))).toEqual({ rating: "up", message_id: id });
    expect(new TextEncoder().encode(feedbackReplyId("down", id)).byteLength).toBeLessThanOrEqual(64);
    for (const other of ["rating-4", "tai-fb:meh:x", "tai-fb:up:", "tai-fb:up:a b", "4", undefined]) expect(parseFeedbackReplyId(other)).toBeNull();
  });

  it("WhatsApp and Slack: the buttons go on the answer's last message, or under a question of their own; a tap comes back as a rating (pure)", () => {
    const id = crypto.randomUUID();
    const whatsapp = must(adapterFor("whatsapp"), "whatsapp");
    const short = planOutbound(whatsapp, "Your parcel left today.", null, 4096, 10, id);
    expect(short).toMatchObject({ ok: true, tooLong: false });
    const steps = short.ok ? short.steps : [];
    expect(steps).toHaveLength(1);
    expect(steps[0]).toMatchObject({
      kind: "rich",
      step: { type: "interactive", interactive: { type: "button", body: { text: "Your parcel left today." } } },
    });
    // A body over the interactive bound stays plain text; the buttons follow under the question.
    const long = planOutbound(whatsapp, "x".repeat(1500), null, 4096, 10, id);
    const longSteps = long.ok ? long.steps : [];
    expect(longSteps.map((x) => x.kind)).toEqual(["text", "rich"]);
    expect(longSteps[1]).toMatchObject({ step: { interactive: { body: { text: FEEDBACK_QUESTION } } } });
    // Without the route's switch, nothing changes.
    expect(planOutbound(whatsapp, "plain", null, 4096, 10, null)).toEqual({ ok: true, steps: [{ kind: "text", text: "plain" }], tooLong: false });

    const tapped = whatsapp.parse(
      webhook({
        url: "https://bridge.test/api/channels/whatsapp/inbound",
        body: JSON.stringify({
          entry: [
            {
              changes: [
                {
                  field: "messages",
                  value: {
                    metadata: { phone_number_id: "555" },
                    messages: [
                      {
                        from: "4915550001",
                        id: "wamid.tap",
                        type: "interactive",
                        interactive: { type: "button_reply", button_reply: { id: feedbackReplyId("up", id), title: "👍 Helpful" } },
                      },
                    ],
                  },
                },
              ],
            },
          ],
        }),
      }),
      {},
    );
    expect(tapped.events).toEqual([
      { kind: "feedback", provider_message_id: "wamid.tap", sender: "4915550001", our_identity: "555", message_id: id, rating: "up" },
    ]);

    const slack = must(adapterFor("slack"), "slack");
    const planned = planOutbound(slack, "Here you go.", null, 3000, 10, id);
    expect(planned.ok && planned.steps[0]).toMatchObject({ kind: "rich", step: { text: "Here you go." } });
    const payload = {
      type: "block_actions",
      trigger_id: "trig.1",
      user: { id: "U1" },
      channel: { id: "C9" },
      actions: [{ type: "button", action_id: "feedback-down", value: feedbackReplyId("down", id), text: { type: "plain_text", text: "👎 Not helpful" } }],
    };
    const back = slack.parse(
      webhook({ url: "https://bridge.test/api/channels/slack/inbound", body: `payload=${encodeURIComponent(JSON.stringify(payload))}` }),
      {
        CHANNEL_SLACK_BOT_USER_ID: TEST_ENV.slackBot,
      },
    );
    expect(back.events).toEqual([
      { kind: "feedback", provider_message_id: "trig.1", sender: "C9", our_identity: TEST_ENV.slackBot, message_id: id, rating: "down" },
    ]);
  });

  it("a route asks for buttons only on a channel route", async () => {
    const k = await echoKey();
    const refused = await call("POST", `/api/conversations/${uniq("r").toLowerCase()}`, {
      key: await admin(),
      body: { door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id, answer_feedback: true },
    });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toContain("answer_feedback");
  });
});

import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { SLOW_DOWN_TEXT } from "../../src/conversations/model/record";
import { TOO_LONG_TEXT } from "../../src/channels/chunking";
import { addressBucketStub } from "../../src/conversations/door/bucket-rpc";
import { createRoute, echoKey, readRecord } from "../helpers/bridge";
import { fakeNetwork, type NetCall } from "../helpers/network";
import { form, nodeTwilioSignature, postSlack, postTelegram, postTwilio, postWhatsApp, TEST_ENV, whatsappStatus, whatsappText } from "../helpers/webhooks";
import { admin, call, fetchWithEnv, uniq, dispatch } from "../helpers/http";
import { eventually, makeDue, rawRows, runAlarm, stubFor } from "../helpers/threads";
import { must } from "../../src/platform/must";

let n = 0;
const phone = () => `+1555${String(Date.now()).slice(-6)}${String(++n).padStart(2, "0")}`;

async function channelRoute(channel: string, identity: string, extra: Record<string, unknown> = {}) {
  const k = await echoKey();
  return createRoute({ door: "channel", channel, our_identity: identity, target_kind: "tool", target_name: "echo", execution_key: k.user_id, ...extra });
}

/** Answers provider sends like the real APIs; records every call. */
function fakeProviders(opts: { twilio?: (call: NetCall, i: number) => Response } = {}) {
  let i = 0;
  return fakeNetwork((req, body, calls) => {
    const url = new URL(req.url);
    if (url.host === "twilio.fake")
      return opts.twilio ? opts.twilio(calls[calls.length - 1], i++) : Response.json({ sid: `SM${crypto.randomUUID().slice(0, 8)}` }, { status: 201 });
    if (url.host === "whatsapp.fake") return Response.json({ messaging_product: "whatsapp", messages: [{ id: `wamid.${crypto.randomUUID()}` }] });
    if (url.host === "telegram.fake") return Response.json({ ok: true, result: { message_id: Math.floor(Math.random() * 1e6) } });
    if (url.host === "slack.fake") return Response.json({ ok: true, ts: `${Date.now()}.0001` });
    return new Response(`unexpected ${url.host} ${body.length}`, { status: 599 });
  });
}

const twilioBodies = (calls: NetCall[]) => calls.filter((c) => c.url.includes("twilio.fake")).map((c) => Object.fromEntries(new URLSearchParams(c.body)));

function threadOf(route: string, address: string): string {
  return `bridge:${route}:${address}`;
}

describe("Twilio SMS through the channel door", () => {
  it("verifies, routes, answers from our identity to the sender, and completes on a receipt", async () => {
    const calls = fakeProviders();
    const ours = phone();
    const them = phone();
    const r = await channelRoute("twilio", ours);
    const res = await postTwilio({ MessageSid: `SM${uniq("a")}`, From: them, To: ours, Body: "hello sms", NumMedia: "0" });
    expect(res.status).toBe(204);
    const threadId = threadOf(r.name, them);
    const rows = await eventually(
      () => rawRows(threadId),
      (x) => x[0]?.status === "provisional",
    );
    const rec = JSON.parse(rows[0].record);
    expect(rec).toMatchObject({ door: "channel", channel: "twilio", client_address: them, our_identity: ours, answer: "hello sms", inbound_text: "hello sms" });
    const sent = twilioBodies(calls);
    expect(sent).toEqual([{ To: them, From: ours, Body: "hello sms" }]);
    expect(calls[0].url).toBe("https://twilio.fake/2010-04-01/Accounts/ACtest/Messages.json");
    expect(calls[0].headers.authorization).toBe(`Basic ${btoa("ACtest:twilio-test-token")}`);
    const receipt = await postTwilio({ MessageSid: rec.outbound_message_ids[0], MessageStatus: "delivered", From: ours, To: them }, "status");
    expect(receipt.status).toBe(204);
    const done = await readRecord(r.name, rec.message_id);
    expect(done.body.data).toMatchObject({ status: "delivered" });
  });

  it("a forged or missing signature is 401 and runs no turn", async () => {
    const calls = fakeProviders();
    const ours = phone();
    const them = phone();
    const r = await channelRoute("twilio", ours);
    const forged = await postTwilio({ MessageSid: `SM${uniq("f")}`, From: them, To: ours, Body: "evil" }, "inbound", { forge: true });
    expect(forged.status).toBe(401);
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM threads WHERE route_name = ?").bind(r.name).first("n")).toBe(0);
    expect(calls).toHaveLength(0);
  });

  it("a redelivered MessageSid starts no second turn", async () => {
    const calls = fakeProviders();
    const ours = phone();
    const them = phone();
    const r = await channelRoute("twilio", ours);
    const params = { MessageSid: `SM${uniq("d")}`, From: them, To: ours, Body: "once" };
    expect((await postTwilio(params)).status).toBe(204);
    expect((await postTwilio(params)).status).toBe(204);
    const rows = await eventually(
      () => rawRows(threadOf(r.name, them)),
      (x) => x[0]?.status === "provisional",
    );
    expect(rows).toHaveLength(1);
    expect(twilioBodies(calls)).toHaveLength(1);
  });

  it("unrouted and blank inbounds are acknowledged without a turn", async () => {
    const calls = fakeProviders();
    const ours = phone();
    const them = phone();
    const r = await channelRoute("twilio", ours);
    expect((await postTwilio({ MessageSid: `SM${uniq("u")}`, From: them, To: phone(), Body: "nobody home" })).status).toBe(204);
    expect((await postTwilio({ MessageSid: `SM${uniq("b")}`, From: them, To: ours, Body: "   " })).status).toBe(204);
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM threads WHERE route_name = ?").bind(r.name).first("n")).toBe(0);
    expect(calls).toHaveLength(0);
  });

  it("rate cap: admit, slow-down reply once, shed, then refill", async () => {
    const calls = fakeProviders();
    const ours = phone();
    const them = phone();
    const r = await channelRoute("twilio", ours, { turns_per_hour_override: 1 });
    const threadId = threadOf(r.name, them);
    const post = (body: string) => postTwilio({ MessageSid: `SM${uniq("rc")}`, From: them, To: ours, Body: body });
    await post("first");
    await post("second");
    await post("third");
    const rows = await eventually(
      () => rawRows(threadId),
      (x) => x.length === 3 && x.every((row) => row.status !== "accepted" && row.status !== "pending_delivery"),
    );
    expect(rows.map((row) => row.status)).toEqual(["provisional", "provisional", "shed"]);
    expect(JSON.parse(rows[1].record)).toMatchObject({ answer: SLOW_DOWN_TEXT, inbound_text: "second" });
    expect(JSON.parse(rows[2].record)).toMatchObject({ answer: null, inbound_text: "third" });
    expect(twilioBodies(calls).map((b) => b.Body)).toEqual(["first", SLOW_DOWN_TEXT]);
    // Refill: the bucket's state is what the hour would have restored. A full bucket is a
    // forgotten one, and the bucket keeps its live state in memory, so it is told to forget.
    await addressBucketStub(env, `channel:${r.name}:${them}`).forget();
    await post("after refill");
    const later = await eventually(
      () => rawRows(threadId),
      (x) => x.length === 4 && x[3].status === "provisional",
    );
    expect(JSON.parse(later[3].record).answer).toBe("after refill");
  });

  it("splits long answers into chunks that concatenate to the exact text", async () => {
    const calls = fakeProviders();
    const ours = phone();
    const them = phone();
    await channelRoute("twilio", ours);
    const text = Array.from({ length: 500 }, (_, i) => `word${i}`).join(" ") + "\nlast line ✓ 😀";
    await postTwilio({ MessageSid: `SM${uniq("c")}`, From: them, To: ours, Body: text });
    const sent = await eventually(
      async () => twilioBodies(calls),
      (x) => x.length >= 3,
    );
    expect(sent.length).toBeGreaterThan(1);
    for (const s of sent) expect([...s.Body].length).toBeLessThanOrEqual(1600);
    expect(sent.map((s) => s.Body).join("")).toBe(text);
  });

  it("refuses an answer needing more than max_outbound_chunks with the fixed text, record failed", async () => {
    const calls = fakeProviders();
    const ours = phone();
    const them = phone();
    const r = await channelRoute("twilio", ours);
    const text = "x ".repeat(8_500);
    await postTwilio({ MessageSid: `SM${uniq("t")}`, From: them, To: ours, Body: text });
    const rows = await eventually(
      () => rawRows(threadOf(r.name, them)),
      (x) => x[0]?.status === "failed",
    );
    expect(JSON.parse(rows[0].record).error).toContain("max_outbound_chunks");
    expect(twilioBodies(calls).map((b) => b.Body)).toEqual([TOO_LONG_TEXT]);
  });

  it("a provider refusal fails without retry; a 5xx retries and resumes after the last accepted chunk", async () => {
    const ours = phone();
    const them = phone();
    const r = await channelRoute("twilio", ours);
    let refuse = true;
    fakeProviders({
      twilio: () => (refuse ? Response.json({ code: 21211, message: "invalid To" }, { status: 400 }) : Response.json({ sid: "SMok" }, { status: 201 })),
    });
    await postTwilio({ MessageSid: `SM${uniq("p")}`, From: them, To: ours, Body: "refused" });
    const failed = await eventually(
      () => rawRows(threadOf(r.name, them)),
      (x) => x[0]?.status === "failed",
    );
    expect(JSON.parse(failed[0].record)).toMatchObject({ attempts: 1 });
    expect(JSON.parse(failed[0].record).error).toContain("refused");

    refuse = false;
    const them2 = phone();
    const threadId = threadOf(r.name, them2);
    const calls = fakeProviders({
      twilio: (_c, i) => (i === 1 ? new Response("unavailable", { status: 503 }) : Response.json({ sid: `SM-${i}` }, { status: 201 })),
    });
    const text = Array.from({ length: 400 }, (_, i) => `w${i}`)
      .join(" ")
      .padEnd(2400, "!");
    await postTwilio({ MessageSid: `SM${uniq("q")}`, From: them2, To: ours, Body: text });
    const pending = await eventually(
      () => rawRows(threadId),
      (x) => x[0]?.status === "pending_delivery" && x[0].chunks_sent === 1 && x[0].delivery_lease_until === null,
    );
    expect(pending[0].chunks_sent).toBe(1);
    await makeDue(threadId, "delivery_due_at");
    await runAlarm(threadId);
    const rows = await eventually(
      () => rawRows(threadId),
      (x) => x[0]?.status === "provisional",
    );
    const bodies = twilioBodies(calls).map((b) => b.Body);
    expect(bodies).toHaveLength(3); // chunk 1 ok, chunk 2 failed, chunk 2 again
    expect(bodies[0] + bodies[2]).toBe(text);
    expect(JSON.parse(rows[0].record).outbound_message_ids).toEqual(["SM-0", "SM-2"]);
  });

  it("no receipt within the grace period completes the record; a failed receipt fails it", async () => {
    fakeProviders();
    const ours = phone();
    const r = await channelRoute("twilio", ours);
    const a = phone();
    await postTwilio({ MessageSid: `SM${uniq("g")}`, From: a, To: ours, Body: "grace" });
    const threadId = threadOf(r.name, a);
    await eventually(
      () => rawRows(threadId),
      (x) => x[0]?.status === "provisional",
    );
    await makeDue(threadId, "grace_until");
    await runAlarm(threadId);
    expect((await rawRows(threadId))[0].status).toBe("delivered");

    const b = phone();
    await postTwilio({ MessageSid: `SM${uniq("h")}`, From: b, To: ours, Body: "will fail" });
    const rows = await eventually(
      () => rawRows(threadOf(r.name, b)),
      (x) => x[0]?.status === "provisional",
    );
    const sid = JSON.parse(rows[0].record).outbound_message_ids[0];
    await postTwilio({ MessageSid: sid, MessageStatus: "undelivered", ErrorCode: "30003", From: ours, To: b }, "status");
    const after = JSON.parse((await rawRows(threadOf(r.name, b)))[0].record);
    expect(after.status).toBe("failed");
    expect(after.error).toContain("30003");
  });

  it("silence on a channel route is terminal silent with nothing sent", async () => {
    const calls = fakeProviders();
    const ours = phone();
    const them = phone();
    const r = await channelRoute("twilio", ours, { payload_expr: '{message: ""}' });
    await postTwilio({ MessageSid: `SM${uniq("s")}`, From: them, To: ours, Body: "say nothing" });
    const rows = await eventually(
      () => rawRows(threadOf(r.name, them)),
      (x) => x[0]?.status === "silent",
    );
    expect(rows[0].expires_at).not.toBeNull();
    expect(calls).toHaveLength(0);
  });
});

describe("WhatsApp, Telegram and Slack through the channel door", () => {
  it("WhatsApp: routed by phone_number_id, answered by Graph send, statuses complete the record", async () => {
    const calls = fakeProviders();
    const pnid = `pn${Date.now()}`;
    const r = await channelRoute("whatsapp", pnid);
    const res = await postWhatsApp(whatsappText(pnid, "4915550001", `wamid.${uniq("w")}`, "hallo"));
    expect(res.status).toBe(200);
    const threadId = threadOf(r.name, "4915550001");
    const rows = await eventually(
      () => rawRows(threadId),
      (x) => x[0]?.status === "provisional",
    );
    const send = must(
      calls.find((c) => c.url.includes("whatsapp.fake")),
      "the item found",
    );
    expect(send.url).toBe(`https://whatsapp.fake/v21.0/${pnid}/messages`);
    expect(send.headers.authorization).toBe("Bearer whatsapp-test-access");
    expect(JSON.parse(send.body)).toMatchObject({ messaging_product: "whatsapp", to: "4915550001", type: "text", text: { body: "hallo" } });
    const wamid = JSON.parse(rows[0].record).outbound_message_ids[0];
    expect((await postWhatsApp(whatsappStatus(pnid, wamid, "delivered"))).status).toBe(200);
    expect((await rawRows(threadId))[0].status).toBe("delivered");
    expect((await postWhatsApp(whatsappText(pnid, "4915550001", "x", "forged"), { forge: true })).status).toBe(401);
  });

  it("WhatsApp GET handshake echoes the challenge only for the right verify token", async () => {
    const ok = await dispatch(
      `https://bridge.test/api/channels/whatsapp/inbound?hub.mode=subscribe&hub.verify_token=${TEST_ENV.whatsappVerify}&hub.challenge=12345`,
    );
    expect(ok.status).toBe(200);
    expect(await ok.text()).toBe("12345");
    const bad = await dispatch("https://bridge.test/api/channels/whatsapp/inbound?hub.mode=subscribe&hub.verify_token=nope&hub.challenge=1");
    expect(bad.status).toBe(403);
  });

  it("Telegram: secret token, chat id as sender, bot id as our identity", async () => {
    const calls = fakeProviders();
    const r = await channelRoute("telegram", TEST_ENV.telegramBotId, {});
    const chat = Number(String(Date.now()).slice(-8));
    const update = {
      update_id: Number(String(Date.now()).slice(-9)),
      message: { message_id: 1, date: 1, chat: { id: chat, type: "private" }, from: { id: chat, is_bot: false, first_name: "A" }, text: "hi bot" },
    };
    expect((await postTelegram(update, { secret: "wrong" })).status).toBe(401);
    expect((await postTelegram(update)).status).toBe(200);
    await eventually(
      () => rawRows(`bridge:${r.name}:${chat}`),
      (x) => x[0]?.status === "provisional",
    );
    const send = must(
      calls.find((c) => c.url.includes("telegram.fake")),
      "the item found",
    );
    expect(send.url).toBe("https://telegram.fake/bot123456:telegram-test-token/sendMessage");
    expect(JSON.parse(send.body)).toMatchObject({ chat_id: String(chat), text: "hi bot" });
    // Clean up the claim on (telegram, bot id) so other files may reuse it.
    await call("DELETE", `/api/conversations/${r.name}`, { key: await admin() });
  });

  it("Slack: signed events, url_verification, stale timestamps refused", async () => {
    const calls = fakeProviders();
    const r = await channelRoute("slack", TEST_ENV.slackBot);
    const verification = await postSlack({ type: "url_verification", challenge: "abc" });
    expect(verification.status).toBe(200);
    expect(await verification.json()).toEqual({ challenge: "abc" });
    const event = {
      type: "event_callback",
      event_id: `Ev${uniq("s")}`,
      event: { type: "message", channel: "C123", user: "U999", text: "hello slack", ts: "1.1" },
    };
    expect((await postSlack(event, { ts: Math.floor(Date.now() / 1000) - 3600 })).status).toBe(401);
    expect((await postSlack(event, { forge: true })).status).toBe(401);
    expect((await postSlack(event)).status).toBe(200);
    await eventually(
      () => rawRows(`bridge:${r.name}:C123`),
      (x) => x[0]?.status === "provisional",
    );
    const send = must(
      calls.find((c) => c.url.includes("slack.fake")),
      "the item found",
    );
    expect(send.url).toBe("https://slack.fake/api/chat.postMessage");
    expect(send.headers.authorization).toBe("Bearer xoxb-slack-test");
    expect(JSON.parse(send.body)).toMatchObject({ channel: "C123", text: "hello slack" });
    await call("DELETE", `/api/conversations/${r.name}`, { key: await admin() });
  });
});

describe("door failures", () => {
  it("a channel whose secrets are unset has no doors (404)", async () => {
    const bare = Object.fromEntries(Object.entries(env).filter(([k]) => !k.startsWith("CHANNEL_TWILIO")));
    const res = await fetchWithEnv(bare, new Request("https://bridge.test/api/channels/twilio/inbound", { method: "POST", body: "x=1" }));
    expect(res.status).toBe(404);
  });

  it("a transient store failure answers 503 so the provider redelivers", async () => {
    const ours = phone();
    await channelRoute("twilio", ours);
    let calls = 0;
    const flaky = new Proxy(env.DB, {
      get(target, prop) {
        if (prop === "prepare") {
          return (q: string) => {
            calls += 1;
            if (/FROM routes/.test(q)) throw new Error("D1 is down");
            return target.prepare(q);
          };
        }
        const v = Reflect.get(target, prop);
        return typeof v === "function" ? v.bind(target) : v;
      },
    });
    const params = { MessageSid: `SM${uniq("x")}`, From: phone(), To: ours, Body: "hi" };
    const url = "https://bridge.test/api/channels/twilio/inbound";
    const sig = nodeTwilioSignature(TEST_ENV.twilioToken, url, params);
    const res = await fetchWithEnv(
      { ...env, DB: flaky },
      new Request(url, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": sig },
        body: form(params),
      }),
    );
    expect(res.status).toBe(503);
    expect(calls).toBeGreaterThan(0);
  });
});

describe("a routed channel absent from max_message_chars", () => {
  it("is a loud configuration error at send: the record fails naming it, nothing is sent", async () => {
    const calls = fakeProviders();
    const r = await channelRoute("slack", TEST_ENV.slackBot);
    const threadId = `bridge:${r.name}:CCFG`;
    // This thread's object runs with a map that lacks slack (the deployment's misconfiguration).
    await runInDurableObject(stubFor(threadId), (obj) => {
      (obj as unknown as { env: Record<string, unknown> }).env = { ...env, CONVERSATIONS_MAX_MESSAGE_CHARS: '{"twilio":1600}' };
    });
    const event = { type: "event_callback", event_id: `Ev${uniq("cfg")}`, event: { type: "message", channel: "CCFG", user: "U1", text: "hi", ts: "1.1" } };
    expect((await postSlack(event)).status).toBe(200);
    const rows = await eventually(
      () => rawRows(threadId),
      (x) => x[0]?.status === "failed",
    );
    expect(JSON.parse(rows[0].record).error).toContain("slack");
    expect(calls.filter((c) => c.url.includes("slack.fake"))).toHaveLength(0);
    await call("DELETE", `/api/conversations/${r.name}`, { key: await admin() });
  });
});

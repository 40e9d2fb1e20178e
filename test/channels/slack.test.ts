import { describe, expect, it } from "vitest";
import type { ChannelEnv } from "../../src/channels/adapter";
import { SLACK_DEFAULT_API_BASE, slackAdapter, slackSignature } from "../../src/channels/slack";
import { fakeFetch, hangingFetch, json } from "../helpers/network";
import { nodeHmacHex, webhook } from "../helpers/webhooks";
import { must } from "../../src/platform/must";

const ENV: ChannelEnv = {
  CHANNEL_SLACK_SIGNING_SECRET: "slack-signing-secret",
  CHANNEL_SLACK_BOT_TOKEN: "xoxb-test-token",
  CHANNEL_SLACK_BOT_USER_ID: "U0BOT",
};
const URL_IN = "https://bridge.example.com/api/channels/slack/inbound";
const NOW = new Date("2026-05-01T12:00:00Z");
const TS = String(Math.floor(NOW.getTime() / 1000));
const enc = new TextEncoder();

/** A request signed by the independent node:crypto signer at timestamp `ts`. */
function signed(body: string, ts = TS, secret = String(ENV.CHANNEL_SLACK_SIGNING_SECRET)) {
  const sig = `v0=${nodeHmacHex("sha256", secret, `v0:${ts}:${body}`)}`;
  return webhook({ url: URL_IN, headers: { "x-slack-request-timestamp": ts, "x-slack-signature": sig, "content-type": "application/json" }, body });
}
const callback = (event: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ token: "x", team_id: "T1", api_app_id: "A1", type: "event_callback", event_id: "Ev0001", event_time: 1714564800, event, ...extra });
const parsed = (body: string) => slackAdapter.parse(signed(body), ENV);
const base = { kind: "message", provider_message_id: "Ev0001", sender: "C0CHAN", our_identity: "U0BOT" };

describe("slack: signature (published test vector)", () => {
  // The worked example of Slack's "Verifying requests from Slack" page.
  const DOC_SECRET = "8f742231b10e8888abcd99yyyzzz85a5";
  const DOC_TS = "1531420618";
  const DOC_BODY =
    "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
  const DOC_SIG = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";
  const docEnv = { ...ENV, CHANNEL_SLACK_SIGNING_SECRET: DOC_SECRET };
  const docHook = (body = DOC_BODY, sig = DOC_SIG) =>
    webhook({ url: URL_IN, headers: { "x-slack-request-timestamp": DOC_TS, "x-slack-signature": sig }, body });
  const docNow = (offsetSeconds: number) => new Date((Number(DOC_TS) + offsetSeconds) * 1000);

  it("computes the documented signature", async () => {
    expect(await slackSignature(DOC_SECRET, DOC_TS, enc.encode(DOC_BODY))).toBe(DOC_SIG);
  });

  it("accepts the documented request at its own time and within ±300 s", async () => {
    for (const offset of [0, 300, -300, 120]) expect(await slackAdapter.verify(docHook(), docEnv, docNow(offset)), `offset ${offset}`).toEqual({ ok: true });
  });

  it("refuses a stale or future timestamp past 300 s even with a valid signature", async () => {
    expect(await slackAdapter.verify(docHook(), docEnv, docNow(301))).toEqual({ ok: false, status: 401, reason: "stale or malformed timestamp" });
    expect(await slackAdapter.verify(docHook(), docEnv, docNow(-301))).toMatchObject({ ok: false, status: 401 });
    // Years later: a captured request can never be replayed.
    expect(await slackAdapter.verify(docHook(), docEnv, NOW)).toMatchObject({ ok: false, status: 401 });
  });

  it("refuses a tampered body and a wrong secret", async () => {
    expect(await slackAdapter.verify(docHook(DOC_BODY.replace("text=", "text=x")), docEnv, docNow(0))).toEqual({
      ok: false,
      status: 401,
      reason: "bad signature",
    });
    expect(await slackAdapter.verify(docHook(), { ...docEnv, CHANNEL_SLACK_SIGNING_SECRET: "other" }, docNow(0))).toMatchObject({ ok: false, status: 401 });
  });
});

describe("slack: signature (own requests)", () => {
  const body = callback({ type: "message", channel: "C0CHAN", user: "U1", text: "hi", ts: "1.1" });

  it("accepts a fresh signed request", async () => {
    expect(await slackAdapter.verify(signed(body), ENV, NOW)).toEqual({ ok: true });
  });

  it("refuses missing headers and malformed timestamps", async () => {
    const good = signed(body);
    const noSig = { ...good, headers: new Headers({ "x-slack-request-timestamp": TS }) };
    const noTs = {
      ...good,
      headers: new Headers({ "x-slack-signature": must(good.headers.get("x-slack-signature"), 'good.headers.get("x-slack-signature")') }),
    };
    expect(await slackAdapter.verify(noSig, ENV, NOW)).toEqual({ ok: false, status: 401, reason: "missing signature" });
    expect(await slackAdapter.verify(noTs, ENV, NOW)).toEqual({ ok: false, status: 401, reason: "missing signature" });
    for (const ts of ["abc", "1e9", `${TS}.5`, "-1"]) expect(await slackAdapter.verify(signed(body, ts), ENV, NOW)).toMatchObject({ ok: false, status: 401 });
  });

  it("refuses a signature over a different timestamp than the header's", async () => {
    const other = signed(body, String(Number(TS) - 10));
    const swapped = {
      ...other,
      headers: new Headers({
        "x-slack-request-timestamp": TS,
        "x-slack-signature": must(other.headers.get("x-slack-signature"), 'other.headers.get("x-slack-signature")'),
      }),
    };
    expect(await slackAdapter.verify(swapped, ENV, NOW)).toMatchObject({ ok: false, status: 401, reason: "bad signature" });
  });

  for (const name of ["CHANNEL_SLACK_SIGNING_SECRET", "CHANNEL_SLACK_BOT_TOKEN", "CHANNEL_SLACK_BOT_USER_ID"]) {
    it(`fails closed (404) without ${name}`, async () => {
      const env = { ...ENV, [name]: "" };
      expect(slackAdapter.isConfigured(env)).toBe(false);
      expect(await slackAdapter.verify(signed(body), env, NOW)).toEqual({ ok: false, status: 404, reason: "channel not configured" });
    });
  }
});

describe("slack: normalization", () => {
  it("answers url_verification with {challenge}", async () => {
    const out = parsed(JSON.stringify({ token: "t", challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", type: "url_verification" }));
    expect(out.events).toEqual([]);
    expect(out.reply?.status).toBe(200);
    expect(await out.reply?.json()).toEqual({ challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" });
  });

  it("maps event_id / event.channel / bot user id and unescapes &amp; &lt; &gt;", () => {
    const out = parsed(callback({ type: "message", channel: "C0CHAN", user: "U1", text: "a &lt;b&gt; &amp;amp; <@U0BOT>", ts: "1.1", channel_type: "im" }));
    expect(out).toEqual({ events: [{ ...base, text: "a <b> &amp; <@U0BOT>" }], ignored: 0 });
  });

  it("maps files of a file_share message to attachments (url_private)", () => {
    const out = parsed(
      callback({
        type: "message",
        subtype: "file_share",
        channel: "C0CHAN",
        user: "U1",
        text: "see attached",
        ts: "1.2",
        files: [
          { id: "F1", name: "photo.png", mimetype: "image/png", url_private: "https://files.slack.com/files-pri/T1-F1/photo.png" },
          { id: "F2", name: "notes.txt", mimetype: "text/plain", url_private: "https://files.slack.com/files-pri/T1-F2/notes.txt" },
          { id: "F3", mode: "tombstone" },
        ],
      }),
    );
    expect(out.events[0]).toEqual({
      ...base,
      text: "see attached",
      attachments: [
        { kind: "image", url: "https://files.slack.com/files-pri/T1-F1/photo.png", filename: "photo.png", mime_type: "image/png" },
        { kind: "document", url: "https://files.slack.com/files-pri/T1-F2/notes.txt", filename: "notes.txt", mime_type: "text/plain" },
      ],
    });
  });

  it("ignores bot messages, our own messages, edits, deletions, joins, reactions and mentions", () => {
    for (const event of [
      { type: "message", channel: "C0CHAN", bot_id: "B1", text: "beep", ts: "1" },
      { type: "message", subtype: "bot_message", channel: "C0CHAN", bot_id: "B1", text: "beep", ts: "1" },
      { type: "message", channel: "C0CHAN", user: "U0BOT", text: "our echo", ts: "1" },
      { type: "message", subtype: "message_changed", channel: "C0CHAN", message: { user: "U1", text: "edited" }, ts: "1" },
      { type: "message", subtype: "message_deleted", channel: "C0CHAN", ts: "1" },
      { type: "message", subtype: "channel_join", channel: "C0CHAN", user: "U1", text: "<@U1> has joined", ts: "1" },
      { type: "reaction_added", user: "U1", reaction: "thumbsup", item: { type: "message", channel: "C0CHAN", ts: "1" } },
      { type: "app_mention", channel: "C0CHAN", user: "U1", text: "<@U0BOT> hi", ts: "1" },
      { type: "message", channel: "C0CHAN", user: "U1", text: "", ts: "1" },
    ]) {
      expect(parsed(callback(event)), JSON.stringify(event)).toEqual({ events: [], ignored: 1 });
    }
  });

  it("ignores other envelope types and never throws on malformed bodies", () => {
    expect(parsed(JSON.stringify({ type: "app_rate_limited", team_id: "T1", minute_rate_limited: 1 }))).toEqual({ events: [], ignored: 1 });
    expect(parsed("{not json")).toEqual({ events: [], ignored: 1 });
    expect(parsed("payload=%7Bbroken")).toEqual({ events: [], ignored: 1 });
    expect(parsed(JSON.stringify({ type: "event_callback", event: { type: "message", channel: "C", user: "U1", text: "no event id" } }))).toEqual({
      events: [],
      ignored: 1,
    });
  });

  it("maps a block_actions button tap (interactivity form payload): text = label, params.reply_id = value", () => {
    const payload = {
      type: "block_actions",
      user: { id: "U1" },
      channel: { id: "C0CHAN" },
      trigger_id: "1111.2222.abc",
      actions: [{ type: "button", action_id: "choose", block_id: "b", value: "opt-yes", text: { type: "plain_text", text: "Yes" }, action_ts: "1.5" }],
    };
    const out = parsed(new URLSearchParams({ payload: JSON.stringify(payload) }).toString());
    expect(out).toEqual({ events: [{ ...base, provider_message_id: "1111.2222.abc", text: "Yes", params: { reply_id: "opt-yes" } }], ignored: 0 });
    const select = {
      ...payload,
      actions: [{ type: "static_select", action_id: "pick", selected_option: { text: { type: "plain_text", text: "Tuesday" }, value: "tue" } }],
    };
    expect(parsed(new URLSearchParams({ payload: JSON.stringify(select) }).toString()).events[0]).toMatchObject({
      text: "Tuesday",
      params: { reply_id: "tue" },
    });
  });
});

describe("slack: send", () => {
  const args = { to: "C0CHAN", from: "U0BOT", text: "Answer *bold* 🎉" };

  it("POSTs {channel, text} with the Bearer bot token to {base}/chat.postMessage and returns ts", async () => {
    const f = fakeFetch(() => json({ ok: true, channel: "C0CHAN", ts: "1714564800.000200", message: {} }));
    expect(await slackAdapter.send(args, { fetch: f.fetch, env: ENV, timeoutMs: 5000 })).toEqual({ ok: true, provider_message_id: "1714564800.000200" });
    const [req] = f.calls;
    expect(SLACK_DEFAULT_API_BASE).toBe("https://slack.com/api");
    expect(req.url).toBe("https://slack.com/api/chat.postMessage");
    expect(req.method).toBe("POST");
    expect(req.headers["authorization"]).toBe("Bearer xoxb-test-token");
    expect(req.headers["content-type"]).toBe("application/json; charset=utf-8");
    expect(JSON.parse(req.body)).toEqual({ channel: "C0CHAN", text: "Answer *bold* 🎉" });
  });

  it("honours CHANNEL_SLACK_API_BASE", async () => {
    const f = fakeFetch(() => json({ ok: true, ts: "1.0" }));
    await slackAdapter.send(args, { fetch: f.fetch, env: { ...ENV, CHANNEL_SLACK_API_BASE: "http://127.0.0.1:9002/api/" }, timeoutMs: 5000 });
    expect(f.calls[0].url).toBe("http://127.0.0.1:9002/api/chat.postMessage");
  });

  it("succeeds only on ok: true; ratelimited and Slack-side errors are transient, others permanent", async () => {
    const send = (res: () => Response) => slackAdapter.send(args, { fetch: fakeFetch(res).fetch, env: ENV, timeoutMs: 5000 });
    expect(await send(() => json({ ok: false, error: "channel_not_found" }))).toEqual({
      ok: false,
      permanent: true,
      status: 200,
      reason: "slack error channel_not_found",
    });
    expect(await send(() => json({ ok: false, error: "ratelimited" }))).toEqual({
      ok: false,
      permanent: false,
      status: 200,
      reason: "slack error ratelimited",
    });
    expect(await send(() => json({ ok: false, error: "internal_error" }))).toMatchObject({ ok: false, permanent: false });
    expect(await send(() => json({ ok: false, error: "ratelimited" }, 429, { "retry-after": "30" }))).toEqual({
      ok: false,
      permanent: false,
      status: 429,
      reason: "http 429",
      retry_after_seconds: 30,
    });
    expect(await send(() => new Response("upstream", { status: 503 }))).toMatchObject({ ok: false, permanent: false, status: 503 });
    expect(await send(() => new Response("<html>", { status: 200 }))).toEqual({
      ok: false,
      permanent: true,
      status: 200,
      reason: "slack error unexpected response",
    });
    // An error value that is not a Slack error code is not echoed.
    expect(await send(() => json({ ok: false, error: "Something <with> user text" }))).toMatchObject({
      reason: "slack error unexpected response",
    });
  });

  it("times out through the AbortSignal as a transient failure", async () => {
    const f = hangingFetch();
    expect(await slackAdapter.send(args, { fetch: f.fetch, env: ENV, timeoutMs: 5 })).toEqual({ ok: false, permanent: false, reason: "timeout" });
  });
});

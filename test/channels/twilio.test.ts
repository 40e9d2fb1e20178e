import { describe, expect, it } from "vitest";
import type { ChannelEnv } from "../../src/channels/adapter";
import { TWILIO_DEFAULT_API_BASE, twilioAdapter, twilioSignature } from "../../src/channels/twilio";
import { fakeFetch, hangingFetch, json } from "../helpers/network";
import { form, nodeTwilioSignature, webhook } from "../helpers/webhooks";

const ENV: ChannelEnv = {
  CHANNEL_TWILIO_ACCOUNT_SID: "AC0123456789abcdef0123456789abcdef",
  CHANNEL_TWILIO_AUTH_TOKEN: "twilio-test-token",
  CHANNEL_TWILIO_PUBLIC_URL: "https://bridge.example.com",
};
const INBOUND_URL = "https://bridge.example.com/api/channels/twilio/inbound";
const STATUS_URL = "https://bridge.example.com/api/channels/twilio/status";
const NOW = new Date("2026-05-01T12:00:00Z");

/** A form webhook signed by the independent node:crypto signer, as Twilio would send it. */
function signed(url: string, params: Record<string, string>, door: "inbound" | "status" = "inbound", env = ENV) {
  const sig = nodeTwilioSignature(String(env.CHANNEL_TWILIO_AUTH_TOKEN), url, params);
  return webhook({ door, url, headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": sig }, body: form(params) });
}

describe("twilio: signature (published test vector)", () => {
  // The worked example of Twilio's "Webhooks security" page: token 12345, this URL and these params.
  const docEnv = { ...ENV, CHANNEL_TWILIO_AUTH_TOKEN: "12345", CHANNEL_TWILIO_PUBLIC_URL: "https://mycompany.com" };
  const docParams = { CallSid: "CA1234567890ABCDE", Caller: "+12349013030", Digits: "1234", From: "+12349013030", To: "+18005551212" };
  const DOC_SIG = "0/KCTR6DLpKmkAf8muzZqo1nDgQ=";
  // Params deliberately out of order: the scheme sorts them.
  const docBody = "To=%2B18005551212&CallSid=CA1234567890ABCDE&Digits=1234&From=%2B12349013030&Caller=%2B12349013030";
  // The Worker sees its own host; the public URL's origin replaces it.
  const docHook = (sig: string, query = "?foo=1&bar=2", body = docBody) =>
    webhook({ url: `https://worker.internal/myapp.php${query}`, headers: { "x-twilio-signature": sig }, body });

  it("computes the documented signature", async () => {
    expect(await twilioSignature("12345", "https://mycompany.com/myapp.php?foo=1&bar=2", Object.entries(docParams))).toBe(DOC_SIG);
  });

  it("accepts the documented request", async () => {
    expect(await twilioAdapter.verify(docHook(DOC_SIG), docEnv, NOW)).toEqual({ ok: true });
  });

  it("accepts a public URL written with a trailing slash (only its origin is used)", async () => {
    expect(await twilioAdapter.verify(docHook(DOC_SIG), { ...docEnv, CHANNEL_TWILIO_PUBLIC_URL: "https://mycompany.com/" }, NOW)).toEqual({ ok: true });
  });

  it("refuses a tampered param, another query string, and a wrong token", async () => {
    const tampered = docBody.replace("Digits=1234", "Digits=9999");
    expect(await twilioAdapter.verify(docHook(DOC_SIG, "?foo=1&bar=2", tampered), docEnv, NOW)).toMatchObject({ ok: false, status: 401 });
    expect(await twilioAdapter.verify(docHook(DOC_SIG, "?foo=1&bar=3"), docEnv, NOW)).toMatchObject({ ok: false, status: 401 });
    expect(await twilioAdapter.verify(docHook(DOC_SIG), { ...docEnv, CHANNEL_TWILIO_AUTH_TOKEN: "54321" }, NOW)).toMatchObject({ ok: false, status: 401 });
    expect(await twilioAdapter.verify(docHook(DOC_SIG), { ...docEnv, CHANNEL_TWILIO_PUBLIC_URL: "https://evil.example" }, NOW)).toMatchObject({
      ok: false,
      status: 401,
    });
  });

  it("refuses a missing or truncated signature header", async () => {
    const noHeader = webhook({ url: "https://worker.internal/myapp.php?foo=1&bar=2", body: docBody });
    expect(await twilioAdapter.verify(noHeader, docEnv, NOW)).toEqual({ ok: false, status: 401, reason: "missing signature" });
    expect(await twilioAdapter.verify(docHook(DOC_SIG.slice(0, -1)), docEnv, NOW)).toMatchObject({ ok: false, status: 401 });
  });
});

describe("twilio: configuration fails closed", () => {
  const params = { MessageSid: "SM1", From: "+15550001111", To: "+15550002222", Body: "hi" };
  for (const name of ["CHANNEL_TWILIO_ACCOUNT_SID", "CHANNEL_TWILIO_AUTH_TOKEN", "CHANNEL_TWILIO_PUBLIC_URL"]) {
    it(`is not configured without ${name}, and verify answers 404 even for a correct signature`, async () => {
      const env = { ...ENV, [name]: "  " };
      expect(twilioAdapter.isConfigured(env)).toBe(false);
      expect(await twilioAdapter.verify(signed(INBOUND_URL, params), env, NOW)).toEqual({ ok: false, status: 404, reason: "channel not configured" });
    });
  }

  it("treats a public URL that is not an http(s) URL as not configured", () => {
    expect(twilioAdapter.isConfigured({ ...ENV, CHANNEL_TWILIO_PUBLIC_URL: "bridge.example.com" })).toBe(false);
    expect(twilioAdapter.isConfigured(ENV)).toBe(true);
  });
});

describe("twilio: inbound normalization", () => {
  it("maps MessageSid / From / To / Body", async () => {
    const hook = signed(INBOUND_URL, {
      MessageSid: "SM123",
      AccountSid: "AC1",
      From: "+15550001111",
      To: "+15550002222",
      Body: "Hello there 👋",
      NumMedia: "0",
    });
    expect(await twilioAdapter.verify(hook, ENV, NOW)).toEqual({ ok: true });
    expect(twilioAdapter.parse(hook, ENV)).toEqual({
      events: [{ kind: "message", provider_message_id: "SM123", sender: "+15550001111", our_identity: "+15550002222", text: "Hello there 👋" }],
      ignored: 0,
    });
  });

  it("maps NumMedia / MediaUrl{i} / MediaContentType{i} to attachments by MIME type", () => {
    const hook = signed(INBOUND_URL, {
      MessageSid: "MM1",
      From: "+15550001111",
      To: "+15550002222",
      Body: "",
      NumMedia: "3",
      MediaUrl0: "https://api.twilio.com/media/ME0",
      MediaContentType0: "image/jpeg",
      MediaUrl1: "https://api.twilio.com/media/ME1",
      MediaContentType1: "application/pdf",
      MediaUrl2: "https://api.twilio.com/media/ME2",
      MediaContentType2: "audio/ogg",
    });
    const [msg] = twilioAdapter.parse(hook, ENV).events;
    expect(msg).toMatchObject({ kind: "message", provider_message_id: "MM1", text: "" });
    expect(msg.kind === "message" && msg.attachments).toEqual([
      { kind: "image", url: "https://api.twilio.com/media/ME0", mime_type: "image/jpeg" },
      { kind: "document", url: "https://api.twilio.com/media/ME1", mime_type: "application/pdf" },
      { kind: "audio", url: "https://api.twilio.com/media/ME2", mime_type: "audio/ogg" },
    ]);
  });

  it("maps Latitude / Longitude (with Label and Address) to a location", () => {
    const hook = signed(INBOUND_URL, {
      MessageSid: "SM9",
      From: "whatsapp:+15550001111",
      To: "whatsapp:+15550002222",
      Body: "",
      Latitude: "52.5200",
      Longitude: "13.4050",
      Label: "Office",
      Address: "Berlin",
    });
    const [msg] = twilioAdapter.parse(hook, ENV).events;
    expect(msg).toMatchObject({ location: { latitude: 52.52, longitude: 13.405, name: "Office", address: "Berlin" } });
  });

  it("carries a WhatsApp quick-reply ButtonPayload as params.button_payload", () => {
    const hook = signed(INBOUND_URL, { MessageSid: "SM8", From: "a", To: "b", Body: "Yes", ButtonText: "Yes", ButtonPayload: "confirm-42" });
    expect(twilioAdapter.parse(hook, ENV).events[0]).toMatchObject({ text: "Yes", params: { button_payload: "confirm-42" } });
  });

  it("ignores a message with no body, media or location, and one missing its ids", () => {
    expect(twilioAdapter.parse(signed(INBOUND_URL, { MessageSid: "SM1", From: "a", To: "b", Body: "", NumMedia: "0" }), ENV)).toEqual({
      events: [],
      ignored: 1,
    });
    expect(twilioAdapter.parse(signed(INBOUND_URL, { From: "a", To: "b", Body: "hi" }), ENV)).toEqual({ events: [], ignored: 1 });
  });

  it("never throws on a body that is not UTF-8", () => {
    const hook = webhook({ url: INBOUND_URL, body: "" });
    hook.raw = new Uint8Array([0xff, 0xfe, 0x00]);
    expect(twilioAdapter.parse(hook, ENV)).toEqual({ events: [], ignored: 1 });
  });
});

describe("twilio: status door receipts", () => {
  it("maps delivered → delivered", () => {
    const hook = signed(STATUS_URL, { MessageSid: "SM777", MessageStatus: "delivered", From: "+15550002222", To: "+15550001111" }, "status");
    expect(twilioAdapter.parse(hook, ENV)).toEqual({
      events: [{ kind: "receipt", provider_message_id: "SM777", status: "delivered", our_identity: "+15550002222" }],
      ignored: 0,
    });
  });

  it("maps failed and undelivered → failed, carrying the error code only", () => {
    const failed = signed(STATUS_URL, { MessageSid: "SM1", MessageStatus: "failed", ErrorCode: "30008" }, "status");
    const undelivered = signed(STATUS_URL, { MessageSid: "SM2", MessageStatus: "undelivered", ErrorCode: "30003" }, "status");
    expect(twilioAdapter.parse(failed, ENV).events).toEqual([{ kind: "receipt", provider_message_id: "SM1", status: "failed", error: "twilio error 30008" }]);
    expect(twilioAdapter.parse(undelivered, ENV).events).toEqual([
      { kind: "receipt", provider_message_id: "SM2", status: "failed", error: "twilio error 30003" },
    ]);
  });

  it("ignores progress statuses (queued, sent, read, ...)", () => {
    for (const s of ["queued", "sending", "sent", "accepted", "read", "receiving", "received"]) {
      expect(twilioAdapter.parse(signed(STATUS_URL, { MessageSid: "SM3", MessageStatus: s }, "status"), ENV)).toEqual({ events: [], ignored: 1 });
    }
  });

  it("verifies the status door's own URL", async () => {
    const hook = signed(STATUS_URL, { MessageSid: "SM777", MessageStatus: "delivered" }, "status");
    expect(await twilioAdapter.verify(hook, ENV, NOW)).toEqual({ ok: true });
    // The same signature presented at the inbound door's URL does not verify.
    const moved = { ...hook, url: new URL(INBOUND_URL) };
    expect(await twilioAdapter.verify(moved, ENV, NOW)).toMatchObject({ ok: false, status: 401 });
  });
});

describe("twilio: send", () => {
  const args = { to: "+15550001111", from: "+15550002222", text: "Grüße & 😀 = ok?" };

  it("POSTs the form To/From/Body with Basic auth to the versioned Messages path", async () => {
    const f = fakeFetch(() => json({ sid: "SM0001", status: "queued" }, 201));
    const r = await twilioAdapter.send(args, { fetch: f.fetch, env: ENV, timeoutMs: 5000 });
    expect(r).toEqual({ ok: true, provider_message_id: "SM0001" });
    expect(f.calls).toHaveLength(1);
    const [req] = f.calls;
    expect(TWILIO_DEFAULT_API_BASE).toBe("https://api.twilio.com");
    expect(req.url).toBe(`https://api.twilio.com/2010-04-01/Accounts/${ENV.CHANNEL_TWILIO_ACCOUNT_SID}/Messages.json`);
    expect(req.method).toBe("POST");
    expect(req.headers["authorization"]).toBe(`Basic ${btoa(`${ENV.CHANNEL_TWILIO_ACCOUNT_SID}:${ENV.CHANNEL_TWILIO_AUTH_TOKEN}`)}`);
    expect(req.headers["content-type"]).toBe("application/x-www-form-urlencoded");
    expect(Object.fromEntries(new URLSearchParams(req.body))).toEqual({ To: args.to, From: args.from, Body: args.text });
    expect(req.signal).toBeInstanceOf(AbortSignal);
  });

  it("sends to CHANNEL_TWILIO_API_BASE when set (trailing slash tolerated)", async () => {
    const f = fakeFetch(() => json({ sid: "SM2" }, 201));
    await twilioAdapter.send(args, { fetch: f.fetch, env: { ...ENV, CHANNEL_TWILIO_API_BASE: "http://127.0.0.1:8787/fake/twilio/" }, timeoutMs: 5000 });
    expect(f.calls[0].url).toBe(`http://127.0.0.1:8787/fake/twilio/2010-04-01/Accounts/${ENV.CHANNEL_TWILIO_ACCOUNT_SID}/Messages.json`);
  });

  it("classifies a 4xx refusal as permanent, naming only Twilio's error code", async () => {
    const f = fakeFetch(() => json({ code: 21211, message: "The 'To' number +15550001111 is not valid.", status: 400 }, 400));
    const r = await twilioAdapter.send(args, { fetch: f.fetch, env: ENV, timeoutMs: 5000 });
    expect(r).toEqual({ ok: false, permanent: true, status: 400, reason: "twilio error 21211" });
  });

  it("classifies 5xx and 429 as transient, with Retry-After", async () => {
    const e500 = await twilioAdapter.send(args, { fetch: fakeFetch(() => new Response("oops", { status: 503 })).fetch, env: ENV, timeoutMs: 5000 });
    expect(e500).toEqual({ ok: false, permanent: false, status: 503, reason: "http 503" });
    const e429 = await twilioAdapter.send(args, {
      fetch: fakeFetch(() => json({ code: 20429 }, 429, { "retry-after": "7" })).fetch,
      env: ENV,
      timeoutMs: 5000,
    });
    expect(e429).toEqual({ ok: false, permanent: false, status: 429, reason: "twilio error 20429", retry_after_seconds: 7 });
  });

  it("classifies a network error as transient without echoing its text", async () => {
    const f = fakeFetch(() => {
      throw new TypeError(`connect failed to ${ENV.CHANNEL_TWILIO_AUTH_TOKEN}`);
    });
    const r = await twilioAdapter.send(args, { fetch: f.fetch, env: ENV, timeoutMs: 5000 });
    expect(r).toEqual({ ok: false, permanent: false, reason: "network error" });
  });

  it("aborts at the timeout through the request's AbortSignal (transient)", async () => {
    const f = hangingFetch();
    const r = await twilioAdapter.send(args, { fetch: f.fetch, env: ENV, timeoutMs: 5 });
    expect(r).toEqual({ ok: false, permanent: false, reason: "timeout" });
    expect(f.calls[0].signal?.aborted).toBe(true);
  });

  it("accepts a 2xx without a sid with a null id (the HTTP status is Twilio's acceptance)", async () => {
    const r = await twilioAdapter.send(args, { fetch: fakeFetch(() => new Response("", { status: 201 })).fetch, env: ENV, timeoutMs: 5000 });
    expect(r).toEqual({ ok: true, provider_message_id: null });
  });

  it("refuses permanently, without calling out, when not configured", async () => {
    const f = fakeFetch(() => json({ sid: "x" }, 201));
    const r = await twilioAdapter.send(args, { fetch: f.fetch, env: {}, timeoutMs: 5000 });
    expect(r).toEqual({ ok: false, permanent: true, reason: "channel not configured" });
    expect(f.calls).toHaveLength(0);
  });
});

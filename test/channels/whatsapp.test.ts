import { describe, expect, it } from "vitest";
import type { ChannelEnv } from "../../src/channels/adapter";
import { WHATSAPP_DEFAULT_API_BASE, whatsappAdapter } from "../../src/channels/whatsapp";
import { fakeFetch, hangingFetch, json } from "../helpers/network";
import { nodeHmacHex, webhook } from "../helpers/webhooks";

const ENV: ChannelEnv = {
  CHANNEL_WHATSAPP_APP_SECRET: "wa-app-secret",
  CHANNEL_WHATSAPP_ACCESS_TOKEN: "wa-access-token",
  CHANNEL_WHATSAPP_VERIFY_TOKEN: "wa-verify-token",
};
const URL_IN = "https://bridge.example.com/api/channels/whatsapp/inbound";
const NOW = new Date("2026-05-01T12:00:00Z");
const PNID = "106540352242922";

function signedPost(body: string, secret = String(ENV.CHANNEL_WHATSAPP_APP_SECRET)) {
  return webhook({
    url: URL_IN,
    headers: { "content-type": "application/json", "x-hub-signature-256": `sha256=${nodeHmacHex("sha256", secret, body)}` },
    body,
  });
}

/** A Cloud API webhook body with one change of field `messages`. */
function envelope(value: Record<string, unknown>): string {
  return JSON.stringify({
    object: "whatsapp_business_account",
    entry: [
      {
        id: "WABA1",
        changes: [
          { field: "messages", value: { messaging_product: "whatsapp", metadata: { display_phone_number: "15550002222", phone_number_id: PNID }, ...value } },
        ],
      },
    ],
  });
}
const msg = (m: Record<string, unknown>) =>
  envelope({
    contacts: [{ wa_id: "15550001111", profile: { name: "Ana" } }],
    messages: [{ from: "15550001111", id: "wamid.IN1", timestamp: "1714564800", ...m }],
  });
const parsed = (body: string) => whatsappAdapter.parse(signedPost(body), ENV);

describe("whatsapp: POST signature", () => {
  const body = msg({ type: "text", text: { body: "hi" } });

  it("accepts sha256=<hex HMAC-SHA256(app secret, raw body)>", async () => {
    expect(await whatsappAdapter.verify(signedPost(body), ENV, NOW)).toEqual({ ok: true });
  });

  it("accepts upper-case hex digits", async () => {
    const hook = signedPost(body);
    const upper = { ...hook, headers: new Headers({ "x-hub-signature-256": `sha256=${nodeHmacHex("sha256", "wa-app-secret", body).toUpperCase()}` }) };
    expect(await whatsappAdapter.verify(upper, ENV, NOW)).toEqual({ ok: true });
  });

  it("refuses a tampered body, a wrong secret, a wrong prefix and a missing header", async () => {
    const good = signedPost(body);
    const tampered = { ...good, raw: new TextEncoder().encode(body.replace('"hi"', '"hj"')) };
    expect(await whatsappAdapter.verify(tampered, ENV, NOW)).toEqual({ ok: false, status: 401, reason: "bad signature" });
    expect(await whatsappAdapter.verify(signedPost(body, "other-secret"), ENV, NOW)).toMatchObject({ ok: false, status: 401 });
    const sha1 = { ...good, headers: new Headers({ "x-hub-signature-256": `sha1=${nodeHmacHex("sha1", "wa-app-secret", body)}` }) };
    expect(await whatsappAdapter.verify(sha1, ENV, NOW)).toMatchObject({ ok: false, status: 401 });
    const bare = webhook({ url: URL_IN, body });
    expect(await whatsappAdapter.verify(bare, ENV, NOW)).toEqual({ ok: false, status: 401, reason: "missing signature" });
  });

  for (const name of ["CHANNEL_WHATSAPP_APP_SECRET", "CHANNEL_WHATSAPP_ACCESS_TOKEN", "CHANNEL_WHATSAPP_VERIFY_TOKEN"]) {
    it(`fails closed (404) without ${name}`, async () => {
      const env = { ...ENV };
      delete (env as Record<string, unknown>)[name];
      expect(whatsappAdapter.isConfigured(env)).toBe(false);
      expect(await whatsappAdapter.verify(signedPost(body), env, NOW)).toEqual({ ok: false, status: 404, reason: "channel not configured" });
    });
  }
});

describe("whatsapp: GET handshake", () => {
  const get = (q: string) => webhook({ method: "GET", url: `${URL_IN}?${q}` });

  it("accepts subscribe with the verify token and echoes hub.challenge as text/plain", async () => {
    const hook = get("hub.mode=subscribe&hub.verify_token=wa-verify-token&hub.challenge=1158201444");
    expect(await whatsappAdapter.verify(hook, ENV, NOW)).toEqual({ ok: true });
    const out = whatsappAdapter.parse(hook, ENV);
    expect(out.events).toEqual([]);
    expect(out.reply?.status).toBe(200);
    expect(out.reply?.headers.get("content-type")).toMatch(/^text\/plain/);
    expect(await out.reply?.text()).toBe("1158201444");
  });

  it("answers 403 to a wrong token, another mode or a missing challenge", async () => {
    for (const q of [
      "hub.mode=subscribe&hub.verify_token=nope&hub.challenge=1",
      "hub.mode=unsubscribe&hub.verify_token=wa-verify-token&hub.challenge=1",
      "hub.mode=subscribe&hub.verify_token=wa-verify-token",
      "hub.mode=subscribe&hub.challenge=1",
    ]) {
      expect(await whatsappAdapter.verify(get(q), ENV, NOW)).toEqual({ ok: false, status: 403, reason: "handshake refused" });
    }
  });

  it("answers 404 when the channel is not configured", async () => {
    const hook = get("hub.mode=subscribe&hub.verify_token=wa-verify-token&hub.challenge=1");
    expect(await whatsappAdapter.verify(hook, {}, NOW)).toMatchObject({ ok: false, status: 404 });
  });
});

describe("whatsapp: normalization", () => {
  it("maps a text message: id / from / metadata.phone_number_id", () => {
    expect(parsed(msg({ type: "text", text: { body: "Hola 👋" } }))).toEqual({
      events: [{ kind: "message", provider_message_id: "wamid.IN1", sender: "15550001111", our_identity: PNID, text: "Hola 👋" }],
      ignored: 0,
    });
  });

  it("maps image, video, audio, document and sticker to media-id attachments", () => {
    const cases: Array<[Record<string, unknown>, Record<string, unknown>, string]> = [
      [
        { type: "image", image: { id: "MEDIA1", mime_type: "image/jpeg", sha256: "x", caption: "look" } },
        { kind: "image", url: "whatsapp-media:MEDIA1", caption: "look", mime_type: "image/jpeg" },
        "look",
      ],
      [{ type: "video", video: { id: "MEDIA2", mime_type: "video/mp4" } }, { kind: "video", url: "whatsapp-media:MEDIA2", mime_type: "video/mp4" }, ""],
      [
        { type: "audio", audio: { id: "MEDIA3", mime_type: "audio/ogg; codecs=opus", voice: true } },
        { kind: "audio", url: "whatsapp-media:MEDIA3", mime_type: "audio/ogg; codecs=opus" },
        "",
      ],
      [
        { type: "document", document: { id: "MEDIA4", mime_type: "application/pdf", filename: "invoice.pdf", caption: "inv" } },
        { kind: "document", url: "whatsapp-media:MEDIA4", filename: "invoice.pdf", caption: "inv", mime_type: "application/pdf" },
        "inv",
      ],
      [
        { type: "sticker", sticker: { id: "MEDIA5", mime_type: "image/webp", animated: false } },
        { kind: "image", url: "whatsapp-media:MEDIA5", mime_type: "image/webp" },
        "",
      ],
    ];
    for (const [m, attachment, text] of cases) {
      const out = parsed(msg(m));
      expect(out.ignored).toBe(0);
      expect(out.events[0]).toEqual({
        kind: "message",
        provider_message_id: "wamid.IN1",
        sender: "15550001111",
        our_identity: PNID,
        text,
        attachments: [attachment],
      });
    }
  });

  it("maps a location with name and address", () => {
    const out = parsed(msg({ type: "location", location: { latitude: 38.9, longitude: -77.03, name: "Cafe", address: "1 Main St" } }));
    expect(out.events[0]).toMatchObject({ text: "", location: { latitude: 38.9, longitude: -77.03, name: "Cafe", address: "1 Main St" } });
  });

  it("maps button_reply and list_reply taps: text = title, params.reply_id = id", () => {
    const button = parsed(msg({ type: "interactive", interactive: { type: "button_reply", button_reply: { id: "opt-yes", title: "Yes" } } }));
    expect(button.events[0]).toMatchObject({ text: "Yes", params: { reply_id: "opt-yes" } });
    const list = parsed(msg({ type: "interactive", interactive: { type: "list_reply", list_reply: { id: "row-2", title: "Tuesday", description: "10:00" } } }));
    expect(list.events[0]).toMatchObject({ text: "Tuesday", params: { reply_id: "row-2" } });
  });

  it("maps a template quick-reply button: text = button text, params.button_payload = payload", () => {
    const out = parsed(msg({ type: "button", button: { payload: "CONFIRM_42", text: "Confirm" }, context: { from: "15550002222", id: "wamid.OUT" } }));
    expect(out.events[0]).toMatchObject({ text: "Confirm", params: { button_payload: "CONFIRM_42" } });
  });

  it("maps a Flow submission (nfm_reply) to form", () => {
    const out = parsed(
      msg({
        type: "interactive",
        interactive: { type: "nfm_reply", nfm_reply: { name: "flow", body: "Sent", response_json: '{"flow_token":"t1","size":"M"}' } },
      }),
    );
    expect(out.events[0]).toMatchObject({ text: "Sent", form: { flow_token: "t1", size: "M" } });
  });

  it("carries a click-to-chat referral as referral_* params", () => {
    const out = parsed(
      msg({
        type: "text",
        text: { body: "Hi from the ad" },
        referral: { source_url: "https://fb.me/x", source_id: "ad-9", source_type: "ad", headline: "Sale" },
      }),
    );
    expect(out.events[0]).toMatchObject({
      params: { referral_source_url: "https://fb.me/x", referral_source_id: "ad-9", referral_source_type: "ad", referral_headline: "Sale" },
    });
  });

  it("drops a tap id that would break the spec §4.2 value bound rather than truncating it", () => {
    const out = parsed(msg({ type: "interactive", interactive: { type: "button_reply", button_reply: { id: "x".repeat(513), title: "Yes" } } }));
    expect(out.events[0]).toEqual({ kind: "message", provider_message_id: "wamid.IN1", sender: "15550001111", our_identity: PNID, text: "Yes" });
  });

  it("ignores reactions, unsupported, contacts and system messages", () => {
    for (const m of [
      { type: "reaction", reaction: { message_id: "wamid.OUT", emoji: "👍" } },
      { type: "unsupported", errors: [{ code: 131051, title: "Message type unknown" }] },
      { type: "contacts", contacts: [{ name: { formatted_name: "Bo" } }] },
      { type: "system", system: { body: "changed number" } },
    ]) {
      expect(parsed(msg(m))).toEqual({ events: [], ignored: 1 });
    }
  });

  it("ignores other change fields, entries without changes and a missing phone_number_id", () => {
    const other = JSON.stringify({ object: "whatsapp_business_account", entry: [{ id: "W", changes: [{ field: "account_update", value: {} }] }, { id: "X" }] });
    expect(parsed(other)).toEqual({ events: [], ignored: 2 });
    const noMeta = JSON.stringify({
      entry: [{ changes: [{ field: "messages", value: { messages: [{ id: "a", from: "b", type: "text", text: { body: "x" } }] } }] }],
    });
    expect(parsed(noMeta)).toEqual({ events: [], ignored: 1 });
  });

  it("normalizes several messages and statuses from several entries", () => {
    const body = JSON.stringify({
      entry: [
        {
          changes: [
            {
              field: "messages",
              value: {
                metadata: { phone_number_id: "P1" },
                messages: [
                  { id: "m1", from: "u1", type: "text", text: { body: "a" } },
                  { id: "m2", from: "u1", type: "text", text: { body: "b" } },
                ],
              },
            },
          ],
        },
        {
          changes: [
            { field: "messages", value: { metadata: { phone_number_id: "P2" }, statuses: [{ id: "wamid.O1", status: "delivered", recipient_id: "u2" }] } },
          ],
        },
      ],
    });
    const out = parsed(body);
    expect(out.ignored).toBe(0);
    expect(out.events.map((e) => [e.kind, e.provider_message_id])).toEqual([
      ["message", "m1"],
      ["message", "m2"],
      ["receipt", "wamid.O1"],
    ]);
  });

  it("never throws on malformed JSON or an unexpected shape", () => {
    expect(parsed("{not json")).toEqual({ events: [], ignored: 1 });
    expect(parsed("[1,2]")).toEqual({ events: [], ignored: 1 });
    expect(parsed(JSON.stringify({ entry: [null, 3, { changes: [null] }] }))).toEqual({ events: [], ignored: 3 });
  });
});

describe("whatsapp: statuses receipts", () => {
  const statuses = (s: unknown[]) => parsed(envelope({ statuses: s }));

  it("maps delivered → delivered and failed → failed (with the error code)", () => {
    const out = statuses([
      { id: "wamid.OUT1", status: "delivered", timestamp: "1", recipient_id: "15550001111" },
      { id: "wamid.OUT2", status: "failed", timestamp: "1", recipient_id: "15550001111", errors: [{ code: 131047, title: "Re-engagement message" }] },
    ]);
    expect(out).toEqual({
      events: [
        { kind: "receipt", provider_message_id: "wamid.OUT1", status: "delivered", our_identity: PNID },
        { kind: "receipt", provider_message_id: "wamid.OUT2", status: "failed", our_identity: PNID, error: "whatsapp error 131047" },
      ],
      ignored: 0,
    });
  });

  it("ignores sent, read and deleted", () => {
    expect(
      statuses([
        { id: "a", status: "sent" },
        { id: "b", status: "read" },
        { id: "c", status: "deleted" },
      ]),
    ).toEqual({ events: [], ignored: 3 });
  });
});

describe("whatsapp: send", () => {
  const args = { to: "15550001111", from: PNID, text: "Hello ✅" };

  it("POSTs {messaging_product, to, type: text, text: {body}} with the Bearer token to {base}/{phone_number_id}/messages", async () => {
    const f = fakeFetch(() =>
      json({ messaging_product: "whatsapp", contacts: [{ input: "15550001111", wa_id: "15550001111" }], messages: [{ id: "wamid.OUT9" }] }),
    );
    const r = await whatsappAdapter.send(args, { fetch: f.fetch, env: ENV, timeoutMs: 5000 });
    expect(r).toEqual({ ok: true, provider_message_id: "wamid.OUT9" });
    const [req] = f.calls;
    expect(WHATSAPP_DEFAULT_API_BASE).toBe("https://graph.facebook.com/v21.0");
    expect(req.url).toBe(`https://graph.facebook.com/v21.0/${PNID}/messages`);
    expect(req.method).toBe("POST");
    expect(req.headers["authorization"]).toBe("Bearer wa-access-token");
    expect(req.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(req.body)).toEqual({ messaging_product: "whatsapp", to: "15550001111", type: "text", text: { body: "Hello ✅" } });
  });

  it("honours CHANNEL_WHATSAPP_API_BASE", async () => {
    const f = fakeFetch(() => json({ messages: [{ id: "w" }] }));
    await whatsappAdapter.send(args, { fetch: f.fetch, env: { ...ENV, CHANNEL_WHATSAPP_API_BASE: "http://127.0.0.1:9000/graph" }, timeoutMs: 5000 });
    expect(f.calls[0].url).toBe(`http://127.0.0.1:9000/graph/${PNID}/messages`);
  });

  it("classifies a Graph refusal as permanent and rate limits or 5xx as transient", async () => {
    const send = (res: () => Response) => whatsappAdapter.send(args, { fetch: fakeFetch(res).fetch, env: ENV, timeoutMs: 5000 });
    expect(await send(() => json({ error: { message: "Recipient phone number not in allowed list", type: "OAuthException", code: 131030 } }, 400))).toEqual({
      ok: false,
      permanent: true,
      status: 400,
      reason: "whatsapp error 131030",
    });
    expect(await send(() => json({ error: { code: 130429, message: "Rate limit hit" } }, 400))).toMatchObject({
      ok: false,
      permanent: false,
      status: 400,
    });
    expect(await send(() => json({ error: { code: 190, message: "token expired" } }, 401))).toMatchObject({ ok: false, permanent: true });
    expect(await send(() => new Response("bad gateway", { status: 502 }))).toEqual({ ok: false, permanent: false, status: 502, reason: "http 502" });
  });

  it("times out through the AbortSignal as a transient failure", async () => {
    const f = hangingFetch();
    expect(await whatsappAdapter.send(args, { fetch: f.fetch, env: ENV, timeoutMs: 5 })).toEqual({ ok: false, permanent: false, reason: "timeout" });
    expect(f.calls[0].signal?.aborted).toBe(true);
  });
});

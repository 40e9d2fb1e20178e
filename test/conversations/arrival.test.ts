import { describe, expect, it } from "vitest";
import { type ArrivalRoute, mintArrival } from "../../src/conversations/door/arrival";

const apiRoute: ArrivalRoute = { route_name: "r", door: "api", channel: null, our_identity: null, callback_url: "https://hook.example/cb" };
const channelRoute: ArrivalRoute = { route_name: "c", door: "channel", channel: "twilio", our_identity: "+15550001", callback_url: "https://stale.example/cb" };
const ids = { message_id: "m-1", thread_id: "bridge:r:t" };

describe("one factory mints the record and the turn input for every way in", () => {
  it("every way starts a record accepted, unattempted, created now and unexpiring", () => {
    const arrivals = [
      mintArrival(apiRoute, ids, { way: "message", caller: "k", body: { external_user_id: "u", text: "hi" } }),
      mintArrival(channelRoute, ids, {
        way: "channel",
        channel: "twilio",
        message: { kind: "message", provider_message_id: "p", sender: "+1", our_identity: "+15550001", text: "hi" },
      }),
      mintArrival(apiRoute, ids, { way: "event", caller: "k", address: "u", event: { id: "e", kind: "k", payload: {} } }),
      mintArrival(apiRoute, ids, { way: "operator", operator: "op", address: "u", text: "hello", part: null }),
    ];
    for (const { record, inbound } of arrivals) {
      expect(record).toMatchObject({ ...ids, status: "accepted", attempts: 0, outbound_message_ids: [], error: null, expires_at: null });
      expect(record.updated_at).toBe(record.created_at);
      expect(inbound).toMatchObject(ids);
    }
  });

  it("message: the sender is the trimmed external_user_id; the turn names no identity or channel", () => {
    const { record, inbound } = mintArrival(apiRoute, ids, {
      way: "message",
      caller: "k",
      body: { external_user_id: "  u  ", text: "hi", params: { a: "b" } },
    });
    expect(record).toMatchObject({
      client_address: "u",
      caller_principal: "k",
      origin: "client",
      inbound_kind: "message",
      inbound_text: "hi",
      callback_url: apiRoute.callback_url,
      submitted_by: null,
    });
    expect(inbound).toEqual({
      ...ids,
      kind: "message",
      inbound_id: "m-1",
      source: "api",
      text: "hi",
      sender: "u",
      our_identity: null,
      channel: null,
      form: null,
      params: { a: "b" },
      attachments: null,
      location: null,
    });
  });

  it("channel: no callback, the provider id, and attachments cut to the spec's keys in both", () => {
    const { record, inbound } = mintArrival(channelRoute, ids, {
      way: "channel",
      channel: "twilio",
      message: {
        kind: "message",
        provider_message_id: "SM1",
        sender: " +1 ",
        our_identity: "+15550001",
        text: "",
        attachments: [{ kind: "image", url: "u", caption: "", mime_type: "image/png" }],
      },
    });
    expect(record).toMatchObject({
      callback_url: null,
      provider_message_id: "SM1",
      client_address: "+1",
      caller_principal: null,
      channel: "twilio",
      our_identity: "+15550001",
    });
    expect(record.inbound_attachments).toEqual([{ kind: "image", url: "u" }]);
    expect(inbound).toMatchObject({
      inbound_id: "SM1",
      source: "twilio",
      sender: "+1",
      our_identity: "+15550001",
      channel: "twilio",
      attachments: [{ kind: "image", url: "u" }],
    });
  });

  it("event: no message and no sender in the turn; the caller submitted it", () => {
    const event = { id: "e-9", kind: "order.paid", payload: { n: 1 } };
    const { record, inbound } = mintArrival(channelRoute, ids, { way: "event", caller: "k", address: "+1", event });
    expect(record).toMatchObject({
      inbound_kind: "event",
      inbound_text: "",
      inbound_event: event,
      submitted_by: "k",
      caller_principal: "k",
      client_address: "+1",
      origin: "client",
    });
    expect(inbound).toEqual({
      ...ids,
      kind: "event",
      inbound_id: "e-9",
      source: "event:order.paid",
      text: null,
      sender: null,
      our_identity: "+15550001",
      channel: "twilio",
      event,
    });
  });

  it("operator: the record starts answered with its rich part; the turn is the operator's", () => {
    const part = { footer: "f" };
    const { record, inbound } = mintArrival(channelRoute, ids, { way: "operator", operator: "op", address: "+1", text: "hello", part });
    expect(record).toMatchObject({
      origin: "operator",
      caller_principal: "op",
      submitted_by: "op",
      inbound_text: "",
      answer_status: "answered",
      answer: "hello",
      answer_part: part,
      status: "accepted",
    });
    expect(inbound).toEqual({
      ...ids,
      kind: "message",
      inbound_id: "m-1",
      source: "operator",
      text: null,
      sender: null,
      our_identity: "+15550001",
      channel: "twilio",
    });
  });
});

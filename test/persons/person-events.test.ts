/**
 * An event into a linked person's thread (docs/persons.md "Events to a person"): its turn carries
 * the person, and its answer goes out on the event's route, to the person's address there, as the
 * thread's newest record on that route decides (else the person's address that came in on that
 * route), through the channel's send. Driven through the event door with the providers faked at
 * the network edge.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { personDirectoryStub } from "../../src/persons/rpc";
import { createRoute } from "../helpers/bridge";
import { postTwilio, postWhatsApp, whatsappText } from "../helpers/webhooks";
import { admin, call, mintKey, uniq } from "../helpers/http";
import { eventually, rawRows } from "../helpers/threads";
import { declareTool, network } from "../operator/helpers";
import { must } from "../../src/platform/must";

let n = 0;
const phone = () => `+1557${String(Date.now()).slice(-6)}${String(++n).padStart(2, "0")}`;

/** A multichannel tool target behind an SMS route and a WhatsApp route, and a person linked across both. */
async function linkedAcrossChannels() {
  const host = `pevent-${crypto.randomUUID().slice(0, 8)}.example`;
  const title = host.split(".")[0];
  await declareTool(title, `https://${host}/run`);
  const net = network({ [host]: (kwargs) => `for ${kwargs.person_id}: ${kwargs.message ?? `event ${kwargs.event?.kind}`}` });
  const k = await mintKey({ scopes: [`tool:${title}`] });
  const payload_expr = "{message, event, person_id}";
  const smsOurs = phone();
  const waOurs = uniq("pn");
  const sms = await createRoute({
    door: "channel",
    channel: "twilio",
    our_identity: smsOurs,
    target_kind: "tool",
    target_name: title,
    execution_key: k.user_id,
    payload_expr,
    turns_per_hour_override: 1000,
  });
  const wa = await createRoute({
    door: "channel",
    channel: "whatsapp",
    our_identity: waOurs,
    target_kind: "tool",
    target_name: title,
    execution_key: k.user_id,
    payload_expr,
    turns_per_hour_override: 1000,
  });
  expect(
    (
      await call("PUT", `/api/conversation-configs/tool/${title}`, {
        key: await admin(),
        body: { target_kind: "tool", target_name: title, multichannel: true },
      })
    ).status,
  ).toBe(200);
  const smsFrom = phone();
  const waFrom = phone().slice(1);
  const directory = personDirectoryStub(env, "tool", title);
  const target = { kind: "tool" as const, name: title };
  const smsAddress = { door: "channel" as const, channel: "twilio", our_identity: smsOurs, address: smsFrom };
  const waAddress = { door: "channel" as const, channel: "whatsapp", our_identity: waOurs, address: waFrom };
  const first = await directory.ensure({ target, address: smsAddress, route_name: sms.name }, null, Date.now());
  await directory.ensure({ target, address: waAddress, route_name: wa.name }, null, Date.now());
  const { code } = await directory.mint({ target, address: smsAddress, route_name: sms.name }, Date.now());
  expect((await directory.redeem({ target, address: waAddress, route_name: wa.name }, `channel:whatsapp:${waFrom}`, code, Date.now())).ok).toBe(true);
  const personId = first.person.person_id;
  return { net, sms, wa, smsOurs, waOurs, smsFrom, waFrom, personId, personThread: `bridge:@person:${personId}` };
}

const smsSends = (net: ReturnType<typeof network>) => net.to("twilio.fake").map((c) => Object.fromEntries(new URLSearchParams(c.body)));
const waSends = (net: ReturnType<typeof network>) => net.to("whatsapp.fake").map((c) => JSON.parse(c.body));

async function event(routeName: string, target: { thread_id: string } | { address: string }, kind: string) {
  return call("POST", `/api/conversations/${routeName}/events`, {
    key: await admin(),
    body: { ...target, event: { event_id: crypto.randomUUID(), kind, payload: {} } },
  });
}

describe("an event into a linked person's thread", () => {
  it("by thread_id: its answer is sent on the event's route to the person's address there, as the newest record on that route decides", async () => {
    const p = await linkedAcrossChannels();
    // The person writes on both channels: one thread, answered on the channel each message came from.
    expect((await postTwilio({ MessageSid: `SM${uniq("p")}`, From: p.smsFrom, To: p.smsOurs, Body: "by sms" })).status).toBe(204);
    await eventually(
      () => rawRows(p.personThread),
      (rs) => rs.length === 1 && rs[0].turn_state === "done",
    );
    expect((await postWhatsApp(whatsappText(p.waOurs, p.waFrom, `wamid.${uniq("w")}`, "by whatsapp"))).status).toBe(200);
    await eventually(
      () => rawRows(p.personThread),
      (rs) => rs.length === 2 && rs.every((r) => r.turn_state === "done"),
    );
    await eventually(
      async () => waSends(p.net).length,
      (x) => x === 1,
    );
    const smsBefore = smsSends(p.net).length;

    // The newest record overall is WhatsApp's; an event on the SMS route answers on SMS, to the person's SMS address.
    const onSms = await event(p.sms.name, { thread_id: p.personThread }, "order.shipped");
    expect(onSms.status, JSON.stringify(onSms.body)).toBe(202);
    expect(onSms.body.data.thread_id).toBe(p.personThread);
    await eventually(
      async () => smsSends(p.net).length,
      (x) => x === smsBefore + 1,
    );
    expect(smsSends(p.net).at(-1)).toEqual({ To: p.smsFrom, From: p.smsOurs, Body: `for ${p.personId}: event order.shipped` });
    const rows = await eventually(
      () => rawRows(p.personThread),
      (rs) => rs.some((r) => JSON.parse(r.record).message_id === onSms.body.data.message_id && r.status !== "accepted"),
    );
    const record = JSON.parse(
      must(
        rows.find((r) => JSON.parse(r.record).message_id === onSms.body.data.message_id),
        "the item found",
      ).record,
    );
    expect(record).toMatchObject({ route_name: p.sms.name, inbound_kind: "event", client_address: p.smsFrom, channel: "twilio", our_identity: p.smsOurs });

    // On the WhatsApp route, to the person's WhatsApp address.
    const onWa = await event(p.wa.name, { thread_id: p.personThread }, "order.delivered");
    expect(onWa.status, JSON.stringify(onWa.body)).toBe(202);
    await eventually(
      async () => waSends(p.net).length,
      (x) => x === 2,
    );
    expect(waSends(p.net).at(-1)).toMatchObject({ to: p.waFrom, text: { body: `for ${p.personId}: event order.delivered` } });
  });

  it("with no record on the event's route yet, it goes to the person's address that came in on that route", async () => {
    const p = await linkedAcrossChannels();
    expect((await postTwilio({ MessageSid: `SM${uniq("p")}`, From: p.smsFrom, To: p.smsOurs, Body: "only sms so far" })).status).toBe(204);
    await eventually(
      () => rawRows(p.personThread),
      (rs) => rs.length === 1 && rs[0].turn_state === "done",
    );
    const onWa = await event(p.wa.name, { thread_id: p.personThread }, "welcome");
    expect(onWa.status, JSON.stringify(onWa.body)).toBe(202);
    await eventually(
      async () => waSends(p.net).length,
      (x) => x === 1,
    );
    expect(waSends(p.net)[0]).toMatchObject({ to: p.waFrom, text: { body: `for ${p.personId}: event welcome` } });
  });

  it("by address: keyed to the person thread, answered to that address", async () => {
    const p = await linkedAcrossChannels();
    expect((await postTwilio({ MessageSid: `SM${uniq("p")}`, From: p.smsFrom, To: p.smsOurs, Body: "hi" })).status).toBe(204);
    await eventually(
      () => rawRows(p.personThread),
      (rs) => rs.length === 1 && rs[0].turn_state === "done",
    );
    const before = smsSends(p.net).length;
    const r = await event(p.sms.name, { address: p.smsFrom }, "reminder");
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    expect(r.body.data.thread_id).toBe(p.personThread);
    await eventually(
      async () => smsSends(p.net).length,
      (x) => x === before + 1,
    );
    expect(smsSends(p.net).at(-1)).toEqual({ To: p.smsFrom, From: p.smsOurs, Body: `for ${p.personId}: event reminder` });
  });
});

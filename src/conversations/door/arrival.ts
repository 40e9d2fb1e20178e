/**
 * The one factory for what a way in hands to a thread (spec §2.2, §4.2; decisions §6, §7, §10):
 * the answer record and the turn input, minted together from the same facts so that the four
 * ways in (api message, channel message, event, operator send) cannot drift apart field by field.
 * Pure: ids and the thread are decided by admission (admission.ts), not here.
 */
import type { InboundMessage } from "../../channels/adapter";
import type { RichPart } from "../../channels/rich/types";
import type { TurnInbound } from "../model/payload";
import type { AnswerRecord, InboundEvent } from "../model/record";
import type { Route } from "../model/route";
import type { MessageBody } from "../model/schemas";

/** The route fields a new record copies. */
export type ArrivalRoute = Pick<Route, "route_name" | "door" | "channel" | "our_identity" | "callback_url">;

/** One inbound as its way in knows it. */
export type Arrival =
  /** The api message door: `caller` (the key's user_id) writes on behalf of `body.external_user_id`. */
  | { way: "message"; caller: string; body: MessageBody }
  /** A verified channel message; `channel` is the adapter's registry name. */
  | { way: "channel"; channel: string; message: InboundMessage }
  /** A client's event into an existing thread; `address` is the one its thread id names (null: none). */
  | { way: "event"; caller: string; address: string | null; event: InboundEvent }
  /** An operator's hand-written answer on the thread of `address`: the record starts answered. */
  | { way: "operator"; operator: string; address: string; text: string; part: RichPart | null };

/** A record and its turn input, ready for `ThreadObject.accept`. */
export interface MintedArrival {
  record: AnswerRecord;
  inbound: TurnInbound;
}

/** Where the new record lives: its message id and thread id. */
export interface ArrivalIds {
  message_id: string;
  thread_id: string;
}

/**
 * Mints the record and the turn input of `arrival` on `route`. The record starts `accepted`, with
 * no outcome, no attempts and no expiry, created now; an operator send starts answered instead.
 * `person` is what a multichannel target's door resolved: the person (id, address rows) and, on a
 * first contact, the greeting template.
 */
export function mintArrival(route: ArrivalRoute, ids: ArrivalIds, arrival: Arrival, person: Pick<TurnInbound, "person" | "greeting"> = {}): MintedArrival {
  const minted = mintFor(route, ids, arrival);
  // A multichannel target's turns carry the resolved person (spec §4.2), and a first contact the
  // greeting to send; others carry neither.
  if (person.person) minted.inbound.person = person.person;
  if (person.greeting) minted.inbound.greeting = person.greeting;
  // Pairing guesses are throttled by whatever the rate cap counts (a web visitor's network).
  if (person.person && arrival.way === "channel" && arrival.message.cap_key) minted.inbound.guess_key = arrival.message.cap_key;
  return minted;
}

function mintFor(route: ArrivalRoute, ids: ArrivalIds, arrival: Arrival): MintedArrival {
  const { message_id, thread_id } = ids;
  switch (arrival.way) {
    case "message": {
      const { body } = arrival;
      const sender = body.external_user_id.trim();
      const record = newRecord(route, {
        message_id,
        thread_id,
        client_address: sender,
        caller_principal: arrival.caller,
        origin: "client",
        inbound_kind: "message",
        inbound_text: body.text,
        inbound_form: body.form ?? null,
        inbound_attachments: body.attachments ?? null,
        inbound_location: body.location ?? null,
      });
      // An api turn has no identity or channel of ours to show the tool (spec §4.2).
      const inbound: TurnInbound = {
        message_id,
        thread_id,
        kind: "message",
        inbound_id: message_id,
        source: "api",
        text: body.text,
        sender,
        our_identity: null,
        channel: null,
        form: body.form ?? null,
        params: body.params ?? null,
        attachments: body.attachments ?? null,
        location: body.location ?? null,
      };
      return { record, inbound };
    }
    case "channel": {
      const { channel, message: m } = arrival;
      const sender = m.sender.trim();
      // The spec's attachment keys only: the adapter's `mime_type` stays out, an empty caption or filename is absent.
      const attachments =
        m.attachments?.map(({ kind, url, caption, filename }) => ({ kind, url, ...(caption ? { caption } : {}), ...(filename ? { filename } : {}) })) ?? null;
      const record = newRecord(route, {
        message_id,
        thread_id,
        client_address: sender,
        channel,
        provider_message_id: m.provider_message_id,
        // A channel answer goes back through the channel, never to a callback.
        callback_url: null,
        caller_principal: null,
        origin: "client",
        inbound_kind: "message",
        inbound_text: m.text,
        inbound_form: m.form ?? null,
        inbound_attachments: attachments,
        inbound_location: m.location ?? null,
        ...(m.profile ? { inbound_profile: m.profile } : {}),
      });
      const inbound: TurnInbound = {
        message_id,
        thread_id,
        kind: "message",
        inbound_id: m.provider_message_id,
        source: channel,
        text: m.text,
        sender,
        our_identity: route.our_identity,
        channel,
        form: m.form ?? null,
        params: m.params ?? null,
        attachments,
        location: m.location ?? null,
        ...(m.profile ? { profile: m.profile } : {}),
      };
      return { record, inbound };
    }
    case "event": {
      const { event } = arrival;
      const record = newRecord(route, {
        message_id,
        thread_id,
        client_address: arrival.address,
        caller_principal: arrival.caller,
        origin: "client",
        inbound_kind: "event",
        inbound_text: "",
        inbound_event: event,
        submitted_by: arrival.caller,
      });
      // An event turn carries no message and no sender (spec §4.2): the tool sees `event` instead.
      const inbound: TurnInbound = {
        message_id,
        thread_id,
        kind: "event",
        inbound_id: event.id,
        source: `event:${event.kind}`,
        text: null,
        sender: null,
        our_identity: route.our_identity,
        channel: route.channel,
        event,
      };
      return { record, inbound };
    }
    case "operator": {
      const record = newRecord(route, {
        message_id,
        thread_id,
        client_address: arrival.address,
        caller_principal: arrival.operator,
        origin: "operator",
        inbound_kind: "message",
        inbound_text: "",
        submitted_by: arrival.operator,
        answer_status: "answered",
        answer: arrival.text,
        answer_part: arrival.part,
      });
      // No turn runs on an operator send; the turn input only names the record for the queue.
      const inbound: TurnInbound = {
        message_id,
        thread_id,
        kind: "message",
        inbound_id: message_id,
        source: "operator",
        text: null,
        sender: null,
        our_identity: route.our_identity,
        channel: route.channel,
      };
      return { record, inbound };
    }
  }
}

/** What a way in states about a new record; the rest starts at its initial value. */
type RecordStart = Pick<AnswerRecord, "message_id" | "thread_id" | "client_address" | "caller_principal" | "origin" | "inbound_kind" | "inbound_text"> &
  Partial<AnswerRecord>;

/** A fresh record on `route`: channel, identity and callback come from the route unless `start` says otherwise. */
function newRecord(route: ArrivalRoute, start: RecordStart): AnswerRecord {
  const now = new Date().toISOString();
  return {
    route_name: route.route_name,
    door: route.door,
    channel: route.channel,
    our_identity: route.our_identity,
    callback_url: route.callback_url,
    provider_message_id: null,
    inbound_form: null,
    inbound_attachments: null,
    inbound_location: null,
    inbound_event: null,
    submitted_by: null,
    status: "accepted",
    answer_status: null,
    answer: null,
    error: null,
    attempts: 0,
    outbound_message_ids: [],
    created_at: now,
    updated_at: now,
    expires_at: null,
    ...start,
  };
}

/**
 * The tool-turn payload of spec §4.2 and the default kwargs (pure).
 */
import type { Attachment, InboundEvent, Location } from "./record";

export interface TurnInbound {
  message_id: string;
  thread_id: string;
  kind: "message" | "event";
  /** provider message id, event_id, or (api door) the record's message_id */
  inbound_id: string;
  /** channel registry name, `event:<kind>`, or `api` */
  source: string;
  text: string | null;
  sender: string | null;
  our_identity: string | null;
  channel: string | null;
  form?: Record<string, unknown> | null;
  params?: Record<string, string> | null;
  attachments?: Attachment[] | null;
  location?: Location | null;
  event?: InboundEvent | null;
  person?: { person_id: string; person_addresses: unknown[] } | null;
}

export interface TurnRef {
  id: string;
  inbound: { kind: "message" | "event"; id: string; source: string };
}

export function turnRef(t: TurnInbound): TurnRef {
  return { id: t.message_id, inbound: { kind: t.kind, id: t.inbound_id, source: t.source } };
}

/** What `payload_expr` sees. Presence rules follow spec §4.2 exactly; `thread_id` per decisions §13. */
export function buildPayload(t: TurnInbound): Record<string, unknown> {
  const isEvent = t.kind === "event";
  const p: Record<string, unknown> = {
    message: isEvent ? null : t.text,
    sender: isEvent ? null : t.sender,
    our_identity: t.our_identity,
    channel: t.channel,
    turn: turnRef(t),
    thread_id: t.thread_id,
  };
  if (t.person) {
    p.person_id = t.person.person_id;
    p.person_addresses = t.person.person_addresses;
  }
  if (isEvent && t.event) p.event = { id: t.event.id, kind: t.event.kind, payload: t.event.payload };
  if (t.form) p.form = t.form;
  if (t.params && Object.keys(t.params).length > 0) p.params = t.params;
  if (t.attachments && t.attachments.length > 0) p.attachments = t.attachments;
  if (t.location) p.location = t.location;
  return p;
}

/** Default kwargs without payload_expr: `{message, sender, turn}` plus `event` on an event turn. Never form. */
export function defaultKwargs(t: TurnInbound): Record<string, unknown> {
  const isEvent = t.kind === "event";
  const k: Record<string, unknown> = { message: isEvent ? null : t.text, sender: isEvent ? null : t.sender, turn: turnRef(t) };
  if (isEvent && t.event) k.event = { id: t.event.id, kind: t.event.kind, payload: t.event.payload };
  return k;
}

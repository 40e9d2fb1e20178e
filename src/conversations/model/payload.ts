/**
 * The tool-turn payload of spec §4.2 and the default kwargs (pure).
 */
import { z } from "zod";
import { Attachment, Location } from "../../shared/media";
import type { TargetKind } from "../../shared/kinds";
import { JsonObject, JsonValue } from "../../platform/http/bounded-json";
import { InboundEvent } from "./record";
import { VisitorProfile } from "../../shared/visitor-profile";

/** What a turn runs on: the inbound as the tool payload and the agent see it, stored beside its record. */
export const TurnInbound = z.object({
  message_id: z.string(),
  thread_id: z.string(),
  kind: z.enum(["message", "event"]),
  /** provider message id, event_id, or (api door) the record's message_id */
  inbound_id: z.string(),
  /** channel registry name, `event:<kind>`, or `api` */
  source: z.string(),
  text: z.string().nullable(),
  sender: z.string().nullable(),
  our_identity: z.string().nullable(),
  channel: z.string().nullable(),
  form: JsonObject.nullable().optional(),
  params: z.record(z.string(), z.string()).nullable().optional(),
  attachments: z.array(Attachment).nullable().optional(),
  location: Location.nullable().optional(),
  event: InboundEvent.nullable().optional(),
  /** A web visitor's profile (pre-chat answers, the site's vouched claims), on each of their turns. */
  profile: VisitorProfile.nullable().optional(),
  person: z
    .object({ person_id: z.string(), person_addresses: z.array(JsonValue), locale: z.string().nullable().optional() })
    .nullable()
    .optional(),
  /** A multichannel target's greeting template, set only on the inbound that created its person (first contact). */
  greeting: z.string().nullable().optional(),
  /**
   * Who a pairing guess in this inbound is counted against, when not its sender: a web visitor's
   * network bucket (visitor ids are free to mint). Set only on a multichannel target's turns.
   */
  guess_key: z.string().nullable().optional(),
});
export type TurnInbound = z.infer<typeof TurnInbound>;

/** The routes a turn's person spans: every `routes` entry of its address rows (as the door resolved them). */
export function routesOfPerson(person: NonNullable<TurnInbound["person"]>): string[] {
  return person.person_addresses.flatMap((a) => {
    const routes = a !== null && typeof a === "object" && !Array.isArray(a) ? a.routes : undefined;
    return Array.isArray(routes) ? routes.filter((r): r is string => typeof r === "string") : [];
  });
}

/** The route's target, which the turn's ambient subjects belong to. */
export interface TurnTarget {
  target_kind: TargetKind;
  target_name: string;
}

/**
 * The turn's ambient subjects (bridge-facts §7): the thread always, the person on a
 * multichannel target, and the person's locale. A state binding's `subject_expr` reads them here.
 */
export interface TurnSubject extends TurnTarget {
  person: string | null;
  thread: string;
  locale: string | null;
}

export interface TurnRef {
  id: string;
  inbound: { kind: "message" | "event"; id: string; source: string };
  subject: TurnSubject;
}

export function turnRef(t: TurnInbound, target: TurnTarget): TurnRef {
  return {
    id: t.message_id,
    inbound: { kind: t.kind, id: t.inbound_id, source: t.source },
    subject: {
      target_kind: target.target_kind,
      target_name: target.target_name,
      person: t.person?.person_id ?? null,
      thread: t.thread_id,
      locale: t.person?.locale ?? null,
    },
  };
}

/** What `payload_expr` sees. Presence rules follow spec §4.2 exactly; `thread_id` per decisions §13. */
export function buildPayload(t: TurnInbound, target: TurnTarget): Record<string, unknown> {
  const isEvent = t.kind === "event";
  const p: Record<string, unknown> = {
    message: isEvent ? null : t.text,
    sender: isEvent ? null : t.sender,
    our_identity: t.our_identity,
    channel: t.channel,
    turn: turnRef(t, target),
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
  if (t.profile) p.profile = t.profile;
  return p;
}

/** Default kwargs without payload_expr: `{message, sender, turn}` plus `event` on an event turn. Never form. */
export function defaultKwargs(t: TurnInbound, target: TurnTarget): Record<string, unknown> {
  const isEvent = t.kind === "event";
  const k: Record<string, unknown> = { message: isEvent ? null : t.text, sender: isEvent ? null : t.sender, turn: turnRef(t, target) };
  if (isEvent && t.event) k.event = { id: t.event.id, kind: t.event.kind, payload: t.event.payload };
  return k;
}

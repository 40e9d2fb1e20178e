/**
 * Answer records (spec §2.2, decisions §7) and their projections (pure).
 */
import { z } from "zod";
import { Attachment, Location } from "../../shared/media";
import { RichPart } from "../../channels/rich/types";
import { Door } from "../../shared/kinds";
import { JsonObject } from "../../platform/http/bounded-json";
import { VisitorProfile } from "../../shared/visitor-profile";

export const DELIVERY_STATUSES = ["accepted", "pending_delivery", "provisional", "delivered", "failed", "shed", "silent"] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];
export const TERMINAL_STATUSES: ReadonlySet<DeliveryStatus> = new Set(["delivered", "failed", "shed", "silent"]);
export const ANSWER_STATUSES = ["answered", "error", "silent"] as const;
export type AnswerStatus = (typeof ANSWER_STATUSES)[number];

/** A customer's verdict on one answer: helped (`up`) or did not (`down`). */
export const ANSWER_RATINGS = ["up", "down"] as const;
export const AnswerRating = z.enum(ANSWER_RATINGS);
export type AnswerRating = z.infer<typeof AnswerRating>;

/**
 * The customer's rating of a record's answer and when it was given (docs/inbox.md, "Answer
 * feedback"). The thread keeps it beside the record (src/conversations/thread/answer-feedback.ts)
 * and the read doors join it in, so no write of the record itself can lose it.
 */
export const AnswerFeedback = z.object({ rating: AnswerRating, at: z.string() }).strict();
export type AnswerFeedback = z.infer<typeof AnswerFeedback>;

/** A client event (the event door's `event`), as the record and the turn carry it. */
export const InboundEvent = z.object({ id: z.string(), kind: z.string(), payload: JsonObject });
export type InboundEvent = z.infer<typeof InboundEvent>;

/**
 * The full (admin) record, as the thread stores it and reads it back. Free-form JSON fields are
 * `JsonValue`s, never `unknown`, so the Durable Object stub keeps the methods that return records
 * (see src/conversations/model/thread-rpc.ts).
 */
export const AnswerRecord = z.object({
  message_id: z.string(),
  route_name: z.string(),
  door: Door,
  thread_id: z.string(),
  client_address: z.string().nullable(),
  channel: z.string().nullable(),
  our_identity: z.string().nullable(),
  provider_message_id: z.string().nullable(),
  callback_url: z.string().nullable(),
  caller_principal: z.string().nullable(),
  origin: z.enum(["client", "operator"]),
  inbound_kind: z.enum(["message", "event"]),
  inbound_text: z.string(),
  inbound_form: JsonObject.nullable(),
  inbound_attachments: z.array(Attachment).nullable(),
  inbound_location: Location.nullable(),
  inbound_event: InboundEvent.nullable(),
  /** What the sender told about themselves (a web visitor's pre-chat answers, the site's vouched claims); absent otherwise. */
  inbound_profile: VisitorProfile.nullable().optional(),
  submitted_by: z.string().nullable(),
  status: z.enum(DELIVERY_STATUSES),
  answer_status: z.enum(ANSWER_STATUSES).nullable(),
  answer: z.string().nullable(),
  /** An operator message's rich part (spec §4.7), delivered after the text; absent otherwise. */
  answer_part: RichPart.nullable().optional(),
  error: z.string().nullable(),
  /**
   * A stop door ended the turn (docs/targets.md "Stopping a turn"): the answer is the draft the run
   * had written by then (`answer_status` answered), or silence when it had written none. Absent otherwise.
   */
  stopped: z.literal(true).optional(),
  attempts: z.number(),
  outbound_message_ids: z.array(z.string()),
  created_at: z.string(),
  updated_at: z.string(),
  expires_at: z.string().nullable(),
  /** The customer's rating of the answer; absent when none was given (or it was taken back). */
  feedback: AnswerFeedback.nullable().optional(),
});
export type AnswerRecord = z.infer<typeof AnswerRecord>;

/** Keys withheld from non-admin readers (decisions §7). */
const ADMIN_ONLY_KEYS = { error: true, attempts: true, outbound_message_ids: true, callback_url: true, provider_message_id: true, expires_at: true } as const;
const ADMIN_ONLY = Object.keys(ADMIN_ONLY_KEYS) as Array<keyof typeof ADMIN_ONLY_KEYS>;

/** Fields omitted when null, so absent inbound parts stay absent in both projections: their values when present. */
const OMITTED_WHEN_NULL = {
  inbound_form: AnswerRecord.shape.inbound_form.unwrap().optional(),
  inbound_attachments: AnswerRecord.shape.inbound_attachments.unwrap().optional(),
  inbound_location: AnswerRecord.shape.inbound_location.unwrap().optional(),
  inbound_event: AnswerRecord.shape.inbound_event.unwrap().optional(),
  inbound_profile: VisitorProfile.optional().describe(
    "A web visitor's profile: pre-chat answers and the site's vouched claims (docs/channels.md, \"Pre-chat form\")",
  ),
  submitted_by: AnswerRecord.shape.submitted_by.unwrap().optional(),
  answer_part: AnswerRecord.shape.answer_part
    .unwrap()
    .unwrap()
    .optional()
    .describe("An operator message's rich part (media, location, template, options, sections, header, footer, schema)"),
  feedback: AnswerFeedback.optional().describe('The customer\'s rating of the answer (docs/inbox.md, "Answer feedback")'),
};
const OMIT_WHEN_NULL = Object.keys(OMITTED_WHEN_NULL) as Array<keyof typeof OMITTED_WHEN_NULL>;

/**
 * The record as the read doors answer it (decisions §7), derived from `AnswerRecord`: the fields
 * omitted when null are absent instead, and the admin-only ones are absent for non-admins.
 * Documents the answers in the OpenAPI document; the projections below produce it.
 */
export const AnswerRecordView = AnswerRecord.extend(OMITTED_WHEN_NULL).partial(ADMIN_ONLY_KEYS).describe("AnswerRecord");
export type AnswerRecordView = z.infer<typeof AnswerRecordView>;

export function adminProjection(r: AnswerRecord): Record<string, unknown> {
  const out: Record<string, unknown> = { ...r };
  for (const k of OMIT_WHEN_NULL) if (out[k] === null || out[k] === undefined) delete out[k];
  return out;
}

export function callerSafeProjection(r: AnswerRecord): Record<string, unknown> {
  const out = adminProjection(r);
  for (const k of ADMIN_ONLY) delete out[k];
  return out;
}

export function project(r: AnswerRecord, admin: boolean): Record<string, unknown> {
  return admin ? adminProjection(r) : callerSafeProjection(r);
}

/** The inline 200 answer of the message and event doors (decisions §6): no `answer` when silent; `stopped` for a stopped turn. */
export function inlineAnswer(r: AnswerRecord): { message_id: string; thread_id: string; status: AnswerStatus; answer?: string; stopped?: true } {
  const data: { message_id: string; thread_id: string; status: AnswerStatus; answer?: string; stopped?: true } = {
    message_id: r.message_id,
    thread_id: r.thread_id,
    status: r.answer_status ?? "silent",
  };
  if (r.answer_status !== "silent" && r.answer !== null) data.answer = r.answer;
  if (r.stopped) data.stopped = true;
  return data;
}

/** Fixed client-facing texts (spec §7); not configurable. */
export const TURN_ERROR_TEXT = "Sorry, something went wrong handling your message. Please try again.";
export const SLOW_DOWN_TEXT = "You are sending messages faster than I can answer. Please wait a moment and try again.";

/** A reply that is null or only whitespace is deliberate silence. */
export function isSilence(reply: string | null | undefined): boolean {
  return reply === null || reply === undefined || reply.trim() === "";
}

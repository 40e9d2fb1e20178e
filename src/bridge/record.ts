/**
 * Answer records (spec §2.2, decisions §7) and their projections (pure).
 */
import type { RichPart } from "../channels/rich/types";
export type DeliveryStatus = "accepted" | "pending_delivery" | "provisional" | "delivered" | "failed" | "shed" | "silent";
export const DELIVERY_STATUSES: readonly DeliveryStatus[] = ["accepted", "pending_delivery", "provisional", "delivered", "failed", "shed", "silent"];
export const TERMINAL_STATUSES: ReadonlySet<DeliveryStatus> = new Set(["delivered", "failed", "shed", "silent"]);
export type AnswerStatus = "answered" | "error" | "silent";

export interface Attachment {
  kind: "image" | "document" | "video" | "audio";
  url: string;
  caption?: string;
  filename?: string;
}
export interface Location {
  latitude: number;
  longitude: number;
  name?: string;
  address?: string;
}
export interface InboundEvent {
  id: string;
  kind: string;
  payload: Record<string, unknown>;
}

/** The full (admin) record. */
export interface AnswerRecord {
  message_id: string;
  route_name: string;
  door: "api" | "channel";
  thread_id: string;
  client_address: string | null;
  channel: string | null;
  our_identity: string | null;
  provider_message_id: string | null;
  callback_url: string | null;
  caller_principal: string | null;
  origin: "client" | "operator";
  inbound_kind: "message" | "event";
  inbound_text: string;
  inbound_form: Record<string, unknown> | null;
  inbound_attachments: Attachment[] | null;
  inbound_location: Location | null;
  inbound_event: InboundEvent | null;
  submitted_by: string | null;
  status: DeliveryStatus;
  answer_status: AnswerStatus | null;
  answer: string | null;
  /** An operator message's rich part (spec §4.7), delivered after the text; absent otherwise. */
  answer_part?: RichPart | null;
  error: string | null;
  attempts: number;
  outbound_message_ids: string[];
  created_at: string;
  updated_at: string;
  expires_at: string | null;
}

/** Keys withheld from non-admin readers (decisions §7). */
const ADMIN_ONLY = ["error", "attempts", "outbound_message_ids", "callback_url", "provider_message_id", "expires_at"] as const;

/** Keys omitted when null, so absent inbound parts stay absent in both projections. */
const OMIT_WHEN_NULL = ["inbound_form", "inbound_attachments", "inbound_location", "inbound_event", "submitted_by", "answer_part"] as const;

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

/** The inline 200 answer of the message and event doors (decisions §6): no `answer` when silent. */
export function inlineAnswer(r: AnswerRecord): { message_id: string; thread_id: string; status: AnswerStatus; answer?: string } {
  const data: { message_id: string; thread_id: string; status: AnswerStatus; answer?: string } = { message_id: r.message_id, thread_id: r.thread_id, status: r.answer_status ?? "silent" };
  if (r.answer_status !== "silent" && r.answer !== null) data.answer = r.answer;
  return data;
}

/** Fixed client-facing texts (spec §7); not configurable. */
export const TURN_ERROR_TEXT = "Sorry, something went wrong handling your message. Please try again.";
export const SLOW_DOWN_TEXT = "You are sending messages faster than I can answer. Please wait a moment and try again.";

/** A reply that is null or only whitespace is deliberate silence. */
export function isSilence(reply: string | null | undefined): boolean {
  return reply === null || reply === undefined || reply.trim() === "";
}

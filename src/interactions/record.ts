/**
 * An interaction (docs/interactions.md): a question a run parked on with `ask_user`, its
 * answer and what became of the run. One schema per shape with its type under the same name:
 * `InteractionState` is what the Interaction object keeps (without the parked run, which never
 * leaves the object except towards the run that resumes it) and `InteractionView` what the doors
 * answer, derived from it.
 */
import { z } from "zod";
import { heldBy } from "../access-control/identity";
import { Location, MediaKind } from "../shared/media";
import { Door, TargetKind } from "../shared/kinds";
import { JsonObject } from "../platform/http/bounded-json";
import { InteractionOption } from "./ask";

export const INTERACTION_STATUSES = ["pending", "answered", "cancelled", "expired"] as const;
export type InteractionStatus = (typeof INTERACTION_STATUSES)[number];

/** An interaction id: a UUID v4 (lower case). */
export const InteractionId = z
  .string()
  .regex(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, { message: "must be an interaction id (a UUID)" });

/**
 * Where the run that asked runs: a bridge thread (the participant answers) or outside any thread
 * (an operator or the audience answers): an agent run door's run, or a background tool run.
 */
export const InteractionOrigin = z.discriminatedUnion("kind", [
  z
    .object({
      kind: z.literal("thread"),
      route_name: z.string(),
      thread_id: z.string(),
      /** The record whose turn parked (its answer is the question; its trace id). */
      message_id: z.string(),
      door: Door,
      channel: z.string().nullable(),
    })
    .strict(),
  z
    .object({
      kind: z.literal("agent_run"),
      /** The agent run door's memory thread. */
      thread_id: z.string(),
      /** The key the run acts as (the door's caller). */
      caller: z.string(),
    })
    .strict(),
  z
    .object({
      kind: z.literal("tool_run"),
      /** The background tool run that waits (`GET /api/tool-runs/{run_id}`). */
      run_id: z.string(),
      /** The key the run executes as. */
      caller: z.string(),
    })
    .strict(),
]);
export type InteractionOrigin = z.infer<typeof InteractionOrigin>;

/** A media item an answer carried: stored in R2 and served by `GET /api/interactions/media/{media_id}`, or kept as its reference. */
export const AnswerMedia = z
  .object({
    kind: MediaKind,
    /** 43 url-safe characters when stored; null when only the reference is kept. */
    media_id: z.string().nullable(),
    /** The served path when stored (`/api/interactions/media/<id>`), else the inbound's own reference. */
    url: z.string(),
    content_type: z.string().nullable(),
    bytes: z.number().int().nullable(),
    caption: z.string().optional(),
    filename: z.string().optional(),
    /** Why the bytes were not stored (a reference only): names the rule, never a URL. */
    problem: z.string().optional(),
  })
  .strict();
export type AnswerMedia = z.infer<typeof AnswerMedia>;

/** Who answered: the thread's participant (their next inbound), a key at the answer door, or a callback ticket. */
export const AnsweredBy = z
  .object({
    kind: z.enum(["participant", "operator", "ticket"]),
    /** The answering key's user_id (operator). */
    user_id: z.string().nullable(),
    /** The inbound record that answered (participant). */
    message_id: z.string().nullable(),
  })
  .strict();
export type AnsweredBy = z.infer<typeof AnsweredBy>;

/** An answer as stored and as the resumed run reads it. */
export const InteractionAnswer = z
  .object({
    text: z.string().nullable(),
    /** The reply option it picked (by tap, text, id or number), or null. */
    option: InteractionOption.nullable(),
    form: JsonObject.nullable(),
    params: z.record(z.string(), z.string()).nullable(),
    media: z.array(AnswerMedia).nullable(),
    location: Location.nullable(),
    answered_by: AnsweredBy,
    answered_at: z.string(),
  })
  .strict();
export type InteractionAnswer = z.infer<typeof InteractionAnswer>;

/** A resumed run's end, for an interaction outside a thread (inside one, the reply is the thread's record). */
export const InteractionResult = z
  .object({
    outcome: z.enum(["ok", "silent", "error", "denied", "timeout", "suspended"]),
    text: z.string().nullable(),
    /** Admin-only detail of a failed run (others read a fixed text). */
    error: z.string().nullable(),
    /** The run parked again: the new interaction. */
    next_interaction_id: z.string().nullable(),
    /** The resumed run's trace (`GET /api/observability/runs/{trace_id}/trace`). */
    trace_id: z.string().nullable(),
    finished_at: z.string(),
  })
  .strict();
export type InteractionResult = z.infer<typeof InteractionResult>;

/** What the object keeps besides the parked run. */
export const InteractionState = z
  .object({
    interaction_id: z.string(),
    status: z.enum(INTERACTION_STATUSES),
    question: z.string(),
    options: z.array(InteractionOption).nullable(),
    schema: JsonObject.nullable(),
    audience: z.string().nullable(),
    origin: InteractionOrigin,
    /** What parked: an llm agent's run or a tool turn's tool. */
    target: z.object({ kind: TargetKind, name: z.string() }).strict(),
    created_at: z.string(),
    expires_at: z.string(),
    ended_at: z.string().nullable(),
    answer: InteractionAnswer.nullable(),
    cancel_reason: z.string().nullable(),
    /** Thread origin: the record that carries (or will carry) the resumed reply. */
    reply_message_id: z.string().nullable(),
    /** Outside a thread: the resumed run's end, once it ran. */
    result: InteractionResult.nullable(),
  })
  .strict();
export type InteractionState = z.infer<typeof InteractionState>;

/** The doors' view (the same fields; a failed result's detail only for admins). */
export const InteractionView = InteractionState.describe("Interaction");
export type InteractionView = z.infer<typeof InteractionView>;

/** Fixed text non-admins read for a failed resumed run. */
export const RESULT_ERROR_TEXT = "the resumed run failed";

/** The view for a caller: admins see a failed run's detail, others a fixed text. Pure. */
export function viewFor(s: InteractionState, admin: boolean): InteractionView {
  if (admin || !s.result?.error) return s;
  return { ...s, result: { ...s.result, error: RESULT_ERROR_TEXT } };
}

/** What the resumed run reads as `ask_user`'s result (pure; docs/interactions.md "The answer a run reads"). */
export function askResult(s: Pick<InteractionState, "interaction_id" | "status" | "answer" | "cancel_reason">): Record<string, unknown> {
  if (s.status === "answered") return { interaction_id: s.interaction_id, outcome: "answered", answer: s.answer };
  if (s.status === "cancelled")
    return { interaction_id: s.interaction_id, outcome: "cancelled", cancelled: true, ...(s.cancel_reason ? { reason: s.cancel_reason } : {}) };
  return { interaction_id: s.interaction_id, outcome: "expired", timeout: true };
}

/**
 * Can a caller see (and answer, cancel) it? Restricted callers only what is addressed to them: to
 * their user_id, since their key's lineage began (`since`, src/access-control/identity.ts), so a user_id
 * issued again never sees what was addressed to an earlier holder. Pure.
 */
export function visibleTo(s: Pick<InteractionState, "audience" | "created_at">, caller: { restricted: boolean; user_id: string; since: string }): boolean {
  return !caller.restricted || heldBy(caller, s.audience, s.created_at);
}

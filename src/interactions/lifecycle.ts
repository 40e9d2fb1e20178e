/**
 * An interaction's life, pure (docs/interactions.md "Lifecycle"): the answer an input
 * makes, the state an end makes, what the end owes the run, the events transitions publish and when
 * the object's one alarm must fire next.
 *
 *   pending ──answer (participant's next inbound, door, ticket)──► answered ─┐
 *      │ ──cancel (door)──────────────────────────────────────────► cancelled ├─► the run resumes once
 *      └ ──its expiry (alarm)─────────────────────────────────────► expired ─┘   (in its thread, or here)
 *   ended ──INTERACTIONS_RETENTION_SECONDS──► deleted (object, listing row)
 */
import type { AnswerInput, InteractionEventInput } from "./rpc";
import { pickOption } from "./ask";
import type { InteractionRow, ResumeDue } from "./object-store";
import type { AnsweredBy, InteractionAnswer, InteractionState, InteractionStatus } from "./record";

/** Retry delay of owed work whose last attempt failed (a listing write, the hub, a handoff). */
export const RETRY_MS = 5_000;

/** How long an outside resume may run before the alarm takes it for interrupted (the object restarted mid-run). */
export const RESUME_LEASE_MS = 15 * 60_000;

/** Starts an outside resume gets before it is given up as interrupted. */
export const RESUME_MAX_ATTEMPTS = 3;

/**
 * The answer `input` makes, without media (the object stores those): the option it picks (an
 * explicit `option_id` must name one; else a tap's `reply_id` or the text picks one, or none) and
 * the text (the option's when only an option was given). Pure.
 */
export function answerOf(
  s: Pick<InteractionState, "options">,
  input: AnswerInput,
  by: AnsweredBy,
  nowIso: string,
): { ok: true; answer: InteractionAnswer } | { ok: false } {
  let option = null;
  if (input.option_id) {
    option = s.options?.find((o) => o.id === input.option_id) ?? null;
    if (!option) return { ok: false };
  } else {
    option = pickOption(s.options, { text: input.text, replyId: input.params?.reply_id });
  }
  const params = input.params && Object.keys(input.params).length ? input.params : null;
  return {
    ok: true,
    answer: {
      // A blank text (a form or media sent without words) is no text.
      text: input.text?.trim() ? input.text : (option?.text ?? null),
      option,
      form: input.form ?? null,
      params,
      media: null,
      location: input.location ?? null,
      answered_by: by,
      answered_at: nowIso,
    },
  };
}

/** The state after an end. Pure. */
export function endedState(
  s: InteractionState,
  status: Exclude<InteractionStatus, "pending">,
  nowIso: string,
  extra: { answer?: InteractionAnswer; reason?: string | null } = {},
): InteractionState {
  return { ...s, status, ended_at: nowIso, answer: extra.answer ?? s.answer, cancel_reason: status === "cancelled" ? (extra.reason ?? null) : s.cancel_reason };
}

/** What an end owes the run, by where it runs: the thread resumes it (a handoff), else this object does. */
export function resumeOwed(s: Pick<InteractionState, "origin">): ResumeDue {
  return s.origin.kind === "thread" ? "handoff" : "run";
}

const EVENT_OF: Record<InteractionStatus, InteractionEventInput["type"]> = {
  pending: "interaction.created",
  answered: "interaction.answered",
  cancelled: "interaction.cancelled",
  expired: "interaction.expired",
};

/** The event a transition into `s.status` publishes (or `resumed`, when an outside run ended). Pure. */
export function eventFor(s: InteractionState, nowIso: string, resumed = false): InteractionEventInput {
  return { type: resumed ? "interaction.resumed" : EVENT_OF[s.status], interaction_id: s.interaction_id, audience: s.audience, at: nowIso, interaction: s };
}

/**
 * When the alarm must fire next (null: never again), as of `nowMs`: now when work is owed (unless
 * a failure put it off to `retry_at`), the expiry while pending, an outside resume's lease while
 * it runs, the purge once ended. Pure.
 */
export function nextAlarm(row: InteractionRow, hasEvents: boolean, resumeRunning: boolean, nowMs: number): number | null {
  const times: number[] = [];
  const owed = row.index_dirty || row.ticket_due || hasEvents || row.resume === "handoff" || (row.resume === "run" && !resumeRunning);
  if (owed) times.push(row.retry_at !== null && row.retry_at > nowMs ? row.retry_at : nowMs);
  if (row.resume === "run" && resumeRunning) times.push(nowMs + RESUME_LEASE_MS);
  if (row.state.status === "pending") times.push(row.expires_at);
  // The purge waits for the run it owes (a handoff, an outside resume) to be done.
  if (row.purge_at !== null && (row.resume === "done" || row.resume === "none")) times.push(row.purge_at);
  return times.length ? Math.min(...times) : null;
}

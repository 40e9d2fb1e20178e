/**
 * The RPC contracts of the interactions area (docs/interactions.md):
 *
 * - `Interaction`: one object per interaction (`idFromName(interaction_id)`). It keeps the question,
 *   its options or form schema, the audience, where the run that asked runs, the parked run, the
 *   status and the answer, and the hash of its callback ticket. Its one alarm expires it, publishes
 *   its listing row (D1 `interactions`) and its events (the hub), sends an audience its ticket, hands
 *   the outcome to the thread (or resumes a run outside any thread) and, after the retention, deletes it.
 * - `InteractionHub`: one object for the deployment, the ring of interaction events that
 *   `GET /api/interactions/stream` tails (ids increase; `Last-Event-ID` replays what the ring holds).
 */
import type { Attachment, Location } from "../shared/media";
import type { Env } from "../platform/env";
import type { JsonObject } from "../platform/http/bounded-json";
import { z } from "zod";
import { type AnsweredBy, InteractionState, type InteractionStatus } from "./record";
import type { ParkedRun } from "../shared/parked-run";

export type { InteractionStatus };

/** What `create` stores: the interaction, its parked run, and whether its audience is owed a ticket. */
export interface CreateInteraction {
  state: InteractionState;
  parked: ParkedRun;
  /** Mint a callback ticket and send it to the audience's notification feed. */
  ticket: boolean;
}

/** An answer as a door, a ticket or a thread's inbound gives it (the object fills in the option and media). */
export interface AnswerInput {
  text?: string | null;
  /** An option's effective id (door and ticket answers). */
  option_id?: string | null;
  form?: JsonObject | null;
  /** The inbound's params (a tap's `reply_id` picks an option). */
  params?: Record<string, string> | null;
  attachments?: Attachment[] | null;
  location?: Location | null;
}

/** A change asked of an interaction: done (its state after), or refused and why. */
export type InteractionChange = { ok: true; state: InteractionState } | { ok: false; reason: "unknown" | "not_pending" | "bad_option" | "bad_ticket" };

/** A thread's claim with its participant's inbound: the run to resume and the ask's result, or the status that refused it. */
export type ClaimResult = { ok: true; parked: ParkedRun; result: JsonObject } | { ok: false; status: InteractionStatus | null };

export interface InteractionRpc {
  /** Stores a new interaction and arms the alarm (listing row, events, ticket). Idempotent by id: a second create answers the state as it stands. */
  create(req: CreateInteraction): Promise<InteractionState>;
  /** The interaction (null: none, or deleted by retention or erasure). */
  read(): Promise<InteractionState | null>;
  /** Answers a pending interaction (the answer door). */
  answer(input: AnswerInput, by: AnsweredBy): Promise<InteractionChange>;
  /** Cancels a pending interaction; the run resumes with `{cancelled: true}`. */
  cancel(by: string | null, reason: string | null): Promise<InteractionChange>;
  /** The interaction behind a live ticket hash (null: not this one's, expired, used or ended). */
  ticketView(ticketHash: string): Promise<InteractionState | null>;
  /** Answers with a live ticket, which is then spent. */
  answerByTicket(ticketHash: string, input: AnswerInput): Promise<InteractionChange>;
  /**
   * The thread's participant answers with inbound `messageId`: the run resumes in that inbound's
   * turn. Idempotent for the same message (a turn run again claims again).
   */
  claim(messageId: string, input: AnswerInput): Promise<ClaimResult>;
  /** For the thread's resume turn after a door answer, a cancel or an expiry: the run and the ask's result (null: gone). */
  resumeInput(): Promise<{ parked: ParkedRun; result: JsonObject } | null>;
  /** Erasure (thread forget, person erase): deletes the interaction, its listing row and its events; a pending one never resumes. */
  discard(): Promise<void>;
}

/** One event of the stream (an interaction's transition), as the hub keeps it. */
export const InteractionEvent = z.object({
  id: z.number(),
  type: z.enum(["interaction.created", "interaction.answered", "interaction.cancelled", "interaction.expired", "interaction.resumed"]),
  interaction_id: z.string(),
  audience: z.string().nullable(),
  at: z.string(),
  interaction: InteractionState,
});
export type InteractionEvent = z.infer<typeof InteractionEvent>;

export const InteractionEventInput = InteractionEvent.omit({ id: true });
export type InteractionEventInput = z.infer<typeof InteractionEventInput>;

/** What `since` answers: the events after the asked id (for the audience, when given), the newest id held, and whether events were lost. */
export interface EventsSince {
  events: InteractionEvent[];
  /** The newest event id the hub has given (0: none yet): the next `after`. */
  last_id: number;
  /** Events after `after` were dropped from the ring before this read. */
  gap: boolean;
}

export interface InteractionHubRpc {
  /** Appends events (ids increase) and trims the ring to `cap`; wakes waiting readers. */
  publish(events: InteractionEventInput[], cap: number): Promise<void>;
  /**
   * Events after `after` (null: none, just the current newest id), filtered to `audience` when
   * given (and, with `audience_since`, to its interactions created at or after that ISO time: the
   * reader's key lineage); waits up to `waitMs` for one when there is none yet.
   */
  since(q: { after: number | null; audience: string | null; audience_since?: string; waitMs: number; limit: number }): Promise<EventsSince>;
  /** Erasure: drops the events of these interactions; answers how many. */
  drop(interactionIds: string[]): Promise<number>;
}

/** The object of interaction `interactionId`. */
export function interactionStub(env: Env, interactionId: string): InteractionRpc {
  return env.INTERACTIONS.get(env.INTERACTIONS.idFromName(interactionId));
}

/** The deployment's one event hub. */
export function interactionHub(env: Env): InteractionHubRpc {
  return env.INTERACTION_HUB.get(env.INTERACTION_HUB.idFromName("hub"));
}

/**
 * Parking a run: the one way an interaction comes to be. The run that asked (an llm
 * agent's loop, a bridge tool turn) hands its question and its parked run here; the interaction is
 * stored in its own object, which then publishes it in the background (listing row, stream event,
 * the audience's ticket). One object call: parking adds no D1 statement to the run that parks.
 */
import { interactionStub } from "./rpc";
import type { Env } from "../platform/env";
import type { Settings } from "../platform/settings/settings";
import type { ParkedRun } from "../shared/parked-run";
import { type AskUserInput, effectiveOptions } from "./ask";
import type { InteractionOrigin, InteractionState } from "./record";

export interface ParkRequest {
  ask: AskUserInput;
  origin: InteractionOrigin;
  target: InteractionState["target"];
  parked: ParkedRun;
}

/** Stores a new pending interaction for `req`; answers it as stored. */
export async function createInteraction(env: Env, settings: Settings, req: ParkRequest, nowMs = Date.now()): Promise<InteractionState> {
  const id = crypto.randomUUID();
  const options = req.ask.options ? effectiveOptions(req.ask.options) : null;
  const state: InteractionState = {
    interaction_id: id,
    status: "pending",
    question: req.ask.question,
    options,
    schema: req.ask.schema ?? null,
    audience: req.ask.audience ?? null,
    origin: req.origin,
    target: req.target,
    created_at: new Date(nowMs).toISOString(),
    expires_at: new Date(nowMs + settings.interactions.ttlSeconds * 1000).toISOString(),
    ended_at: null,
    answer: null,
    cancel_reason: null,
    reply_message_id: null,
    result: null,
  };
  return interactionStub(env, id).create({ state, parked: req.parked, ticket: state.audience !== null });
}

/** Can runs park here? Only with the interactions store configured (INTERACTIONS_STORE_URL). */
export function canPark(settings: Settings): boolean {
  return Boolean(settings.notifications.storeUrl);
}

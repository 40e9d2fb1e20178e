/**
 * The interactions a turn of this thread parked on (docs/interactions.md "Inside a
 * thread"), in the thread's SQLite (`parked_interactions`, thread schema v5). A row is noted in
 * the settle transaction of the turn that asked, and dropped in the settle transaction of the turn
 * its participant answered with, or when the interaction comes back as a resume turn (a door
 * answer, a cancel, an expiry). While a row is held, the thread's next inbound message answers it.
 * A row also remembers the route fields a resume record is minted with, so the handoff needs no
 * route read.
 */
import { z } from "zod";
import type { TurnInbound } from "../model/payload";
import { Door } from "../../shared/kinds";
import { parseStored } from "../../platform/persistence/stored-json";
import { threadSql } from "./store";

/** What a resume record copies from the asking turn's record. */
export const ParkedRoute = z
  .object({
    route_name: z.string(),
    door: Door,
    channel: z.string().nullable(),
    our_identity: z.string().nullable(),
    callback_url: z.string().nullable(),
    client_address: z.string().nullable(),
    caller_principal: z.string().nullable(),
  })
  .strict();
export type ParkedRoute = z.infer<typeof ParkedRoute>;

export interface ParkedNote {
  interaction_id: string;
  /** The record whose turn parked. */
  asked_by: string;
  route: ParkedRoute;
}

/**
 * Objects known to hold no parked interaction, by their storage: an inbound then needs no look-up.
 * Only `noteParked` adds a row, so the knowledge holds until it runs.
 */
const noneParked = new WeakSet<DurableObjectStorage>();

/** Notes a parked interaction (in the caller's transaction: the settle's). */
export function noteParked(storage: DurableObjectStorage, note: ParkedNote, nowMs: number): void {
  noneParked.delete(storage);
  threadSql(storage, "note parked")
    .run`INSERT OR REPLACE INTO parked_interactions (interaction_id, asked_by, route, noted_at) VALUES (${note.interaction_id}, ${note.asked_by}, ${JSON.stringify(note.route)}, ${nowMs})`;
}

/** The newest interaction still waiting for this thread's next inbound, or null. */
export function waitingParked(storage: DurableObjectStorage): ParkedNote | null {
  if (noneParked.has(storage)) return null;
  const r = threadSql(storage, "waiting parked")<{
    interaction_id: string;
    asked_by: string;
    route: string;
  }>`SELECT interaction_id, asked_by, route FROM parked_interactions ORDER BY noted_at DESC, rowid DESC LIMIT 1`[0];
  if (!r) noneParked.add(storage);
  return r ? { interaction_id: r.interaction_id, asked_by: r.asked_by, route: parseStored(ParkedRoute, r.route, "parked interaction route") } : null;
}

/** One parked interaction by id, or null. */
export function parkedById(storage: DurableObjectStorage, interactionId: string): ParkedNote | null {
  const r = threadSql(storage, "parked by id")<{
    interaction_id: string;
    asked_by: string;
    route: string;
  }>`SELECT interaction_id, asked_by, route FROM parked_interactions WHERE interaction_id = ${interactionId}`[0];
  return r ? { interaction_id: r.interaction_id, asked_by: r.asked_by, route: parseStored(ParkedRoute, r.route, "parked interaction route") } : null;
}

/** Drops one parked interaction (answered here, or handed back as a resume turn). */
export function dropParked(storage: DurableObjectStorage, interactionId: string): void {
  threadSql(storage, "drop parked").run`DELETE FROM parked_interactions WHERE interaction_id = ${interactionId}`;
}

/** Every parked interaction's id (thread forget erases them). */
export function parkedIds(storage: DurableObjectStorage): string[] {
  return threadSql(storage, "parked ids")<{ interaction_id: string }>`SELECT interaction_id FROM parked_interactions`.map((r) => r.interaction_id);
}

/** The turn input source of a resume turn (src/conversations/thread/interaction-turns.ts). */
export const RESUME_SOURCE = "interaction";

/** Is this the turn input of a resume turn? */
export function isResumeInbound(inbound: TurnInbound): boolean {
  return inbound.kind === "event" && inbound.source === RESUME_SOURCE;
}

/** The interaction a resume turn resumes (null: not a resume turn). */
export function resumedInteractionId(inbound: TurnInbound): string | null {
  if (!isResumeInbound(inbound)) return null;
  const id = inbound.event?.payload.interaction_id;
  return typeof id === "string" ? id : null;
}

/**
 * The interactions listing in D1 (migration 0018; docs/interactions.md "Where things live"): one
 * row per interaction, written by its object in the background, read by the paged doors and the
 * public ticket door. The row's `view` is the interaction as the doors show it.
 */
import { z } from "zod";
import { CountRow, type SqlFragment, type Statement, all, batch, d1, first, join, rowsOf, sql, trusted } from "../platform/persistence/d1";
import { parseStored } from "../platform/persistence/stored-json";
import { type InteractionState, type InteractionStatus, InteractionView } from "./record";

/** The listing row of `s` (upsert), with the live ticket's hash and expiry when there is one. */
export function upsertInteractionRow(db: D1Database, s: InteractionState, ticket: { hash: string; expires_at: number } | null): Statement {
  const origin = s.origin;
  const routeName = origin.kind === "thread" ? origin.route_name : null;
  const threadId = origin.kind === "tool_run" ? null : origin.thread_id;
  const endedAt = s.ended_at ? Date.parse(s.ended_at) : null;
  return d1(
    db,
  )`INSERT INTO interactions (interaction_id, status, audience, origin_kind, route_name, thread_id, target_kind, target_name, created_at, expires_at,
      ended_at, ticket_hash, ticket_expires_at, view)
    VALUES (${s.interaction_id}, ${s.status}, ${s.audience}, ${origin.kind}, ${routeName}, ${threadId}, ${s.target.kind}, ${s.target.name},
      ${Date.parse(s.created_at)}, ${Date.parse(s.expires_at)}, ${endedAt}, ${ticket?.hash ?? null}, ${ticket?.expires_at ?? null}, ${JSON.stringify(s)})
    ON CONFLICT (interaction_id) DO UPDATE SET status = excluded.status, audience = excluded.audience, expires_at = excluded.expires_at,
      ended_at = excluded.ended_at, ticket_hash = excluded.ticket_hash, ticket_expires_at = excluded.ticket_expires_at, view = excluded.view`;
}

export function deleteInteractionRow(db: D1Database, interactionId: string): Statement {
  return d1(db)`DELETE FROM interactions WHERE interaction_id = ${interactionId}`;
}

const ViewRow = z.object({ view: z.string() });
const IdRow = z.object({ interaction_id: z.string() });

/** What a listing narrows to. */
export interface InteractionFilter {
  status?: InteractionStatus;
  thread_id?: string;
  /** A restricted caller's user_id: only interactions addressed to it... */
  audience?: string;
  /** ...and created at or after this epoch ms (the caller's key lineage, src/access-control/identity.ts). */
  audienceSinceMs?: number;
  /** Only pending interactions not yet expired at this instant (`GET /api/interactions/pending`). */
  pendingAt?: number;
}

/** A page of the listing, newest first, with the total matching. */
export async function listInteractions(
  db: D1Database,
  f: InteractionFilter,
  offset: number,
  limit: number,
): Promise<{ items: InteractionView[]; total: number }> {
  const where: SqlFragment[] = [];
  if (f.pendingAt !== undefined) where.push(sql`status = 'pending' AND expires_at > ${f.pendingAt}`);
  else if (f.status) where.push(sql`status = ${f.status}`);
  if (f.thread_id !== undefined) where.push(sql`thread_id = ${f.thread_id}`);
  if (f.audience !== undefined) {
    where.push(sql`audience = ${f.audience}`);
    // A holder with no lineage (no key) holds nothing.
    if (f.audienceSinceMs !== undefined) where.push(sql`created_at >= ${Number.isFinite(f.audienceSinceMs) ? f.audienceSinceMs : Number.MAX_SAFE_INTEGER}`);
  }
  const clause = where.length ? sql`WHERE ${join(where, " AND ")}` : trusted("");
  const pageStmt = d1(db)`SELECT view FROM interactions ${clause} ORDER BY created_at DESC, interaction_id LIMIT ${limit} OFFSET ${offset}`;
  const countStmt = d1(db)`SELECT COUNT(*) AS n FROM interactions ${clause}`;
  const [rows, count] = await batch(db, [pageStmt, countStmt]);
  const items = rowsOf(ViewRow, rows.results, pageStmt.text).map((r) => parseStored(InteractionView, r.view, "interaction listing row"));
  return { items, total: rowsOf(CountRow, count.results, countStmt.text)[0]?.n ?? 0 };
}

/** The interaction a live ticket hash belongs to (null: none, or the ticket expired at `nowMs`). */
export async function interactionByTicket(db: D1Database, ticketHash: string, nowMs: number): Promise<string | null> {
  const row = await first(
    IdRow,
    d1(db)`SELECT interaction_id FROM interactions WHERE ticket_hash = ${ticketHash} AND ticket_expires_at > ${nowMs} AND status = 'pending'`,
  );
  return row?.interaction_id ?? null;
}

/** The interactions of a thread (for its erasure). */
export async function interactionsOfThread(db: D1Database, threadId: string): Promise<string[]> {
  const rows = await all(IdRow, d1(db)`SELECT interaction_id FROM interactions WHERE thread_id = ${threadId}`);
  return rows.map((r) => r.interaction_id);
}

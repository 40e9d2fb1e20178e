/**
 * The interactions listing in D1 (migration 0018; docs/interactions.md "Where things live"): one
 * row per interaction, written by its object in the background, read by the paged doors and the
 * public ticket door. The row's `view` is the interaction as the doors show it.
 */
import { parseStored } from "../platform/persistence/stored-json";
import { type InteractionState, type InteractionStatus, InteractionView } from "./record";

/** The listing row of `s` (upsert), with the live ticket's hash and expiry when there is one. */
export function upsertInteractionRow(db: D1Database, s: InteractionState, ticket: { hash: string; expires_at: number } | null): D1PreparedStatement {
  const origin = s.origin;
  return db
    .prepare(
      `INSERT INTO interactions (interaction_id, status, audience, origin_kind, route_name, thread_id, target_kind, target_name, created_at, expires_at, ended_at, ticket_hash, ticket_expires_at, view)
       VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)
       ON CONFLICT (interaction_id) DO UPDATE SET status = ?2, audience = ?3, expires_at = ?10, ended_at = ?11, ticket_hash = ?12, ticket_expires_at = ?13, view = ?14`,
    )
    .bind(
      s.interaction_id,
      s.status,
      s.audience,
      origin.kind,
      origin.kind === "thread" ? origin.route_name : null,
      origin.kind === "tool_run" ? null : origin.thread_id,
      s.target.kind,
      s.target.name,
      Date.parse(s.created_at),
      Date.parse(s.expires_at),
      s.ended_at ? Date.parse(s.ended_at) : null,
      ticket?.hash ?? null,
      ticket?.expires_at ?? null,
      JSON.stringify(s),
    );
}

export function deleteInteractionRow(db: D1Database, interactionId: string): D1PreparedStatement {
  return db.prepare("DELETE FROM interactions WHERE interaction_id = ?").bind(interactionId);
}

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
  const where: string[] = [];
  const args: unknown[] = [];
  if (f.pendingAt !== undefined) {
    where.push("status = 'pending' AND expires_at > ?");
    args.push(f.pendingAt);
  } else if (f.status) {
    where.push("status = ?");
    args.push(f.status);
  }
  if (f.thread_id !== undefined) {
    where.push("thread_id = ?");
    args.push(f.thread_id);
  }
  if (f.audience !== undefined) {
    where.push("audience = ?");
    args.push(f.audience);
    if (f.audienceSinceMs !== undefined) {
      where.push("created_at >= ?");
      // A holder with no lineage (no key) holds nothing.
      args.push(Number.isFinite(f.audienceSinceMs) ? f.audienceSinceMs : Number.MAX_SAFE_INTEGER);
    }
  }
  const clause = where.length ? `WHERE ${where.join(" AND ")}` : "";
  const [rows, count] = await db.batch<{ view: string } | { n: number }>([
    db.prepare(`SELECT view FROM interactions ${clause} ORDER BY created_at DESC, interaction_id LIMIT ? OFFSET ?`).bind(...args, limit, offset),
    db.prepare(`SELECT COUNT(*) AS n FROM interactions ${clause}`).bind(...args),
  ]);
  const items = (rows.results as Array<{ view: string }>).map((r) => parseStored(InteractionView, r.view, "interaction listing row"));
  return { items, total: (count.results as Array<{ n: number }>)[0]?.n ?? 0 };
}

/** The interaction a live ticket hash belongs to (null: none, or the ticket expired at `nowMs`). */
export async function interactionByTicket(db: D1Database, ticketHash: string, nowMs: number): Promise<string | null> {
  const row = await db
    .prepare("SELECT interaction_id FROM interactions WHERE ticket_hash = ? AND ticket_expires_at > ? AND status = 'pending'")
    .bind(ticketHash, nowMs)
    .first<{ interaction_id: string }>();
  return row?.interaction_id ?? null;
}

/** The interactions of a thread (for its erasure). */
export async function interactionsOfThread(db: D1Database, threadId: string): Promise<string[]> {
  const { results } = await db.prepare("SELECT interaction_id FROM interactions WHERE thread_id = ?").bind(threadId).all<{ interaction_id: string }>();
  return results.map((r) => r.interaction_id);
}

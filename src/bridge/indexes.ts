/**
 * D1 indexes written by thread objects (decisions §9): the thread listing row, the
 * message_id → thread map, and the failed listing. One batched write per settled state.
 */
import type { AnswerRecord } from "./record";

export interface ThreadSummary {
  route_name: string;
  thread_id: string;
  client_address: string | null;
  last_activity_at: string;
  message_count: number;
  last_status: string;
}

export interface IndexWrite {
  thread: ThreadSummary;
  /** Records whose message_index row to (re)write, with their expiry (epoch ms or null). */
  messages: Array<{ record: AnswerRecord; expires_at: number | null }>;
  failed?: Array<{ record: AnswerRecord; expires_at: number }>;
  /** Provider ids of chunks just sent, so receipts find the record. */
  outbound?: Array<{ channel: string; provider_message_id: string; record: AnswerRecord; expires_at: number }>;
}

export async function writeIndexes(db: D1Database, w: IndexWrite): Promise<void> {
  const stmts: D1PreparedStatement[] = [
    db
      .prepare(
        `INSERT INTO threads (route_name, thread_id, client_address, last_activity_at, message_count, last_status)
         SELECT ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM routes WHERE route_name = ?)
         ON CONFLICT(route_name, thread_id) DO UPDATE SET client_address = excluded.client_address,
           last_activity_at = excluded.last_activity_at, message_count = excluded.message_count, last_status = excluded.last_status`,
      )
      .bind(w.thread.route_name, w.thread.thread_id, w.thread.client_address, w.thread.last_activity_at, w.thread.message_count, w.thread.last_status, w.thread.route_name),
  ];
  for (const m of w.messages) {
    stmts.push(
      db
        .prepare("INSERT OR REPLACE INTO message_index (message_id, route_name, thread_id, expires_at) VALUES (?, ?, ?, ?)")
        .bind(m.record.message_id, m.record.route_name, m.record.thread_id, m.expires_at),
    );
  }
  for (const f of w.failed ?? []) {
    stmts.push(
      db
        .prepare("INSERT OR REPLACE INTO failed_records (message_id, route_name, thread_id, failed_at, expires_at) VALUES (?, ?, ?, ?, ?)")
        .bind(f.record.message_id, f.record.route_name, f.record.thread_id, f.record.updated_at, f.expires_at),
    );
  }
  for (const o of w.outbound ?? []) {
    stmts.push(
      db
        .prepare("INSERT OR REPLACE INTO outbound_messages (channel, provider_message_id, thread_id, message_id, expires_at) VALUES (?, ?, ?, ?, ?)")
        .bind(o.channel, o.provider_message_id, o.record.thread_id, o.record.message_id, o.expires_at),
    );
  }
  await db.batch(stmts);
}

/** The record a receipt is about, by the provider id of one of its chunks. */
export async function locateOutbound(db: D1Database, channel: string, providerMessageId: string): Promise<{ thread_id: string; message_id: string } | null> {
  return db
    .prepare("SELECT thread_id, message_id FROM outbound_messages WHERE channel = ? AND provider_message_id = ?")
    .bind(channel, providerMessageId)
    .first<{ thread_id: string; message_id: string }>();
}

/** Where a message lives, unless its record expired. */
export async function locateMessage(db: D1Database, messageId: string, nowMs: number): Promise<{ route_name: string; thread_id: string } | null> {
  return db
    .prepare("SELECT route_name, thread_id FROM message_index WHERE message_id = ? AND (expires_at IS NULL OR expires_at > ?)")
    .bind(messageId, nowMs)
    .first<{ route_name: string; thread_id: string }>();
}

/** Drops a thread's index rows (forget), dedupe keys included: they name its inbounds. */
export async function dropThreadIndexes(db: D1Database, threadId: string): Promise<void> {
  await db.batch([
    db.prepare("DELETE FROM threads WHERE thread_id = ?").bind(threadId),
    db.prepare("DELETE FROM inbound_dedupe WHERE thread_id = ?").bind(threadId),
    db.prepare("DELETE FROM message_index WHERE thread_id = ?").bind(threadId),
    db.prepare("DELETE FROM failed_records WHERE thread_id = ?").bind(threadId),
    db.prepare("DELETE FROM outbound_messages WHERE thread_id = ?").bind(threadId),
  ]);
}

/** Reclaims expired index rows (the cron prune pass). */
export async function pruneIndexes(db: D1Database, nowMs: number): Promise<void> {
  await db.batch([
    db.prepare("DELETE FROM message_index WHERE expires_at IS NOT NULL AND expires_at <= ?").bind(nowMs),
    db.prepare("DELETE FROM failed_records WHERE expires_at <= ?").bind(nowMs),
    db.prepare("DELETE FROM inbound_dedupe WHERE expires_at <= ?").bind(nowMs),
    db.prepare("DELETE FROM outbound_messages WHERE expires_at <= ?").bind(nowMs),
  ]);
}

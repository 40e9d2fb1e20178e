import { type CheckpointMessage, type CheckpointStore, parseStoredMessage } from "../model/agent-memory";

/**
 * The `d1` provider: one row per message plus one per thread carrying its newest write. It
 * does not expire on read (spec §8: SQL providers rely on the sweep); `POST
 * /api/checkpoints/sweep` deletes threads idle past the TTL.
 */
export function d1CheckpointStore(db: D1Database, now: () => Date): CheckpointStore {
  return {
    async read(threadId) {
      const { results } = await db
        .prepare("SELECT message FROM checkpoint_messages WHERE thread_id = ? ORDER BY seq")
        .bind(threadId)
        .all<{ message: string }>();
      return results.map((r) => parseStoredMessage(r.message));
    },
    async append(threadId, messages: CheckpointMessage[]) {
      if (!messages.length) return;
      const at = now().getTime();
      // One batch is one transaction: the messages and the thread's freshness land together.
      await db.batch([
        ...messages.map((m) =>
          db
            .prepare(
              `INSERT INTO checkpoint_messages (thread_id, seq, message, updated_at)
               SELECT ?1, COALESCE(MAX(seq), 0) + 1, ?2, ?3 FROM checkpoint_messages WHERE thread_id = ?1`,
            )
            .bind(threadId, JSON.stringify(m), at),
        ),
        db
          .prepare(
            `INSERT INTO checkpoint_threads (thread_id, updated_at) VALUES (?, ?)
             ON CONFLICT(thread_id) DO UPDATE SET updated_at = excluded.updated_at`,
          )
          .bind(threadId, at),
      ]);
    },
    async delete(threadId) {
      await db.batch([
        db.prepare("DELETE FROM checkpoint_messages WHERE thread_id = ?").bind(threadId),
        db.prepare("DELETE FROM checkpoint_threads WHERE thread_id = ?").bind(threadId),
      ]);
    },
  };
}

/** Largest number of swept thread ids listed in one sweep report (the count stays exact). */
export const SWEEP_LIST_LIMIT = 1000;

/** Deletes every thread whose newest write is older than `cutoffMs`; one transaction. */
export async function sweepD1Checkpoints(db: D1Database, cutoffMs: number): Promise<{ count: number; threads: string[] }> {
  const [found] = await db.batch<{ thread_id: string }>([
    db.prepare("SELECT thread_id FROM checkpoint_threads WHERE updated_at < ? ORDER BY updated_at").bind(cutoffMs),
    db.prepare("DELETE FROM checkpoint_messages WHERE thread_id IN (SELECT thread_id FROM checkpoint_threads WHERE updated_at < ?)").bind(cutoffMs),
    db.prepare("DELETE FROM checkpoint_threads WHERE updated_at < ?").bind(cutoffMs),
  ]);
  const ids = found.results.map((r) => r.thread_id);
  return { count: ids.length, threads: ids.slice(0, SWEEP_LIST_LIMIT) };
}

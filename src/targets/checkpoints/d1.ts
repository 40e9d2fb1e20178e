import { z } from "zod";
import { all, batch, d1, rowsOf } from "../../platform/persistence/d1";
import { type CheckpointMessage, type CheckpointStore, parseStoredMessage } from "../../shared/agent-memory";

const MessageRow = z.object({ message: z.string() });
const ThreadRow = z.object({ thread_id: z.string() });

/**
 * The `d1` provider: one row per message plus one per thread carrying its newest write. It
 * does not expire on read (spec §8: SQL providers rely on the sweep); `POST
 * /api/checkpoints/sweep` deletes threads idle past the TTL.
 */
export function d1CheckpointStore(db: D1Database, now: () => Date): CheckpointStore {
  return {
    async read(threadId) {
      const results = await all(MessageRow, d1(db)`SELECT message FROM checkpoint_messages WHERE thread_id = ${threadId} ORDER BY seq`);
      return results.map((r) => parseStoredMessage(r.message));
    },
    async append(threadId, messages: CheckpointMessage[]) {
      if (!messages.length) return;
      const at = now().getTime();
      // One batch is one transaction: the messages and the thread's freshness land together.
      await batch(db, [
        ...messages.map(
          (m) => d1(db)`INSERT INTO checkpoint_messages (thread_id, seq, message, updated_at)
               SELECT ${threadId}, COALESCE(MAX(seq), 0) + 1, ${JSON.stringify(m)}, ${at} FROM checkpoint_messages WHERE thread_id = ${threadId}`,
        ),
        d1(db)`INSERT INTO checkpoint_threads (thread_id, updated_at) VALUES (${threadId}, ${at})
             ON CONFLICT(thread_id) DO UPDATE SET updated_at = excluded.updated_at`,
      ]);
    },
    async delete(threadId) {
      await batch(db, [
        d1(db)`DELETE FROM checkpoint_messages WHERE thread_id = ${threadId}`,
        d1(db)`DELETE FROM checkpoint_threads WHERE thread_id = ${threadId}`,
      ]);
    },
  };
}

/** Largest number of swept thread ids listed in one sweep report (the count stays exact). */
export const SWEEP_LIST_LIMIT = 1000;

/** Deletes every thread whose newest write is older than `cutoffMs`; one transaction. */
export async function sweepD1Checkpoints(db: D1Database, cutoffMs: number): Promise<{ count: number; threads: string[] }> {
  const read = d1(db)`SELECT thread_id FROM checkpoint_threads WHERE updated_at < ${cutoffMs} ORDER BY updated_at`;
  const [found] = await batch(db, [
    read,
    d1(db)`DELETE FROM checkpoint_messages WHERE thread_id IN (SELECT thread_id FROM checkpoint_threads WHERE updated_at < ${cutoffMs})`,
    d1(db)`DELETE FROM checkpoint_threads WHERE updated_at < ${cutoffMs}`,
  ]);
  const ids = rowsOf(ThreadRow, found.results, read.text).map((r) => r.thread_id);
  return { count: ids.length, threads: ids.slice(0, SWEEP_LIST_LIMIT) };
}

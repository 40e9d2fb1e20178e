import { type IndexWrite, writeIndexes } from "../bridge/indexes";
import type { IndexExtras, IndexWriter, ThreadDeps } from "./deps";
import type { ThreadIdentity } from "./identity";
import { countAll, newestRecord } from "./store";

/**
 * The thread's projection into D1 (decisions §9): its listing row (newest activity, count, last
 * status), the message_index rows of the records given, and the failed and outbound rows. One
 * batched write per call.
 */
export class IndexProjection implements IndexWriter {
  constructor(
    private readonly deps: Pick<ThreadDeps, "storage" | "env">,
    private readonly identity: ThreadIdentity,
  ) {}

  /** Writes the listing row with `messages`' index rows and `extra`; drops the listing row once every record is gone. */
  async write(messages: IndexWrite["messages"], extra: IndexExtras = {}): Promise<void> {
    const { storage } = this.deps;
    const db = this.deps.env().DB;
    const newest = newestRecord(storage);
    if (!newest) {
      // Every record is gone (pruned after retention): the listing stops holding the thread.
      const threadId = this.identity.get();
      if (threadId && messages.length === 0) await db.prepare("DELETE FROM threads WHERE thread_id = ?").bind(threadId).run();
      return;
    }
    await writeIndexes(db, {
      thread: {
        route_name: newest.route_name,
        thread_id: newest.thread_id,
        client_address: newest.client_address,
        last_activity_at: newest.created_at,
        message_count: countAll(storage),
        last_status: newest.status,
      },
      messages,
      failed: extra.failed,
      outbound: extra.outbound,
    });
  }
}

/**
 * The admin listings (D1 `threads`, `failed_records`) trail the threads by design: a
 * thread pushes its row to its IndexShard in the background, and the shard writes D1 in batches.
 * Tests that read the listing wait for it here, deterministically: a thread's outbox rows are
 * deleted only after its shard took the push, so an empty outbox means the shard holds the row,
 * and a flush then puts it in D1.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { SHARD_COUNT, allShards, shardStub } from "../../src/shards/rpc";
import { eventually, stubFor } from "./threads";

/** Rows still in thread `threadId`'s outbox. */
export async function outboxRows(threadId: string): Promise<number> {
  return runInDurableObject(stubFor(threadId), (_o, state) => state.storage.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM index_outbox").one().n);
}

/** Waits until each thread has pushed what it noted, then flushes every shard to D1. */
export async function listingCaughtUp(...threadIds: string[]): Promise<void> {
  for (const t of threadIds) {
    const left = await eventually(
      () => outboxRows(t),
      (n) => n === 0,
    );
    if (left !== 0) throw new Error(`thread ${t} never pushed its listing (${left} outbox rows left)`);
  }
  await Promise.all(allShards(env).map((s) => s.flush()));
}

/** Every live ledger entry in `namespace`, across all shards (dedupe claims, directory, outbound ids). */
export async function ledgerRows(namespace: string): Promise<Array<{ key: string; message_id: string; thread_id: string }>> {
  const now = Date.now();
  const per = await Promise.all(
    Array.from({ length: SHARD_COUNT }, (_, i) =>
      runInDurableObject(shardStub(env, i) as unknown as DurableObjectStub, (_o, state) =>
        state.storage.sql
          .exec<{ key: string; message_id: string; thread_id: string }>(
            "SELECT key, message_id, thread_id FROM ledger WHERE namespace = ? AND (expires_at IS NULL OR expires_at > ?) ORDER BY key",
            namespace,
            now,
          )
          .toArray(),
      ),
    ),
  );
  return per.flat().sort((a, b) => a.key.localeCompare(b.key));
}

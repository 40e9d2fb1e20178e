/**
 * `POST /api/runs/prune`: removes the runs started before a cutoff, with counts. Every
 * shard drops the traces it keeps and the summary rows it still buffers for such runs, then the
 * index rows go. A turn's trace stays in its thread until its record expires (it is reachable only
 * through its index row, which is gone, and holds nothing the record does not).
 */
import { allShards } from "../../shards/rpc";
import type { Env } from "../../platform/env";
import { pruneRunRows } from "../../shards/runs-table";

/** Prunes runs started before `beforeMs`; answers the index rows and the shard-kept traces removed. */
export async function pruneRuns(env: Env, beforeMs: number): Promise<{ runs_removed: number; traces_removed: number }> {
  const traces = await Promise.all(allShards(env).map((s) => s.pruneRuns(beforeMs)));
  const rows = await pruneRunRows(env.DB, beforeMs);
  return { runs_removed: rows, traces_removed: traces.reduce((a, b) => a + b, 0) };
}

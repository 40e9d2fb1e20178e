/** The runs export's CSV. Pure. */
import type { RunView } from "./runs/query";
import { RUN_SUMMARY_COLUMNS } from "../shards/runs-table";
import { toCsv } from "./csv";

/** The export's columns, in order: the summary row's (src/shards/runs-table.ts). */
export const RUN_CSV_COLUMNS = RUN_SUMMARY_COLUMNS;

/** The CSV document of `runs`. */
export function runsCsv(runs: RunView[]): string {
  return toCsv(
    RUN_CSV_COLUMNS,
    runs.map(
      (r): Record<(typeof RUN_CSV_COLUMNS)[number], string | number | boolean | null> => ({
        trace_id: r.trace_id,
        kind: r.kind,
        trigger: r.trigger,
        target_kind: r.target.kind,
        target_name: r.target.name,
        target_version: r.target.version,
        route_name: r.route_name,
        thread_id: r.thread_id,
        interaction_id: r.interaction_id,
        user_id: r.user_id,
        principal: r.principal,
        started_at: r.started_at,
        duration_ms: r.duration_ms,
        outcome: r.outcome,
        step_count: r.step_count,
        has_error: r.has_error,
      }),
    ),
  );
}

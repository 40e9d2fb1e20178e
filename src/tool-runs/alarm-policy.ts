/**
 * What a ToolRun object's alarm does next (pure; docs/tool-runs.md "Life of a run"). The object
 * has one alarm and a run one row; the alarm re-reads the row and acts only on what it finds, so a
 * late, early or repeated alarm is harmless.
 *
 * - `queued`: start the first attempt.
 * - `running` while no attempt of this instance is in flight: the object restarted mid-run (an
 *   eviction, a deploy, a crash). Start again while attempts < max; at max the run fails
 *   `interrupted`, so a tool that kills its object cannot loop forever.
 * - `waiting` (its tool asked a question): nothing until the interaction's object hands the
 *   outcome over; past the wait's deadline (`expires_at` while waiting) the run fails `timeout`,
 *   so a lost hand-over cannot leave it waiting forever.
 * - ended, not yet published: write the listing row and the trace (again after a failed try).
 * - ended and published: delete the run once it expired; before that, sleep until then.
 */
import type { ToolRunRecord } from "./record";

/**
 * How long an attempt may run before the alarm takes it for lost: the longest tool deadline
 * (MAX_TOOL_TIMEOUT_SECONDS, 300 s) plus a margin. The alarm set at each start is this far ahead,
 * so a run whose object died is re-driven at most this long after it started.
 */
export const ATTEMPT_LEASE_MS = 360_000;

/** A failed publish or expiry (D1 unreachable) is tried again this much later. */
export const RETRY_MS = 5_000;

export type AlarmStep =
  | { kind: "none" }
  | { kind: "start" }
  | { kind: "give_up" }
  | { kind: "stop_waiting" }
  | { kind: "publish" }
  | { kind: "expire" }
  | { kind: "sleep"; until: number };

export function alarmStep(
  row: Pick<ToolRunRecord, "status" | "attempts" | "published" | "expires_at" | "started_at"> | null,
  nowMs: number,
  maxAttempts: number,
  inFlight: boolean,
): AlarmStep {
  if (!row) return { kind: "none" };
  switch (row.status) {
    case "queued":
      return inFlight ? { kind: "sleep", until: nowMs + ATTEMPT_LEASE_MS } : { kind: "start" };
    case "running":
      // An attempt of this very instance is still going (a long tool): look again a lease later.
      if (inFlight) return { kind: "sleep", until: nowMs + ATTEMPT_LEASE_MS };
      return row.attempts >= maxAttempts ? { kind: "give_up" } : { kind: "start" };
    case "waiting":
      if (row.expires_at === null || nowMs >= row.expires_at) return { kind: "stop_waiting" };
      return { kind: "sleep", until: row.expires_at };
    case "succeeded":
    case "failed":
      if (!row.published) return { kind: "publish" };
      if (row.expires_at === null || nowMs >= row.expires_at) return { kind: "expire" };
      return { kind: "sleep", until: row.expires_at };
  }
}

/** The failure a run ends with when its question's outcome never arrived by the wait's deadline. */
export function waitLostEnd(): { status: "failed"; result: null; error: string; error_kind: "timeout" } {
  return { status: "failed", result: null, error: "the run's question got no outcome in time (the interaction did not hand it over)", error_kind: "timeout" };
}

/** The failure a run interrupted `attempts` times ends with. */
export function interruptedEnd(attempts: number): { status: "failed"; result: null; error: string; error_kind: "interrupted" } {
  return {
    status: "failed",
    result: null,
    error: `the run was interrupted ${attempts} time${attempts === 1 ? "" : "s"} (its object restarted mid-run); not started again`,
    error_kind: "interrupted",
  };
}

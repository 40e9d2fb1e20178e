/**
 * The ToolRun objects' RPC contract (docs/tool-runs.md). One object per background tool
 * run (`idFromName(run_id)`) holds the run's request, status, attempts and result or error; its one
 * alarm starts the run, re-drives one interrupted by a restart (up to TOOL_RUNS_MAX_ATTEMPTS
 * starts), publishes the end (the D1 listing row and the run's trace) and, after
 * TOOL_RUNS_RETENTION_SECONDS, deletes the run. D1 holds only the listing index.
 */
import type { Env } from "../platform/env";
import type { JsonObject } from "../platform/http/bounded-json";
import type { InteractionStatus } from "../interactions/rpc";
import type { ToolRunRequest, ToolRunRecord } from "./record";

export type { ToolRunRequest, ToolRunRecord };

/** What a keyed submit found (see ToolRunRpc.submitKeyed). */
export type KeyedSubmit = { kind: "new" | "replay"; row: ToolRunRecord } | { kind: "reused" };

export interface ToolRunRpc {
  /**
   * Stores the run as `queued` and arms the alarm for now; answers the stored row. Idempotent by
   * run id: a second submit of the same run answers the row as it stands and changes nothing.
   */
  submit(request: ToolRunRequest): Promise<ToolRunRecord>;
  /**
   * The door's submit under an `Idempotency-Key` (the run id derived from the key, `request_hash`
   * set): `new` when this stored the run, `replay` when the same request stored it before (the row
   * as it stands), `reused` when another request did (nothing changes).
   */
  submitKeyed(request: ToolRunRequest & { request_hash: string }): Promise<KeyedSubmit>;
  /** The run, or null when this object holds none (never submitted, or deleted by retention). */
  read(): Promise<ToolRunRecord | null>;
  /**
   * Hands a waiting run its question's outcome (the interaction's object calls this once the
   * interaction ended): `outcome` is what `ask_user` answers. `resumed` when the run ended with
   * it; `retry` while the run is still storing its question (call again shortly); `not_waiting`
   * when the run waits for no such interaction (ended, expired, or never asked it).
   */
  resume(interactionId: string, outcome: JsonObject, status: Exclude<InteractionStatus, "pending">): Promise<"resumed" | "retry" | "not_waiting">;
}

/** The object of run `runId`. */
export function toolRunStub(env: Env, runId: string): ToolRunRpc {
  return env.TOOL_RUNS.get(env.TOOL_RUNS.idFromName(runId));
}

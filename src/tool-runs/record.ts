/**
 * A background tool run's shapes (docs/tool-runs.md), one definition each: the request a
 * ToolRun object is handed, the record it keeps and answers, and the listing row D1 keeps.
 */
import { z } from "zod";
import { JsonObject, JsonValue } from "../platform/http/bounded-json";
import type { StateBinding } from "../shared/state-binding";

/** `waiting`: the run's tool asked a question (ask_user) and the run waits for its interaction to end. */
export const ToolRunStatus = z.enum(["queued", "running", "waiting", "succeeded", "failed"]);
export type ToolRunStatus = z.infer<typeof ToolRunStatus>;

/** Who started the run: the door (`api`), a schedule's fire (`schedule`) or a hook's fire (`hook`). */
export const ToolRunOrigin = z.enum(["api", "schedule", "hook"]);
export type ToolRunOrigin = z.infer<typeof ToolRunOrigin>;

/**
 * What a run is asked to do, and as whom. `caller` is the run's execution key: the submitting
 * caller's own key (the door), a schedule's or a hook's bound key, or a trigger link's; its live
 * grants are re-checked when the run starts, and the fingerprint must still match
 * (src/access-control/pass-role.ts `authorizeTurn`).
 */
export interface ToolRunRequest {
  run_id: string;
  tool_name: string;
  arguments: JsonObject;
  caller: { user_id: string; fingerprint: string };
  origin: ToolRunOrigin;
  /** The schedule that fired it (origin `schedule`). */
  schedule_name: string | null;
  /** The schedule slot the fire stands for (epoch ms). */
  slot_at: number | null;
  /** The hook that fired it (origin `hook`; absent: none). */
  hook_name?: string | null;
  /**
   * A state binding the run reads before and writes after its dispatch (a hook's or a schedule's;
   * spec §2.6), as a bound tool turn does (src/tool-runs/bound-run.ts). Absent: none.
   */
  state_binding?: StateBinding | null;
  /**
   * Who stored the state binding (the hook's or schedule's `created_by`): the binding runs bounded
   * by that key's live grants (src/access-control/stored-by.ts). Absent: no binding.
   */
  binding_by?: string | null;
  /**
   * The fingerprint of the request (src/platform/http/idempotency.ts) when the door submitted the
   * run under an `Idempotency-Key`, whose run id is derived from the key (absent: none).
   */
  request_hash?: string | null;
}

/** The run as the object keeps it (times in epoch ms; `published`: listing row and trace written). */
export interface ToolRunRecord {
  run_id: string;
  tool_name: string;
  arguments: JsonObject;
  caller_user_id: string;
  caller_fingerprint: string;
  origin: ToolRunOrigin;
  schedule_name: string | null;
  slot_at: number | null;
  hook_name: string | null;
  state_binding: StateBinding | null;
  /** Who stored the state binding (null: none, or a run stored without its writer). */
  binding_by: string | null;
  status: ToolRunStatus;
  attempts: number;
  /** The interaction the run waits (or waited) for, when its tool asked (ask_user). */
  interaction_id: string | null;
  result: JsonValue;
  error: string | null;
  error_kind: string | null;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  expires_at: number | null;
  published: boolean;
}

const iso = z.string().describe("ISO-8601 UTC");

/** The record `GET /api/tool-runs/{run_id}` answers. */
export const ToolRunView = z
  .object({
    run_id: z.string(),
    tool_name: z.string(),
    arguments: JsonObject,
    status: ToolRunStatus,
    /** The tool's result once succeeded (null otherwise). */
    result: JsonValue,
    /** The interaction the run waits (`waiting`) or waited for, when its tool asked ask_user (docs/interactions.md). */
    interaction_id: z.string().nullable(),
    /** Why it failed (null otherwise). A denied run's reason is for admins: others read a fixed text. */
    error: z.string().nullable(),
    /** The failure's class: the dispatcher's (`denied`, `unknown_tool`, `invalid_kwargs`, `timeout`, `transport`, `http_status`, `non_json`, `tool_error`), `state_binding` or `interrupted`. */
    error_kind: z.string().nullable(),
    attempts: z.number().int(),
    /** The user_id the run executes as (its execution key). */
    caller: z.string(),
    origin: ToolRunOrigin,
    schedule_name: z.string().nullable(),
    slot_at: iso.nullable(),
    /** The hook whose fire started it (origin `hook`). */
    hook_name: z.string().nullable(),
    /** Whether the run reads and writes bound states (a hook's or schedule's state_binding). */
    state_bound: z.boolean(),
    created_at: iso,
    started_at: iso.nullable(),
    finished_at: iso.nullable(),
    expires_at: iso.nullable(),
    /** The run's trace in the runs index (`GET /api/runs`): the run id. */
    trace_id: z.string(),
  })
  .strict();
export type ToolRunView = z.infer<typeof ToolRunView>;

/** One row of `GET /api/tool-runs` (the D1 index: no arguments, no result). */
export const ToolRunListItem = z
  .object({
    run_id: z.string(),
    tool_name: z.string(),
    status: ToolRunStatus,
    error_kind: z.string().nullable(),
    caller: z.string(),
    origin: ToolRunOrigin,
    schedule_name: z.string().nullable(),
    hook_name: z.string().nullable(),
    created_at: iso,
    finished_at: iso.nullable(),
  })
  .strict();
export type ToolRunListItem = z.infer<typeof ToolRunListItem>;

/** What a non-admin reads in place of a denied run's reason (spec §5.4: client-safe, detail for admins). */
export const DENIED_TEXT = "the run was denied: its execution key may not run this tool now";

const isoOf = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** The row as its view; `admin` false replaces a denied run's reason with the fixed text. */
export function toolRunView(row: ToolRunRecord, admin: boolean): ToolRunView {
  const error = row.error_kind === "denied" && !admin ? DENIED_TEXT : row.error;
  return {
    run_id: row.run_id,
    tool_name: row.tool_name,
    arguments: row.arguments,
    status: row.status,
    result: row.status === "succeeded" ? row.result : null,
    interaction_id: row.interaction_id,
    error,
    error_kind: row.error_kind,
    attempts: row.attempts,
    caller: row.caller_user_id,
    origin: row.origin,
    schedule_name: row.schedule_name,
    slot_at: isoOf(row.slot_at),
    hook_name: row.hook_name,
    state_bound: row.state_binding !== null,
    created_at: new Date(row.created_at).toISOString(),
    started_at: isoOf(row.started_at),
    finished_at: isoOf(row.finished_at),
    expires_at: isoOf(row.expires_at),
    trace_id: row.run_id,
  };
}

/** A run id: a UUID (v4 as minted, any version accepted; lower-case). */
export const RunId = z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/, { message: "must be a lower-case UUID" });

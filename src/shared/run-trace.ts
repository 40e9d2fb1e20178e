/**
 * Run traces: THE one definition of a run's trace. Import `RunTrace` (schema and type)
 * from here and record through `recordRun(env, trace, waitUntil?)` from src/observability/runs/recorder.ts;
 * nothing else is needed to record a run. docs/observability.md describes the whole design.
 *
 * What counts as a run: each bridge turn (recorded by its thread object where the turn settles,
 * not through `recordRun`), each agent run, each tool run (direct, background, scheduled) and each
 * hook fire. A run records one trace: who and what (kind, trigger, target, route and thread where
 * there is one, the attributed user and the calling principal), when and how long, the outcome,
 * the admin-only error detail, and the steps (tool calls and LLM calls with their timings). The
 * steps of code that dispatches tools or calls models are collected for you by
 * `collectRunSteps` (src/shared/run-steps.ts): wrap the run in it and put its `steps` in the trace.
 *
 * Where a trace lives: a turn's in its thread object (retention and forget act on it with the
 * thread's records); any other run's in the IndexShard its trace id hashes to (kept for
 * `RUNS_TRACE_RETENTION_SECONDS`). Only a summary row, without inputs, outputs or error text,
 * reaches D1 (`runs`), batched by the shards like the thread listing: no D1 statement per run.
 */
import { z } from "zod";
import { TargetKind } from "./kinds";
import { JsonValue } from "../platform/http/bounded-json";

/** The kinds of run. */
export const RUN_KINDS = ["turn", "agent_run", "tool_run", "hook_fire"] as const;
export type RunKind = (typeof RUN_KINDS)[number];

/**
 * What started the run: a turn's door (`api`, `channel`, `event`), a synchronous door (`direct`:
 * `POST /api/run-tool`, an agent run door), a background tool run (`background`), a schedule's
 * fire (`schedule`) or a hook (`hook`).
 */
export const RUN_TRIGGERS = ["api", "channel", "event", "direct", "background", "schedule", "hook"] as const;
export type RunTrigger = (typeof RUN_TRIGGERS)[number];

/**
 * How a run ended: `ok` (an answer or a result), `error` (failed), `silent` (ran, answered
 * nothing: a silent reply or manual mode), `denied` (the execution key may not run the target),
 * `timeout` (the target or its endpoint did not answer in time).
 */
export const RUN_OUTCOMES = ["ok", "error", "silent", "denied", "timeout"] as const;
export type RunOutcome = (typeof RUN_OUTCOMES)[number];

/** The kinds of step: a tool dispatch, a model call, an http agent's endpoint call. */
export const STEP_KINDS = ["tool", "llm", "agent_endpoint"] as const;
export type StepKind = (typeof STEP_KINDS)[number];

/** How a step ended (a step is never `silent`). */
export const STEP_OUTCOMES = ["ok", "error", "denied", "timeout"] as const;
export type StepOutcome = (typeof STEP_OUTCOMES)[number];

/** Most steps one trace keeps; a longer run keeps its first ones and says so (`steps_dropped`). */
export const MAX_TRACE_STEPS = 100;

/** Longest error detail kept (a step's or the run's); longer text is cut. */
export const MAX_ERROR_CHARS = 2000;

/** An ISO 8601 instant as `Date.prototype.toISOString` writes it. */
const Instant = z.iso.datetime({ offset: true });

/** One step of a run. `error` is admin-only detail (never shown to other callers). */
export const RunStep = z
  .object({
    kind: z.enum(STEP_KINDS),
    /** The tool's name, the model's name, or the agent's name. */
    name: z.string().min(1).max(200),
    started_at: Instant,
    duration_ms: z.number().int().min(0),
    outcome: z.enum(STEP_OUTCOMES),
    error: z.string().max(MAX_ERROR_CHARS).nullable(),
  })
  .strict();
export type RunStep = z.infer<typeof RunStep>;

/** What the run ran. `version` is a preset's version where known (the `version` filter of GET /api/runs). */
export const RunTarget = z
  .object({
    kind: TargetKind,
    name: z.string().min(1).max(200),
    version: z.string().max(100).nullable(),
  })
  .strict();
export type RunTarget = z.infer<typeof RunTarget>;

/** One run's trace. See the module comment; docs/observability.md lists what each field is for. */
export const RunTrace = z
  .object({
    /** A uuid (`newTraceId()`); a turn's trace id is its message id. */
    trace_id: z.string().min(1).max(200),
    kind: z.enum(RUN_KINDS),
    trigger: z.enum(RUN_TRIGGERS),
    target: RunTarget,
    route_name: z.string().max(200).nullable(),
    /** The thread (the `session` filter); null outside the bridge. */
    thread_id: z.string().max(1000).nullable(),
    /** The interaction the run served (a turn's message id; a tool run's run id; the `interaction` filter). */
    interaction_id: z.string().max(200).nullable(),
    /**
     * The user the run is attributed to (spec §4.6): a linked person's `person_id`, otherwise the
     * door address; outside the bridge, the calling key's user_id. A person erase removes the
     * runs attributed to the person.
     */
    user_id: z.string().max(1000).nullable(),
    /** The calling key's user_id (the api door's caller, a tool run's submitter); a restricted caller sees only its own. */
    principal: z.string().max(200).nullable(),
    started_at: Instant,
    duration_ms: z.number().int().min(0),
    outcome: z.enum(RUN_OUTCOMES),
    /** Admin-only detail of a failed run. */
    error: z.string().max(MAX_ERROR_CHARS).nullable(),
    steps: z.array(RunStep).max(MAX_TRACE_STEPS),
    /** Steps the run took beyond MAX_TRACE_STEPS (not kept). */
    steps_dropped: z.number().int().min(0).default(0),
    /** The run's input and output, bounded by the recorder (an oversized value is replaced by a marker). */
    input: JsonValue.nullable(),
    output: JsonValue.nullable(),
    /**
     * A turn's answer as its customer rated it (docs/inbox.md, "Answer feedback"), read from the
     * record beside the trace like input and output; absent while unrated and on other runs.
     */
    feedback: z
      .object({ rating: z.enum(["up", "down"]), at: Instant })
      .strict()
      .optional(),
  })
  .strict();
export type RunTrace = z.infer<typeof RunTrace>;
/** A trace as a caller builds it (`steps_dropped` may be omitted). */
export type RunTraceInput = z.input<typeof RunTrace>;

/** A fresh trace id. */
export function newTraceId(): string {
  return crypto.randomUUID();
}

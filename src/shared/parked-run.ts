/**
 * A run parked on `ask_user` (docs/interactions.md "Parking and resuming"): what it needs
 * to go on once the question is answered, cancelled or expired. It is stored in the interaction's
 * object and never shown by a door.
 *
 * - `llm`: an llm agent's tool-calling loop, stopped right after the step whose tool calls included
 *   `ask_user`: the run's own messages so far (`fresh`: the user message, each assistant message
 *   with its tool calls and the tool results before the ask), the ask's call id, the calls of that
 *   step after it (never run: each is answered with a fixed "not run" result on resume), and the
 *   model calls spent (the resumed loop keeps counting against `max_steps`).
 * - `tool_turn`: a bridge tool turn whose target is `ask_user` (or a preset over it): the resumed
 *   turn maps the interaction's outcome through the route's `reply_expr`.
 * - `tool_run`: a background tool run (the door, a schedule's or a hook's fire) whose tool is
 *   `ask_user` or a preset over it: its ToolRun object waits, and the outcome becomes its result.
 */
import { z } from "zod";
import { CheckpointMessage } from "./agent-memory";

/** The key a parked run acts as again when it resumes (re-read live, like any run). */
export const ParkedKey = z.object({ user_id: z.string(), fingerprint: z.string() }).strict();
export type ParkedKey = z.infer<typeof ParkedKey>;

export const ParkedLlmRun = z
  .object({
    kind: z.literal("llm"),
    agent: z.string(),
    /** The memory thread the run appends to when it ends. */
    thread_id: z.string(),
    user_message: z.string(),
    fresh: z.array(CheckpointMessage),
    /** The `ask_user` call the answer becomes the result of. */
    call_id: z.string(),
    /** Calls of the same step after the ask, not run. */
    skipped: z.array(z.object({ call_id: z.string(), tool: z.string() }).strict()),
    steps_used: z.number().int().min(0),
    as_key: ParkedKey.nullable(),
  })
  .strict();
export type ParkedLlmRun = z.infer<typeof ParkedLlmRun>;

export const ParkedToolTurn = z
  .object({
    kind: z.literal("tool_turn"),
    tool: z.string(),
  })
  .strict();
export type ParkedToolTurn = z.infer<typeof ParkedToolTurn>;

export const ParkedToolRun = z
  .object({
    kind: z.literal("tool_run"),
    run_id: z.string(),
  })
  .strict();
export type ParkedToolRun = z.infer<typeof ParkedToolRun>;

export const ParkedRun = z.discriminatedUnion("kind", [ParkedLlmRun, ParkedToolTurn, ParkedToolRun]);
export type ParkedRun = z.infer<typeof ParkedRun>;

/** The result a skipped call of the ask's step gets on resume (the model may call it again). */
export const SKIPPED_CALL_RESULT = "not run: the run paused for ask_user before this call; call it again if it is still needed";

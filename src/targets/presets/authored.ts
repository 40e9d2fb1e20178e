/**
 * Authored agents (platform facts B2): a preset whose `base_tool` names a spec-runnable
 * agent instead of a tool. Its `fixed_kwargs` bake part of the agent's run input, and
 * `POST /api/agents/authored/{name}/runs` streams a run of the agent with the baked fields plus the
 * request's (which may not repeat one). Pure rules here; the doors read D1.
 *
 * In this build an agent's run input is `{user_message, thread_id?}` (the runs door's body), so an
 * authored agent bakes a fixed prompt, a fixed memory thread, or both. An agent's run tool is
 * named by the agent's own name; where a tool has that name too, the tool wins (a preset over it
 * is a tool preset), so such an agent is not spec-runnable.
 */
import { z } from "zod";
import { badRequest } from "../../platform/http/errors";
import { parseOr400 } from "../../platform/http/validation";
import type { PresetBody } from "./model";

/** A caller-chosen thread id: printable, no spaces; `bridge:` ids belong to the bridge. */
export const runThreadId = z
  .string()
  .regex(/^[\x21-\x7e]{1,256}$/, { message: "must be 1-256 printable characters without spaces" })
  .refine((id) => !id.startsWith("bridge:"), { message: "ids starting bridge: belong to the conversation bridge" });

export const userMessage = z.string().min(1).max(100_000);

/** The agent run input fields, each optional: what an authored agent bakes and what its run request adds. */
export const AgentRunFields = z.object({ user_message: userMessage.optional(), thread_id: runThreadId.optional() }).strict();
export type AgentRunFields = z.infer<typeof AgentRunFields>;

/**
 * Checks the body of a preset over an agent: `fixed_kwargs` are agent run fields (400 naming the
 * field otherwise); the tool-only parts (schemas, state binding, extensions) are refused, because
 * an authored agent runs through the agents door, not as a tool call.
 */
export function checkAuthoredBody(body: PresetBody): void {
  parseOr400(z.object({ fixed_kwargs: AgentRunFields }), { fixed_kwargs: body.fixed_kwargs }, "body");
  for (const field of ["input_schema", "output_schema", "state_binding"] as const) {
    if (body[field] !== null) throw badRequest(`invalid body: ${field}: an authored agent (a preset over an agent) takes none`);
  }
  if (body.extensions.length) throw badRequest("invalid body: extensions: an authored agent (a preset over an agent) takes none; extensions wrap tool calls");
}

/**
 * The run input of an authored agent: the baked fields with the request's beside them. A request
 * field that is baked is 400 (never a silent override either way); `user_message` must come from
 * one of the two. Pure.
 */
export function authoredRunInput(baked: AgentRunFields, request: AgentRunFields): { user_message: string; thread_id: string | null } {
  const repeated = (Object.keys(request) as Array<keyof AgentRunFields>).filter((k) => request[k] !== undefined && baked[k] !== undefined).sort();
  if (repeated.length) throw badRequest(`invalid body: ${repeated[0]}: cannot override a field baked into this authored agent`);
  const merged = { ...request, ...baked };
  if (merged.user_message === undefined) throw badRequest("invalid body: user_message: required (this authored agent does not bake it)");
  return { user_message: merged.user_message, thread_id: merged.thread_id ?? null };
}

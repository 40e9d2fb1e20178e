/** Agent doors (decisions §4): list, declarations, and the streamed run. */
import { Hono } from "hono";
import { z } from "zod";
import { principalGrantsRun } from "../auth/principal";
import type { AppEnv } from "../http/app-env";
import { forbidden, notFound } from "../http/errors";
import { addRoute } from "../http/route";
import { agentDeclarationSchema, agentView, agentViewSchema, checkAgentDeclaration, deleteDeclaredAgent, upsertDeclaredAgent } from "../targets/agents/declarations";
import { agentExists, listAgents } from "../targets/agents/run";
import { streamAgentRun } from "../targets/agents/sse";
import { createTargetContext } from "../targets/dispatch";
import { targetNameSchema } from "../targets/names";

export const agentsRouter = new Hono<AppEnv>();

const agentSummary = z.object({
  name: z.string(),
  description: z.string(),
  kind: z.enum(["builtin", "llm", "http"]),
  input_schema: z.record(z.string(), z.unknown()),
});

/** A caller-chosen thread id: printable, no spaces; `bridge:` ids belong to the bridge. */
const runThreadId = z
  .string()
  .regex(/^[\x21-\x7e]{1,256}$/, { message: "must be 1-256 printable characters without spaces" })
  .refine((id) => !id.startsWith("bridge:"), { message: "ids starting bridge: belong to the conversation bridge" });

addRoute(
  agentsRouter,
  {
    method: "get",
    path: "/api/agents",
    summary: "List every registered agent (built-in and declared)",
    area: "agents",
    auth: { tag: "agents" },
    response: z.object({ items: z.array(agentSummary), total: z.number().int() }),
  },
  async (c) => {
    const items = await listAgents(c.env.DB);
    return { items, total: items.length };
  },
);

addRoute(
  agentsRouter,
  {
    method: "post",
    path: "/api/agents-config/entries",
    summary: "Declare (create or replace) an llm or http agent (admin)",
    description:
      "kind llm: {base_url, model, api_key?: {env}, system_prompt?, tool_names?, max_steps?, timeout_seconds?, memory_window?, temperature?}. kind http: {url, headers?, timeout_seconds?}. A built-in agent's name is 409. Admin only, because a declaration can send env secrets to any URL. `base_url`/`url` pass the outbound address guard (private and local hosts are 400 unless OUTBOUND_ALLOW_PRIVATE_HOSTS=true); env references must name SECRET_* or a SECRET_REFERENCE_ALLOWLIST entry (else 400).",
    area: "agents",
    auth: { tag: "agents", admin: true },
    body: agentDeclarationSchema,
    response: z.object({ created: z.boolean(), agent: agentViewSchema }),
    errors: [409],
  },
  async (c, { body }) => {
    checkAgentDeclaration(body, c.get("settings"), c.env);
    const { created, agent } = await upsertDeclaredAgent(c.env.DB, body, new Date().toISOString());
    return { created, agent: agentView(agent) };
  },
);

addRoute(
  agentsRouter,
  {
    method: "delete",
    path: "/api/agents-config/entries/{title}",
    summary: "Remove a declared agent (admin)",
    area: "agents",
    auth: { tag: "agents", admin: true },
    params: z.object({ title: targetNameSchema }),
    response: z.object({ removed: z.literal(true), title: z.string() }),
    errors: [404, 409],
  },
  async (c, { params }) => {
    await deleteDeclaredAgent(c.env.DB, params.title);
    return { removed: true as const, title: params.title };
  },
);

addRoute(
  agentsRouter,
  {
    method: "post",
    path: "/api/agents/{name}/runs",
    summary: "Run an agent as the caller's own key, streamed as server-sent events",
    description:
      "Needs agents:read plus a run grant for the agent (agent:<name>, agents:write or *). Frames are `data: <json>` with `type` message_delta, tool_call_step, tool_result_step, message_final, then stream.end; a run that calls ask_user ends with suspended_final {interaction_ids, thread_id, expiry_at} before stream.end (docs/interactions.md); a failed run ends with stream.error {message}. `: keepalive` comments every 15 s. Without thread_id the run gets a fresh thread, returned in the X-Thread-Id header.",
    area: "agents",
    auth: { tag: "agents", action: "read" },
    params: z.object({ name: targetNameSchema }),
    body: z.object({ user_message: z.string().min(1).max(100_000), thread_id: runThreadId.optional() }).strict(),
    produces: "text/event-stream",
    errors: [404],
  },
  async (c, { params, body }) => {
    const p = c.get("principal")!;
    // Authorization comes before the lookup, so a caller without the grant learns nothing.
    if (!principalGrantsRun(p, "agent", params.name)) throw forbidden();
    const ctx = createTargetContext(c.env, c.get("settings"));
    if (!(await agentExists(ctx, params.name))) throw notFound("agent not found");
    const threadId = body.thread_id ?? crypto.randomUUID();
    return streamAgentRun(ctx, params.name, { thread_id: threadId, user_message: body.user_message }, {
      asKey: { user_id: p.key.user_id, fingerprint: p.key.key_fingerprint },
      waitUntil: (promise) => c.executionCtx.waitUntil(promise),
      headers: { "x-thread-id": threadId },
    });
  },
);

/** Agent doors (decisions §4): list, declarations, and the streamed run. */
import { Hono } from "hono";
import { z } from "zod";
import { principalGrantsRun } from "../../access-control/principal";
import { keyStillAllows, presentedKeyHash } from "../../access-control/live-key";
import type { Context } from "hono";
import type { AppEnv } from "../../platform/http/app-env";
import { badRequest, forbidden, notFound } from "../../platform/http/errors";
import { addRoute } from "../../platform/http/route";
import { waitUntilOf } from "../../platform/http/wait-until";
import { listApiTools } from "../tools/api-tool-store";
import { BUILTIN_TOOLS } from "../tools/builtins";
import { listHttpTools } from "../tools/http-tools";
import { agentDeclarationSchema, agentView, agentViewSchema, checkAgentDeclaration, deleteDeclaredAgent, upsertDeclaredAgent } from "../agents/declarations";
import { agentExists, listAgents } from "../agents/run";
import { streamAgentRun } from "../agents/sse";
import { createTargetContext } from "../dispatch";
import { targetNameSchema } from "../../shared/target-names";
import { AgentRunFields, authoredRunInput, runThreadId, userMessage } from "../presets/authored";
import { getPreset } from "../presets/store";
import { resolveBaseTool } from "../tools/registry";

export const agentsRouter = new Hono<AppEnv>();

/**
 * The check a streamed run makes before each push: the calling key still exists, is enabled, and
 * still holds agents:read on this door and the run grant for `name`.
 */
async function liveRunCheck(c: Context<AppEnv>, path: string, name: string): Promise<() => Promise<boolean>> {
  const keyHash = (await presentedKeyHash(c.req.raw.headers)) ?? "";
  const door = { need: { tag: "agents", action: "read" as const }, request: { method: "POST", path }, run: { kind: "agent" as const, name } };
  return () => keyStillAllows(c.env, keyHash, door);
}

const agentSummary = z.object({
  name: z.string(),
  description: z.string(),
  kind: z.enum(["builtin", "llm", "http"]),
  input_schema: z.record(z.string(), z.unknown()),
  /** The agent's run tool as a preset's base_tool names it (the agent's name); null when a tool has that name. */
  tool_name: z.string().nullable(),
  /** Whether an authored agent may stand on it (platform facts B2): declared agents whose name no tool has. */
  spec_runnable: z.boolean(),
});
type AgentListItem = z.infer<typeof agentSummary>;

/**
 * Every agent with its run tool and spec-runnable flag. A declared agent is spec-runnable (a preset
 * may bake its run fields) unless a tool has its name: a preset's base_tool names the tool then. The
 * built-in echo is code, and its name is the echo tool's, so it is not.
 */
async function agentItems(db: D1Database): Promise<AgentListItem[]> {
  // Three reads whatever the count (not one tool lookup per agent). Agent names hold no dot, so no
  // MCP tool can take one.
  const [agents, https, apis] = await Promise.all([listAgents(db), listHttpTools(db), listApiTools(db)]);
  const tools = new Set([...BUILTIN_TOOLS.keys(), ...https.map((t) => t.title), ...apis.map((t) => t.title)]);
  return agents.map((a) => {
    const authorable = a.kind !== "builtin" && !tools.has(a.name);
    return { ...a, tool_name: authorable ? a.name : null, spec_runnable: authorable };
  });
}

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
    const items = await agentItems(c.env.DB);
    return { items, total: items.length };
  },
);

addRoute(
  agentsRouter,
  {
    method: "get",
    path: "/api/agents/spec-runnable",
    summary: "List the spec-runnable agents (what an authored agent may stand on)",
    description:
      "The items of GET /api/agents whose spec_runnable is true: declared llm and http agents whose name no tool has. A preset whose base_tool names one is an authored agent (POST /api/agents/authored/{name}/runs). An empty list means no agent can be authored.",
    area: "agents",
    auth: { tag: "agents" },
    response: z.object({ items: z.array(agentSummary), total: z.number().int() }),
  },
  async (c) => {
    const items = (await agentItems(c.env.DB)).filter((a) => a.spec_runnable);
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
    stores: [
      { kind: "url", at: "config.url" },
      { kind: "url", at: "config.base_url" },
    ],
    body: agentDeclarationSchema,
    response: z.object({ created: z.boolean(), agent: agentViewSchema }),
    errors: [409],
  },
  async (c, { body }) => {
    const settings = c.get("settings");
    checkAgentDeclaration(body, settings, c.env);
    const { created, agent } = await upsertDeclaredAgent(c.env.DB, body, new Date().toISOString(), settings.connectors.providers);
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
    links: "mint",
    summary: "Run an agent as the caller's own key, streamed as server-sent events",
    description:
      "Needs agents:read plus a run grant for the agent (agent:<name>, agents:write or *). Frames are `data: <json>` with `type` message_delta, tool_call_step, tool_result_step, message_final, then stream.end, each written as the run makes it; message_delta is a chunk of the answer to append, sent as the model streams it (one chunk when the endpoint does not stream), and the chunks since the last tool_call_step join into message_final's text; a run that calls ask_user ends with suspended_final {interaction_ids, thread_id, expiry_at} before stream.end (docs/interactions.md); a failed run ends with stream.error {message}. `: keepalive` comments every 15 s. Without thread_id the run gets a fresh thread, returned in the X-Thread-Id header. The key is checked again before every push: once it is revoked, disabled or loses the grant, nothing more is sent and the stream ends (the run itself finishes and stores its memory).",
    area: "agents",
    auth: { tag: "agents", action: "read" },
    params: z.object({ name: targetNameSchema }),
    body: z.object({ user_message: userMessage, thread_id: runThreadId.optional() }).strict(),
    produces: "text/event-stream",
    live: "sse",
    errors: [404],
  },
  async (c, { params, body, principal: p }) => {
    // Authorization comes before the lookup, so a caller without the grant learns nothing.
    if (!principalGrantsRun(p, "agent", params.name)) throw forbidden();
    const ctx = createTargetContext(c.env, c.get("settings"));
    if (!(await agentExists(ctx, params.name))) throw notFound("agent not found");
    const threadId = body.thread_id ?? crypto.randomUUID();
    const stillAllowed = await liveRunCheck(c, `/api/agents/${params.name}/runs`, params.name);
    return streamAgentRun(
      ctx,
      params.name,
      { thread_id: threadId, user_message: body.user_message },
      {
        asKey: { user_id: p.key.user_id, fingerprint: p.key.key_fingerprint },
        waitUntil: waitUntilOf(c),
        stillAllowed,
        headers: { "x-thread-id": threadId },
      },
    );
  },
);

addRoute(
  agentsRouter,
  {
    method: "post",
    path: "/api/agents/authored/{name}/runs",
    links: "mint",
    summary: "Run an authored agent (a preset over an agent) as the caller's own key, streamed",
    description:
      "`name` is a preset whose base_tool names a declared agent (GET /api/agents/spec-runnable). The body gives the agent run fields the preset does not bake (`user_message`, `thread_id`); naming a baked field is 400, an unknown field 400, and user_message must come from one of the two. Needs agents:read and a run grant for the authored name (agent:<name>, agents:write or *), checked before any lookup; the run itself authorizes the base agent live as the key (agent:<base>), as the runs door does. Streamed exactly like POST /api/agents/{name}/runs; X-Thread-Id names the thread, X-Authored-Version the preset version run; like that door, the stream ends with nothing more sent once the key is revoked or loses the grant. Unknown preset 404; a preset over a tool 400; a base agent removed since 404.",
    area: "agents",
    auth: { tag: "agents", action: "read" },
    params: z.object({ name: targetNameSchema }),
    body: AgentRunFields,
    produces: "text/event-stream",
    live: "sse",
    errors: [404],
  },
  async (c, { params, body, principal: p }) => {
    // Authorization comes before the lookup, so a caller without the grant learns nothing.
    if (!principalGrantsRun(p, "agent", params.name)) throw forbidden();
    const preset = await getPreset(c.env.DB, params.name);
    if (!preset) throw notFound("authored agent not found");
    const ctx = createTargetContext(c.env, c.get("settings"));
    if (await resolveBaseTool(c.env.DB, preset.base_tool)) throw badRequest("the preset stands on a tool, not an agent: run it with POST /api/run-tool");
    if (!(await agentExists(ctx, preset.base_tool))) throw notFound("the authored agent's base agent is not registered");
    const baked = AgentRunFields.safeParse(preset.fixed_kwargs);
    // The preset door checks the baked fields when it writes; a body that no longer reads so is stale.
    if (!baked.success) throw badRequest("the preset's fixed_kwargs are not agent run fields");
    const input = authoredRunInput(baked.data, body);
    const threadId = input.thread_id ?? crypto.randomUUID();
    const stillAllowed = await liveRunCheck(c, `/api/agents/authored/${params.name}/runs`, params.name);
    return streamAgentRun(
      ctx,
      preset.base_tool,
      { thread_id: threadId, user_message: input.user_message },
      {
        asKey: { user_id: p.key.user_id, fingerprint: p.key.key_fingerprint },
        waitUntil: waitUntilOf(c),
        stillAllowed,
        headers: { "x-thread-id": threadId, "x-authored-version": String(preset.current_version) },
      },
    );
  },
);

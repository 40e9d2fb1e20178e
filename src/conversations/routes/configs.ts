/**
 * Target conversation configs (spec §2.5, §4.8; decisions §12): list, read, create-or-replace and
 * delete, keyed by (target_kind, target_name). Tagged `conversations`: reads need the read grant,
 * writes the write grant; 501 `conversations-not-configured` without a store.
 */
import { Hono } from "hono";
import { z } from "zod";
import type { AppEnv } from "../../platform/http/app-env";
import { HttpError, badRequest, notConfigured } from "../../platform/http/errors";
import { addRoute } from "../../platform/http/route";
import { ConfigTargetKind, ConfigTargetName, TargetConversationConfig, deleteConfig, getConfig, listConfigs, putConfig } from "../../persons/target-configs";
import { checkBindingForSave } from "../../states/binding-save";
import { assertMayBind } from "../../states/binding-refs";
import { storedByOf } from "../../access-control/stored-by";
import { multichannelRefusal } from "../../persons/link-authority";
import { agentExists } from "../../targets/agents/run";
import { createTargetContext } from "../../targets/context";
import { toolExists } from "../../targets/dispatch";

export const conversationConfigsRouter = new Hono<AppEnv>();

const configParams = z.object({ target_kind: ConfigTargetKind, target_name: ConfigTargetName });
const notFound = () => new HttpError(404, "conversation config not found");

addRoute(
  conversationConfigsRouter,
  {
    method: "get",
    path: "/api/conversation-configs",
    summary: "List target conversation configs",
    area: "conversations",
    auth: { tag: "conversations" },
    store: "conversations",
    response: z.object({ items: z.array(TargetConversationConfig), total: z.number().int() }),
  },
  async (c) => {
    const items = await listConfigs(c.env.DB);
    return { items, total: items.length };
  },
);

addRoute(
  conversationConfigsRouter,
  {
    method: "get",
    path: "/api/conversation-configs/{target_kind}/{target_name}",
    summary: "Read one target's conversation config",
    description: "400 when target_kind is not agent or tool, or target_name is blank; 404 when the target has no config.",
    area: "conversations",
    auth: { tag: "conversations" },
    store: "conversations",
    params: configParams,
    response: TargetConversationConfig,
    errors: [404],
  },
  async (c, { params }) => {
    const config = await getConfig(c.env.DB, params.target_kind, params.target_name);
    if (!config) throw notFound();
    return config;
  },
);

addRoute(
  conversationConfigsRouter,
  {
    method: "put",
    path: "/api/conversation-configs/{target_kind}/{target_name}",
    summary: "Create or replace a target's conversation config",
    description:
      "The body is the whole TargetConversationConfig (extra fields 400); its target_kind and target_name must equal the path's. The target must exist (404). `multichannel: true` (which turns pairing on) needs the caller to hold the grant to run the target, as writing a route to it does (403 naming multichannel otherwise). greeting_template may reference only {pairing_code} ('{{' and '}}' are literal braces); an unknown placeholder, '{}', a conversion or format spec, unbalanced braces or a blank template is 400, and null means no greeting. state_binding is accepted only on tool targets; every state it names must be declared (404), its `templates` are attached on use at the root path, each template_jq must name a program of the right purpose among the state's attachments (404 when none), and every TemplatedText must compile as jq. Nothing is stored on a refusal.",
    area: "conversations",
    auth: { tag: "conversations" },
    stores: [{ kind: "state", at: "state_binding.states[].state" }],
    store: "conversations",
    params: configParams,
    body: TargetConversationConfig,
    response: z.object({ created: z.boolean(), target_kind: ConfigTargetKind, target_name: z.string(), config: TargetConversationConfig }),
    errors: [404],
  },
  async (c, { params, body, principal }) => {
    if (body.target_kind !== params.target_kind) throw badRequest("invalid body: target_kind: must equal the path's target_kind");
    if (body.target_name !== params.target_name) throw badRequest("invalid body: target_name: must equal the path's target_name");
    const ctx = createTargetContext(c.env, c.get("settings"));
    const exists = body.target_kind === "tool" ? await toolExists(ctx, body.target_name) : await agentExists(ctx, body.target_name);
    if (!exists) throw new HttpError(404, `${body.target_kind} not found`);
    // Multichannel turns pairing on: codes then link the target's conversations, which is as
    // strong as writing a route to it (docs/security.md, "Link authority").
    if (body.multichannel && !principal.admin && (principal.anonymous || multichannelRefusal(principal, { kind: body.target_kind, name: body.target_name }))) {
      throw new HttpError(403, "multichannel: turning pairing on needs the grant to run the target (tool:<name> or agent:<name>, tools or agents write)");
    }
    // The binding runs later under the routes' execution keys: bounded by the writer's own states grants.
    assertMayBind(principal, body.state_binding);
    // A binding is checked (and its templates attached on use) before the config is stored.
    if (body.state_binding) {
      if (!c.get("settings").states.storeUrl) throw notConfigured("states", "a state_binding needs the states store (set STATES_STORE_URL)");
      await checkBindingForSave(c.env, body.state_binding, Date.now());
    }
    const created = await putConfig(c.env.DB, body, new Date().toISOString(), storedByOf(principal));
    return { created, target_kind: body.target_kind, target_name: body.target_name, config: body };
  },
);

addRoute(
  conversationConfigsRouter,
  {
    method: "delete",
    path: "/api/conversation-configs/{target_kind}/{target_name}",
    summary: "Delete a target's conversation config",
    area: "conversations",
    auth: { tag: "conversations" },
    store: "conversations",
    params: configParams,
    response: z.object({ removed: z.literal(true), target_kind: ConfigTargetKind, target_name: z.string() }),
    errors: [404],
  },
  async (c, { params }) => {
    if (!(await deleteConfig(c.env.DB, params.target_kind, params.target_name))) throw notFound();
    return { removed: true as const, target_kind: params.target_kind, target_name: params.target_name };
  },
);

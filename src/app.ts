/** Composes the Worker's Hono app: settings gate, one router per area, the error contract. */
import { Hono } from "hono";
import type { AppEnv } from "./http/app-env";
import { HttpError } from "./http/errors";
import { methodsForPath } from "./http/route";
import { waitUntilOf } from "./http/wait-until";
import { requestSettings } from "./config/isolate-settings";
import { setJqBudget } from "./jq/engine";
import { authRouter } from "./routers/auth";
import { conversationMessagesRouter } from "./routers/conversation-messages";
import { conversationEventsRouter } from "./routers/conversation-events";
import { conversationModeRouter } from "./routers/conversation-mode";
import { conversationThreadsRouter } from "./routers/conversation-threads";
import { conversationRoutesRouter } from "./routers/conversation-routes";
import { channelsRouter } from "./routers/channels";
import { channelWebhooksRouter } from "./routers/channel-webhooks";
import { healthRouter } from "./routers/health";
import { openapiRouter } from "./routers/openapi";
import { resourcesRouter } from "./routers/resources";
import { toolsRouter } from "./routers/tools";
import { agentsRouter } from "./routers/agents";
import { presetsRouter } from "./routers/presets";
import { checkpointsRouter } from "./routers/checkpoints";
import { conversationConfigsRouter } from "./routers/conversation-configs";
import { stateAttachmentsRouter } from "./routers/state-attachments";
import { statePendingSavesRouter } from "./routers/state-pending-saves";
import { stateRecordsRouter } from "./routers/state-records";
import { statesRouter } from "./routers/states";
import { stateTemplatesRouter } from "./routers/state-templates";
import { conversationPersonsRouter } from "./routers/conversation-persons";
import { notificationsRouter } from "./routers/notifications";
import { connectorsRouter } from "./routers/connectors";
import { marketplaceRouter } from "./routers/marketplace";
import { accessControlRouter } from "./routers/access-control";
import { loginRouter } from "./routers/login";
import { configRouter } from "./routers/config";
import { systemRouter } from "./routers/system";
import { backupRouter } from "./routers/backup";
import { toolRunsRouter } from "./routers/tool-runs";
import { schedulesRouter } from "./routers/schedules";
import { hooksRouter } from "./routers/hooks";
import { hookTriggersRouter } from "./routers/hook-triggers";
import { runsRouter } from "./routers/runs";
import { observabilityRouter } from "./routers/observability";
import { apiDocsRouter } from "./routers/api-docs";
import { consoleRouter } from "./routers/console";
import { interactionsRouter } from "./routers/interactions";
import { storageRouter } from "./routers/storage";
import { templatesRouter } from "./routers/templates";
import { toolMetaRouter } from "./routers/tool-meta";
import { pluginsRouter } from "./routers/plugins";
import { sandboxRouter } from "./routers/sandbox";
import { mcpConfigRouter } from "./routers/mcp-config";
import { mcpStatusRouter } from "./routers/mcp-status";
import { manifestRouter } from "./routers/manifest";
import { apiToolsRouter } from "./routers/api-tools";
import { subMcpRouter } from "./routers/sub-mcp";
import { extensionsRouter } from "./routers/extensions";

export function createApp(): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  // The settings: the env with the D1 overlay on top, cached per isolate (src/config/isolate-settings.ts;
  // docs/runtime-settings.md). Handlers see the merged env as `c.env`. An invalid combination makes
  // every request answer 500 naming the env vars (the /api/config/* doors then run on the env alone,
  // so the overlay can be repaired).
  app.use("*", async (c, next) => {
    const r = await requestSettings(c.env, c.req.path, waitUntilOf(c));
    if (!r.ok) {
      return c.json({ error: `invalid configuration: ${r.errors.join("; ")}`, code: "invalid-configuration" }, 500);
    }
    c.env = r.env as unknown as typeof c.env;
    c.set("settings", r.result.settings);
    setJqBudget(r.result.settings.jq);
    await next();
  });

  // The operator routers come before the message routes: `/messages/search` must not be taken
  // for a message id by `/messages/{message_id}` (Hono answers with the first registered match).
  for (const router of [
    healthRouter,
    openapiRouter,
    authRouter,
    resourcesRouter,
    channelsRouter,
    channelWebhooksRouter,
    toolsRouter,
    conversationThreadsRouter,
    conversationModeRouter,
    conversationEventsRouter,
    conversationMessagesRouter,
    conversationRoutesRouter,
    agentsRouter,
    presetsRouter,
    checkpointsRouter,
    conversationConfigsRouter,
    conversationPersonsRouter,
    statesRouter,
    stateRecordsRouter,
    stateAttachmentsRouter,
    stateTemplatesRouter,
    statePendingSavesRouter,
    notificationsRouter,
    connectorsRouter,
    marketplaceRouter,
    accessControlRouter,
    loginRouter,
    configRouter,
    systemRouter,
    backupRouter,
    toolRunsRouter,
    schedulesRouter,
    hooksRouter,
    hookTriggersRouter,
    runsRouter,
    observabilityRouter,
    interactionsRouter,
    storageRouter,
    templatesRouter,
    toolMetaRouter,
    pluginsRouter,
    sandboxRouter,
    mcpConfigRouter,
    mcpStatusRouter,
    manifestRouter,
    apiToolsRouter,
    subMcpRouter,
    extensionsRouter,
    apiDocsRouter,
    consoleRouter,
  ])
    app.route("/", router);

  app.notFound((c) => {
    const allowed = methodsForPath(c.req.path);
    if (allowed.length) {
      return c.json({ error: "method not allowed" }, 405, { Allow: allowed.join(", ") });
    }
    return c.json({ error: "not found" }, 404);
  });

  app.onError((err, c) => {
    if (err instanceof HttpError) {
      const body: Record<string, unknown> = { error: err.message, ...(err.extra ?? {}) };
      if (err.code) body.code = err.code;
      return c.json(body, err.status as 400, err.headers);
    }
    const errorId = crypto.randomUUID().replace(/-/g, "");
    console.error(`[${errorId}] unhandled error on ${c.req.method} ${c.req.path}:`, err);
    return c.json({ error: "Internal Server Error", error_id: errorId }, 500);
  });

  return app;
}

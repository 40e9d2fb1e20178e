/** Composes the Worker's Hono app: settings gate, one router per area, the error contract. */
import { type Context, Hono } from "hono";
import type { AppEnv } from "./platform/http/app-env";
import { HttpError, type ServerErrorCode, describeFailure, platformFailure, retryAfterHeader } from "./platform/http/errors";
import { methodsForPath, pathRegex, registry } from "./platform/http/route";
import { waitUntilOf } from "./platform/http/wait-until";
import { requestSettings } from "./config/isolate-settings";
import { setJqBudget } from "./platform/jq/engine";
import { authRouter } from "./access-control/routes/auth";
import { conversationMessagesRouter } from "./conversations/routes/messages";
import { conversationEventsRouter } from "./conversations/routes/events";
import { conversationModeRouter } from "./conversations/routes/mode";
import { conversationInboxRouter } from "./conversations/routes/inbox";
import { conversationNotesRouter } from "./conversations/routes/notes";
import { conversationThreadsRouter } from "./conversations/routes/threads";
import { conversationRoutesRouter } from "./conversations/routes/routes";
import { channelsRouter } from "./channels/routes/channels";
import { channelWebhooksRouter } from "./channels/routes/webhooks";
import { webConfigRouter } from "./web-chat/routes/config";
import { healthRouter } from "./system/routes/health";
import { openapiRouter } from "./system/routes/openapi";
import { resourcesRouter } from "./storage/routes/resources";
import { toolsRouter } from "./targets/routes/tools";
import { agentsRouter } from "./targets/routes/agents";
import { presetsRouter } from "./targets/routes/presets";
import { checkpointsRouter } from "./targets/routes/checkpoints";
import { conversationConfigsRouter } from "./conversations/routes/configs";
import { stateAttachmentsRouter } from "./states/routes/attachments";
import { statePendingSavesRouter } from "./states/routes/pending-saves";
import { stateRecordsRouter } from "./states/routes/records";
import { statesRouter } from "./states/routes/states";
import { stateTemplatesRouter } from "./states/routes/templates";
import { conversationPersonsRouter } from "./conversations/routes/persons";
import { notificationsRouter } from "./notifications/routes";
import { connectorsRouter } from "./connectors/routes";
import { marketplaceRouter } from "./marketplace/routes";
import { accessControlRouter } from "./access-control/routes/access-control";
import { loginRouter } from "./access-control/routes/login";
import { configRouter } from "./config/routes";
import { systemRouter } from "./system/routes/system";
import { backupRouter } from "./backup/routes";
import { toolRunsRouter } from "./tool-runs/routes";
import { schedulesRouter } from "./schedules/routes";
import { hooksRouter } from "./hooks/routes/hooks";
import { hookTriggersRouter } from "./hooks/routes/triggers";
import { runsRouter } from "./observability/routes/runs";
import { observabilityRouter } from "./observability/routes/observability";
import { apiDocsRouter } from "./system/routes/api-docs";
import { consoleRouter } from "./console/routes";
import { interactionsRouter } from "./interactions/routes";
import { storageRouter } from "./storage/routes/storage";
import { templatesRouter } from "./templates/routes";
import { toolMetaRouter } from "./tool-meta/routes";
import { pluginsRouter } from "./plugins/routes/plugins";
import { sandboxRouter } from "./plugins/routes/sandbox";
import { mcpConfigRouter } from "./mcp/routes/config";
import { mcpStatusRouter } from "./mcp/routes/status";
import { manifestRouter } from "./manifest/routes/manifest";
import { apiToolsRouter } from "./manifest/routes/api-tools";
import { subMcpRouter } from "./sub-mcp/routes";
import { extensionsRouter } from "./extensions/routes";
import { webChannelRouter } from "./web-chat/routes/visitor";
import { webAttachmentsRouter } from "./web-chat/routes/attachments";
import { inboxRouter } from "./inbox/routes";

export function createApp(): Hono<AppEnv> {
  const app = new Hono<AppEnv>();

  // The settings: the env with the D1 overlay on top, cached per isolate (src/config/isolate-settings.ts;
  // docs/runtime-settings.md). Handlers see the merged env as `c.env`. An invalid combination makes
  // every request answer 500 naming the env vars (the /api/config/* doors then run on the env alone,
  // so the overlay can be repaired).
  app.use("*", async (c, next) => {
    const r = await requestSettings(c.env, c.req.path, waitUntilOf(c));
    if (!r.ok) {
      logServerError(c, 500, "invalid-configuration", `invalid settings: ${r.errors.join("; ")}`);
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
    webConfigRouter,
    webChannelRouter,
    // After the visitor doors' router, whose Origin check runs before these doors read a body.
    webAttachmentsRouter,
    toolsRouter,
    conversationThreadsRouter,
    conversationModeRouter,
    conversationInboxRouter,
    conversationNotesRouter,
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
    inboxRouter,
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

  // Every 5xx is logged here, once, with its code and reason (docs/operations.md, "Every 5xx and
  // its cause"); the sites that answer one give the reason and log nothing themselves.
  app.onError((err, c) => {
    if (err instanceof HttpError) {
      const body: Record<string, unknown> = { error: err.message, ...(err.extra ?? {}) };
      const code = err.code ?? (err.status >= 500 ? "internal_error" : undefined);
      if (code) body.code = code;
      if (err.status >= 500) logServerError(c, err.status, code ?? "internal_error", err.reason ?? err.message);
      return c.json(body, err.status as 400, err.headers);
    }
    // A Durable Object or D1 fault a retry can outlive (overloaded, reset, connection lost): 503.
    const platform = platformFailure(err);
    if (platform) {
      logServerError(c, 503, platform.code, `${platform.reason}: ${describeFailure(err)}`);
      return c.json({ error: "temporarily unavailable; retry shortly", code: platform.code }, 503, retryAfterHeader(1));
    }
    const errorId = crypto.randomUUID().replace(/-/g, "");
    logServerError(c, 500, "internal_error", describeFailure(err), errorId);
    return c.json({ error: "Internal Server Error", code: "internal_error", error_id: errorId }, 500);
  });

  return app;
}

/**
 * The one log line of a 5xx: the door as declared (never the concrete path, which carries ids and
 * addresses), the code and the reason the site gave.
 */
function logServerError(c: Context<AppEnv>, status: number, code: ServerErrorCode | string, reason: string, errorId?: string): void {
  const method = c.req.method;
  const door = registry.find((r) => r.method.toUpperCase() === method && pathRegex(r.path).test(c.req.path));
  const route = `${method} ${door ? door.path : "(no door)"}`;
  console.error(JSON.stringify({ event: "http_5xx", status, code, route, reason, ...(errorId ? { error_id: errorId } : {}) }));
}

/** Conversation routes (spec §4.1, decisions §5): list, read, create-or-replace, delete. */
import { Hono } from "hono";
import { z } from "zod";
import { base64url } from "../../access-control/crypto";
import { bindExecutionKey } from "../../access-control/pass-role";
import { assertMayStore } from "../../access-control/stored-by";
import { routeCreateBody, routeParams } from "../model/schemas";
import { deleteRoute, getRoute, requireRoute, listRoutes, routeByChannelIdentity, routeHasThreads, routeView, upsertRoute } from "../store";
import { type Route, RouteView } from "../model/route";
import type { AppEnv } from "../../platform/http/app-env";
import { flushListings } from "../../shards/listing-table";
import { HttpError, badRequest } from "../../platform/http/errors";
import { addRoute } from "../../platform/http/route";
import { JqError, jqCompile } from "../../platform/jq/engine";
import { agentExists } from "../../targets/agents/run";
import { createTargetContext } from "../../targets/context";
import { assertDeclaredUrl } from "../../outbound/urls";
import { toolExists } from "../../targets/dispatch";
import { type TemplatedText, renderTemplatedText } from "../../templates/templated-text";
import { must } from "../../platform/must";

export const conversationRoutesRouter = new Hono<AppEnv>();

/** Renders a payload_expr/reply_expr (jq string or TemplatedText) and compiles it once. */
async function compileExpr(db: D1Database, name: string, expr: string | TemplatedText | null | undefined): Promise<string | null> {
  if (expr === null || expr === undefined) return null;
  let program: string;
  try {
    program = typeof expr === "string" ? expr : await renderTemplatedText(db, expr);
  } catch (err) {
    if (err instanceof HttpError && err.status === 404) throw badRequest(`invalid ${name}: its text resource does not exist`);
    throw err;
  }
  try {
    await jqCompile(program);
  } catch (err) {
    if (err instanceof JqError) throw badRequest(err.kind === "budget" ? `invalid ${name}: ${err.message}` : `invalid ${name}: jq program does not compile`);
    throw err;
  }
  return program;
}

addRoute(
  conversationRoutesRouter,
  {
    method: "get",
    path: "/api/conversations",
    summary: "List conversation routes (callback secrets withheld)",
    area: "conversations",
    auth: { tag: "conversations" },
    store: "conversations",
    response: z.object({ items: z.array(RouteView), total: z.number().int() }),
  },
  async (c) => {
    const rows = await listRoutes(c.env.DB);
    return { items: rows.map(routeView), total: rows.length };
  },
);

addRoute(
  conversationRoutesRouter,
  {
    method: "get",
    path: "/api/conversations/{route_name}",
    summary: "Read one conversation route",
    area: "conversations",
    auth: { tag: "conversations" },
    store: "conversations",
    params: routeParams,
    response: RouteView,
    errors: [404],
  },
  async (c, { params }) => {
    return routeView(await requireRoute(c.env.DB, params.route_name));
  },
);

addRoute(
  conversationRoutesRouter,
  {
    method: "post",
    path: "/api/conversations/{route_name}",
    summary: "Create or replace a conversation route (upsert)",
    description:
      "Rules in order: body 400 → store 501 → callback_url outbound address guard 400 (private and local hosts unless OUTBOUND_ALLOW_PRIVATE_HOSTS=true) → target exists 404 → the caller may run the target itself 403 → payload_expr/reply_expr compile 400 → (channel, our_identity) unclaimed 400 → pass-role bind of execution_key (403/404/400) → callback secret minted → write. The callback_secret is returned once, here only.",
    area: "conversations",
    auth: { tag: "conversations" },
    stores: [
      { kind: "tool", at: "target_name" },
      { kind: "key", at: "execution_key" },
      { kind: "url", at: "callback_url" },
    ],
    store: "conversations",
    params: routeParams,
    body: routeCreateBody,
    response: z.object({ created: z.boolean(), route_name: z.string(), route: RouteView, callback_secret: z.string().nullable() }),
    errors: [404],
  },
  async (c, { params, body, principal }) => {
    if (body.route_name !== undefined && body.route_name !== params.route_name) throw badRequest("invalid body: route_name: must equal the path's route_name");
    const db = c.env.DB;
    const settings = c.get("settings");
    // Still a body check, but it needs the settings, so it runs here rather than in the schema.
    if (body.door === "api" && body.callback_url) assertDeclaredUrl("callback_url", body.callback_url, settings);
    const targets = createTargetContext(c.env, settings);
    const exists = body.target_kind === "tool" ? await toolExists(targets, body.target_name) : await agentExists(targets, body.target_name);
    if (!exists) throw new HttpError(404, `target ${body.target_kind} not found`);
    // Turns run the target as the execution key (re-checked live at each turn); the writer must be
    // allowed to run it too, as for every stored reference (docs/security.md, "Confused deputy").
    assertMayStore(principal, "target_name", [{ kind: body.target_kind, name: body.target_name }]);
    const payloadProgram = await compileExpr(db, "payload_expr", body.payload_expr);
    const replyProgram = await compileExpr(db, "reply_expr", body.reply_expr);

    const channel = body.door === "channel" ? must(body.channel, "a channel route's channel").trim() : null;
    const ourIdentity = body.door === "channel" ? must(body.our_identity ?? body.identity, "a channel route's our_identity").trim() : null;
    if (channel && ourIdentity) {
      const holder = await routeByChannelIdentity(db, channel, ourIdentity);
      if (holder && holder.route_name !== params.route_name) throw badRequest("invalid body: (channel, our_identity) is already claimed by another route");
    }
    const existing = await getRoute(db, params.route_name);
    if (existing && existing.door !== body.door) {
      // A thread's first record is in its listing shard before its door answered; flushed, D1 knows it.
      await flushListings(c.env);
      if (await routeHasThreads(db, params.route_name)) throw badRequest("invalid body: door cannot change on a route that already has threads");
    }
    // Pass-role: bound before any write; a refusal leaves an existing row untouched.
    const fingerprint = await bindExecutionKey(db, principal, body.execution_key);
    const callbackUrl = body.door === "api" ? (body.callback_url ?? null) : null;
    const secret = callbackUrl ? base64url(crypto.getRandomValues(new Uint8Array(32))) : null;
    const now = new Date().toISOString();
    const row: Route = {
      route_name: params.route_name,
      door: body.door,
      target_kind: body.target_kind,
      target_name: body.target_name,
      execution_key: body.execution_key,
      execution_key_fingerprint: fingerprint,
      payload_expr: body.payload_expr ?? null,
      payload_program: payloadProgram,
      reply_expr: body.reply_expr ?? null,
      reply_program: replyProgram,
      initial_mode: body.initial_mode,
      channel,
      our_identity: ourIdentity,
      callback_url: callbackUrl,
      callback_secret: secret,
      turns_per_hour_override: body.turns_per_hour_override ?? null,
      answer_feedback: body.answer_feedback ?? false,
      created_at: existing?.created_at ?? now,
      updated_at: now,
    };
    try {
      await upsertRoute(db, row);
    } catch (err) {
      // The unique index closes the race between two creators claiming one identity.
      if (String(err).includes("UNIQUE")) throw badRequest("invalid body: (channel, our_identity) is already claimed by another route");
      throw err;
    }
    return { created: !existing, route_name: row.route_name, route: routeView(row), callback_secret: secret };
  },
);

addRoute(
  conversationRoutesRouter,
  {
    method: "delete",
    path: "/api/conversations/{route_name}",
    summary: "Delete a route, its thread index entries and per-thread mode overrides",
    description: "Answer records keep their own retention TTL; pending deliveries of a deleted route fail.",
    area: "conversations",
    auth: { tag: "conversations" },
    store: "conversations",
    params: routeParams,
    response: z.object({ removed: z.literal(true), route_name: z.string() }),
    errors: [404],
  },
  async (c, { params }) => {
    if (!(await deleteRoute(c.env.DB, params.route_name))) throw new HttpError(404, "route not found");
    return { removed: true as const, route_name: params.route_name };
  },
);

/**
 * The API message door and the record read doors (spec §4.3, §4.5; decisions §6, §7).
 */
import { CountRow, batch, d1, rowsOf } from "../../platform/persistence/d1";
import { Hono } from "hono";
import { threadPrincipal } from "../../access-control/identity";
import { z } from "zod";
import { admitMessage, locateMessage, prefetchDoorRoute, prefetchedRoute } from "../door/admission";
import { type AnswerRecord, AnswerRecordView, project } from "../model/record";
import { requireCachedRoute } from "../route-cache";
import { messageAccepted, messageAnswered, messageBody, routeParams } from "../model/schemas";
import { threadStub } from "../door/stubs";
import type { AppEnv } from "../../platform/http/app-env";
import { HttpError } from "../../platform/http/errors";
import { intactIdentifier } from "../../platform/http/identifiers";
import { pageSchema, pagingQuery, toPage, toWindow } from "../../platform/http/paging";
import { addRoute } from "../../platform/http/route";
import { admissionAnswer } from "./answer";

export const conversationMessagesRouter = new Hono<AppEnv>();

/** A `failed_records` row: where the failed record lives. */
const FailedRecordRow = z.object({ message_id: z.string(), thread_id: z.string() });

addRoute(
  conversationMessagesRouter,
  {
    method: "post",
    path: "/api/conversations/{route_name}/messages",
    links: "redeem",
    summary: "Send one api-door message; the turn runs as the route's execution key",
    description:
      "202 {message_id, thread_id} once durably accepted; with wait_seconds (clamped to sync_wait_max_seconds) a turn that finishes in time answers 200 inline and is never also called back. 429 over the (route, caller) rate cap, 503 when the thread's queue is full; neither writes anything. " +
      "With an `Idempotency-Key`, a retry of the same request by the same key answers the first answer (marked `Idempotent-Replayed: true`) and runs no second turn, for inbound_dedupe_ttl_seconds (docs/api-notes.md); the key on another request 422, while its first request is still being answered 409.",
    area: "conversations",
    auth: { tag: "conversations" },
    store: "conversations",
    params: routeParams,
    body: messageBody,
    response: messageAnswered,
    alsoResponds: [{ status: 202, description: "Accepted; the answer follows by callback or poll", schema: messageAccepted }],
    errors: [404, 409, 422, 429, 503],
    prefetch: prefetchDoorRoute,
    idempotent: true,
  },
  async (c, { params, body, principal, idempotency }) => {
    const key = principal.key;
    const admission = await admitMessage(c.env, c.get("settings").conversations, {
      routeName: params.route_name,
      caller: key.user_id,
      threadCaller: threadPrincipal(key),
      body,
      prefetched: prefetchedRoute(c.req.raw),
      idempotency,
    });
    return admissionAnswer(c, admission);
  },
);

addRoute(
  conversationMessagesRouter,
  {
    method: "get",
    path: "/api/conversations/messages/failed",
    summary: "Failed deliveries across every route (admin only)",
    area: "conversations",
    auth: { tag: "conversations", admin: true },
    store: "conversations",
    query: pagingQuery,
    response: pageSchema(AnswerRecordView),
  },
  async (c, { query }) => {
    const w = toWindow(query);
    const now = Date.now();
    const db = c.env.DB;
    const rows = d1(
      db,
    )`SELECT message_id, thread_id FROM failed_records WHERE expires_at > ${now} ORDER BY failed_at DESC, message_id LIMIT ${w.pageSize} OFFSET ${w.offset}`;
    const count = d1(db)`SELECT COUNT(*) AS n FROM failed_records WHERE expires_at > ${now}`;
    const [page, counted] = await batch(db, [rows, count]);
    const failed = rowsOf(FailedRecordRow, page.results, rows.text);
    const records = await Promise.all(failed.map((r) => threadStub(c.env, r.thread_id).getRecord(r.message_id)));
    const items = records.filter((r): r is AnswerRecord => r !== null && r.status === "failed").map((r) => project(r, true));
    return toPage(items, rowsOf(CountRow, counted.results, count.text)[0]?.n ?? 0, w);
  },
);

addRoute(
  conversationMessagesRouter,
  {
    method: "get",
    path: "/api/conversations/{route_name}/messages/{message_id}",
    summary: "Read one answer record (admin: full record; others: caller-safe projection)",
    area: "conversations",
    auth: { tag: "conversations" },
    store: "conversations",
    params: routeParams.extend({ message_id: intactIdentifier(z.string().min(1).max(64)) }),
    response: AnswerRecordView,
    errors: [404],
  },
  async (c, { params, principal }) => {
    await requireCachedRoute(c.env, params.route_name);
    const where = await locateMessage(c.env, params.message_id);
    if (!where || where.route_name !== params.route_name) throw new HttpError(404, "record not found");
    const record = await threadStub(c.env, where.thread_id).getRecord(params.message_id);
    if (!record || record.route_name !== params.route_name) throw new HttpError(404, "record not found");
    return project(record, principal.admin);
  },
);

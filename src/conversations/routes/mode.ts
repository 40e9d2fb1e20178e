/**
 * Control mode and operator send (spec §3.2, §4.7; decisions §10). Every door applies the
 * thread-belongs-to-route guard; the mode doors take no address.
 */
import { Hono } from "hono";
import { requireRoute } from "../store";
import { requireCachedRoute } from "../route-cache";
import { routeParams } from "../model/schemas";
import type { AppEnv } from "../../platform/http/app-env";
import { addRoute } from "../../platform/http/route";
import { REPLAYED_HEADER } from "../../platform/http/idempotency";
import { threadPrincipal } from "../../access-control/identity";
import { threadKey } from "../door/admission";
import { sendOperatorMessage } from "../operator/operator-send";
import { modeAnswer, modeBody, modeSetAnswer, operatorSendBody, sentAnswer, threadIdQuery } from "../operator/schemas";
import { guardThreadOnRoute } from "../operator/thread-guard";
import { assertThreadAllowed } from "../operator/inbox";
import { modeInForce, setThreadMode } from "../operator/threads";
import { threadStub } from "../model/thread-rpc";
import { LiveTurnView, StopAnswer } from "../model/live";
import { z } from "zod";

export const conversationModeRouter = new Hono<AppEnv>();

addRoute(
  conversationModeRouter,
  {
    method: "get",
    path: "/api/conversations/{route_name}/thread/mode",
    summary: "The control mode in force for a thread",
    description:
      "`source` is `thread` while a per-thread override is set, `route` when the answer is the default: the route's initial_mode, or on a linked person's thread (bridge:@person:{id}, named from any route the person spans) manual when any route the person spans is manual, else agent.",
    area: "conversations",
    auth: { tag: "conversations" },
    store: "conversations",
    params: routeParams,
    query: threadIdQuery,
    response: modeAnswer,
    errors: [404],
  },
  async (c, { params, query }) => {
    const route = await requireRoute(c.env.DB, params.route_name);
    return modeInForce(c.env, route, await guardThreadOnRoute(c.env, route.route_name, query.thread_id, route));
  },
);

addRoute(
  conversationModeRouter,
  {
    method: "put",
    path: "/api/conversations/{route_name}/thread/mode",
    summary: "Set a thread's control mode (agent or manual)",
    description:
      "Sets a per-thread override that lasts answer_retention_ttl_seconds after the last accepted inbound or operator send, then reverts to the route default; thread forget and route delete remove it at once. On a linked person's thread the override is person-wide: set from any route the person spans, it rules the person's messages on all of them and lapses only by time, forget or erase. In manual mode no target turn runs: the inbound is appended to the agent's memory when the agent keeps memory, and the answer is silence.",
    area: "conversations",
    auth: { tag: "conversations" },
    store: "conversations",
    params: routeParams,
    body: modeBody,
    response: modeSetAnswer,
    errors: [404],
  },
  async (c, { params, body, principal }) => {
    const route = await requireRoute(c.env.DB, params.route_name);
    return setThreadMode(c.env, route, await guardThreadOnRoute(c.env, route.route_name, body.thread_id, route), body.mode, principal.key.user_id);
  },
);

addRoute(
  conversationModeRouter,
  {
    method: "post",
    path: "/api/conversations/{route_name}/thread/messages",
    summary: "Send an operator message by hand into a thread",
    description:
      "No turn runs. The record is minted already answered (origin `operator`) and delivered by the thread's delivery machine: chunking, receipts, or the signed callback on an api route. On a linked person's thread, `address` (one of the person's addresses) picks the recipient, sent through the route it came in on here, else its first remaining route; without it the message goes to the route and address of the thread's newest record, and an empty person thread needs one. Allowed in either mode; never changes it, and refreshes a mode override's TTL. With an `Idempotency-Key` (docs/api-notes.md), a retry of the same send by the same key answers the first send (`Idempotent-Replayed: true`) and sends nothing more; the key on another request 422, while its first request is still being answered 409. The agent's memory (when the route's agent keeps memory) gets the text as an assistant message first. Rich fields (media, location, template, options, sections, header, footer, schema) follow spec §4.7/§4.9 composition rules (400 when contract-invalid), are delivered after the text as one rich part, and need a channel route; a channel lacking the capability a field needs fails the record (status failed) instead of dropping the field.",
    area: "conversations",
    auth: { tag: "conversations" },
    store: "conversations",
    params: routeParams,
    body: operatorSendBody,
    // 200, not 202 (spec §4.7, decisions §10): the record exists when this answers; delivery follows.
    response: sentAnswer,
    errors: [404, 409, 422, 503],
    idempotent: true,
  },
  async (c, { params, body, principal, idempotency }) => {
    const routeReadAtMs = Date.now();
    const route = await requireCachedRoute(c.env, params.route_name);
    // A "mine only" key (a condition on `.thread`) answers only the threads it lets through (docs/inbox.md).
    await assertThreadAllowed(c.env, principal, route.route_name, body.thread_id);
    const key = threadKey("operator", route.route_name, threadPrincipal(principal.key), idempotency, c.get("settings").conversations);
    const { replayed, ...sent } = await sendOperatorMessage(c.env, c.get("settings"), { route, readAtMs: routeReadAtMs }, principal.key.user_id, body, key);
    if (replayed) c.header(REPLAYED_HEADER, "true");
    return sent;
  },
);

const stopBody = z.object({ message_id: z.string().min(1).max(128).optional() }).strict();

addRoute(
  conversationModeRouter,
  {
    method: "post",
    path: "/api/conversations/{route_name}/thread/stop",
    summary: "Stop the turn running on a thread",
    description:
      "Stops the thread's running turn (only the one `message_id` names, when given): its answer becomes the draft the run had written so far, with `answer_status: answered` and `stopped: true`, delivered like any answer (nothing written: silence); then the thread's next queued turn runs. `stopped: false` when no turn runs. See docs/targets.md \"Stopping a turn\" for what a callback receiver and a waiting caller get.",
    area: "conversations",
    auth: { tag: "conversations" },
    store: "conversations",
    params: routeParams,
    query: threadIdQuery,
    body: stopBody,
    bodyOptional: true,
    response: StopAnswer,
    errors: [404],
  },
  async (c, { params, query, body, principal }) => {
    const route = await requireCachedRoute(c.env, params.route_name);
    const { thread_id } = await guardThreadOnRoute(c.env, route.route_name, query.thread_id, route);
    // A "mine only" key stops only the turns of the threads it lets through (docs/inbox.md).
    await assertThreadAllowed(c.env, principal, route.route_name, thread_id);
    return threadStub(c.env, thread_id).stopTurn(body.message_id ?? null);
  },
);

addRoute(
  conversationModeRouter,
  {
    method: "get",
    path: "/api/conversations/{route_name}/thread/live",
    summary: "The turn a thread is running now, with its draft",
    description:
      "From the thread object's memory, never stored: the running turn (else the oldest queued one, else the last that ended), its `state` (queued, running, tool, waiting, settled) and its `draft`, the answer's text written so far since the run's last tool call (null when nothing runs). An idle thread answers `state: settled`, `draft: null`. The console reads it when a `turn` notice tells it a turn moved (docs/console.md).",
    area: "conversations",
    auth: { tag: "conversations" },
    store: "conversations",
    params: routeParams,
    query: threadIdQuery,
    response: LiveTurnView,
    errors: [404],
  },
  async (c, { params, query, principal }) => {
    const route = await requireCachedRoute(c.env, params.route_name);
    const { thread_id } = await guardThreadOnRoute(c.env, route.route_name, query.thread_id, route);
    // The draft is the conversation's text: read under the inbox doors' "mine only" check.
    await assertThreadAllowed(c.env, principal, route.route_name, thread_id);
    return threadStub(c.env, thread_id).liveTurn();
  },
);

/**
 * The inbox's doors (docs/inbox.md): the operator's side of handed-off conversations. Canned
 * responses are saved replies an operator inserts with `/shortcode`; tagged `conversations`
 * (reads, and the render, which sends nothing, need `conversations:read`; create, replace and
 * delete `conversations:write`) and stored in D1 beside the routes, so they share the
 * conversations store's 501 gate.
 */
import { Hono } from "hono";
import { z } from "zod";
import { requireRoute } from "../conversations/store";
import type { AppEnv } from "../platform/http/app-env";
import { pageSchema, pagingQuery, toWindow } from "../platform/http/paging";
import { addRoute } from "../platform/http/route";
import { CannedRenderAnswer, CannedRenderBody, renderCanned, threadContext } from "./canned-render";
import {
  CannedResponse,
  CannedResponseBody,
  MAX_CANNED_RESPONSES,
  MAX_TEMPLATE_CHARS,
  MAX_TITLE_CHARS,
  Shortcode,
  ShortcodePrefix,
  cannedResponseNotFound,
  deleteCannedResponse,
  listCannedResponses,
  putCannedResponse,
  requireCannedResponse,
} from "./canned-responses";

export const inboxRouter = new Hono<AppEnv>();

const DOOR = { area: "inbox", auth: { tag: "conversations" }, store: "conversations" } as const;
const PATH = "/api/inbox/canned-responses";
const shortcodeParams = z.object({ shortcode: Shortcode });

addRoute(
  inboxRouter,
  {
    method: "get",
    path: PATH,
    summary: "List canned responses in shortcode order",
    description:
      "`q` keeps the shortcodes starting with it (what the operator typed after `/`). Paged: `page` (from 1) and `pageSize` (default 50, at most 200).",
    ...DOOR,
    query: pagingQuery.extend({ q: ShortcodePrefix.optional() }),
    response: pageSchema(CannedResponse),
  },
  (c, { query }) => listCannedResponses(c.env.DB, query.q ?? "", toWindow(query)),
);

addRoute(
  inboxRouter,
  {
    method: "get",
    path: `${PATH}/{shortcode}`,
    summary: "Read one canned response",
    ...DOOR,
    params: shortcodeParams,
    response: CannedResponse,
    errors: [404],
  },
  (c, { params }) => requireCannedResponse(c.env.DB, params.shortcode),
);

addRoute(
  inboxRouter,
  {
    method: "put",
    path: `${PATH}/{shortcode}`,
    summary: "Create or replace a canned response",
    description: `\`title\` 1 to ${MAX_TITLE_CHARS} characters; \`template\` at most ${MAX_TEMPLATE_CHARS} characters of mustache (400 when it does not parse). 201 when created, 200 when replaced (\`created_at\` kept). A new shortcode past ${MAX_CANNED_RESPONSES} canned responses is 409. \`updated_by\` is the writing key's user_id.`,
    ...DOOR,
    params: shortcodeParams,
    body: CannedResponseBody,
    response: CannedResponse,
    alsoResponds: [{ status: 201, description: "Created", schema: CannedResponse }],
    errors: [409],
  },
  async (c, { params, body, principal }) => {
    const { created, canned_response } = await putCannedResponse(c.env.DB, params.shortcode, body, principal.key.user_id, new Date().toISOString());
    return c.json({ data: canned_response }, created ? 201 : 200);
  },
);

addRoute(
  inboxRouter,
  {
    method: "delete",
    path: `${PATH}/{shortcode}`,
    summary: "Delete a canned response",
    description: "204 with no body; 404 when there is none of that shortcode.",
    ...DOOR,
    params: shortcodeParams,
    status: 204,
    errors: [404],
  },
  async (c, { params }) => {
    if (!(await deleteCannedResponse(c.env.DB, params.shortcode))) throw cannedResponseNotFound();
    return c.body(null, 204);
  },
);

addRoute(
  inboxRouter,
  {
    method: "post",
    path: `${PATH}/{shortcode}/render`,
    summary: "Render a canned response for a thread (sends nothing)",
    description:
      "The template gets `{route: {name, channel}, customer: {address}, operator: {user_id}, thread: {id}}`: `channel` null on an api route, `address` that of the thread's newest record with one (null while it has none), `user_id` the calling key's. Mustache without HTML escaping; unknown names render empty. The thread must belong to the route as on the mode doors: a blank or off-route id 400, a person thread whose person is not on the route 404; unknown route or shortcode 404. A text longer than an operator message may be is 400.",
    ...DOOR,
    auth: { tag: "conversations", action: "read" },
    params: shortcodeParams,
    body: CannedRenderBody,
    response: CannedRenderAnswer,
    errors: [404],
  },
  async (c, { params, body, principal }) => {
    const canned = await requireCannedResponse(c.env.DB, params.shortcode);
    const route = await requireRoute(c.env.DB, body.route_name);
    const context = await threadContext(c.env, route, body.thread_id, principal.key.user_id);
    return { text: renderCanned(canned.template, context) };
  },
);

/**
 * Operator doors over a route's threads (spec §4.5, §4.6; decisions §9, §10): thread listing and
 * message search (admin only, authorized before the route lookup), one thread's transcript (read
 * grant) and thread forget (write grant). Thread ids travel percent-encoded in query strings.
 */
import { Hono } from "hono";
import { requireRoute } from "../store";
import { routeParams } from "../model/schemas";
import type { AppEnv } from "../../platform/http/app-env";
import { toWindow } from "../../platform/http/paging";
import { addRoute } from "../../platform/http/route";
import { listThreads, readTranscript, searchRoute } from "../operator/reads";
import { forgetAnswer, recordsPage, searchQuery, threadIdQuery, threadsPage, threadsQuery, transcriptPage, transcriptQuery } from "../operator/schemas";
import { guardThreadOnRoute } from "../operator/thread-guard";
import { forgetThread } from "../operator/threads";
import { assertThreadAllowed } from "../operator/inbox";
import { notesBeside } from "../operator/notes";

export const conversationThreadsRouter = new Hono<AppEnv>();

addRoute(
  conversationThreadsRouter,
  {
    method: "get",
    path: "/api/conversations/{route_name}/threads",
    summary: "List a route's threads, newest activity first (admin only)",
    description:
      "Filters: `status` (matches the thread's last record status; unknown values are 400) and `address` (substring of the part after `bridge:{route}:`; person threads never match); the inbox's `inbox_status`, `assignee`, `label` and `waiting` (`true`/`false`), and `rated=down` (threads with an answer their customer rated down; each row's `rated_down` counts them), which narrow the listing itself (docs/inbox.md). A filtered page post-scans at most the 500 newest threads and answers `truncated: true` when the route holds more; `total` is then the matches found. An unfiltered listing never scans and is never truncated.",
    area: "conversations",
    auth: { tag: "conversations", admin: true },
    store: "conversations",
    params: routeParams,
    query: threadsQuery,
    response: threadsPage,
    errors: [404],
  },
  async (c, { params, query }) => {
    await requireRoute(c.env.DB, params.route_name);
    const { status, address, inbox_status, assignee, label, waiting, rated } = query;
    return listThreads(c.env.DB, params.route_name, { status, address, inbox_status, assignee, label, waiting, rated }, toWindow(query));
  },
);

addRoute(
  conversationThreadsRouter,
  {
    method: "get",
    path: "/api/conversations/{route_name}/messages/search",
    summary: "Search a route's records by text (admin only)",
    description:
      "Case-insensitive substring over inbound text and answer. A bounded nested scan: the 500 newest-active threads, newest record first, at most 1000 records; a page that spends the budget answers `truncated: true`. Items are whole records.",
    area: "conversations",
    auth: { tag: "conversations", admin: true },
    store: "conversations",
    params: routeParams,
    query: searchQuery,
    response: recordsPage,
    errors: [404],
  },
  async (c, { params, query }) => {
    await requireRoute(c.env.DB, params.route_name);
    return searchRoute(c.env, params.route_name, query.q, toWindow(query));
  },
);

addRoute(
  conversationThreadsRouter,
  {
    method: "get",
    path: "/api/conversations/{route_name}/transcript",
    summary: "Read one thread's records a page at a time",
    description:
      'Whole records for admins, caller-safe projections otherwise. `order` asc (default, oldest first) or desc. `include_notes=true` adds `notes`: the thread\'s live private notes, oldest first (docs/inbox.md, "Private notes"). 404 for a thread the index does not hold; a held thread whose records expired reads as an empty page carrying the indexed total. With `q` (a text search over at most 1000 records), total is the matches found and an unknown or unmatched thread reads as an empty page.',
    area: "conversations",
    auth: { tag: "conversations" },
    store: "conversations",
    params: routeParams,
    query: transcriptQuery,
    response: transcriptPage,
    errors: [404],
  },
  async (c, { params, query, principal }) => {
    const route = await requireRoute(c.env.DB, params.route_name);
    // A person thread's transcript holds its records from every route the person spans.
    const { thread_id } = await guardThreadOnRoute(c.env, params.route_name, query.thread_id, route);
    const q = query.q !== undefined && query.q.trim() !== "" ? query.q : undefined;
    const page = await readTranscript(c.env, params.route_name, thread_id, { order: query.order, q, admin: principal.admin }, toWindow(query));
    if (query.include_notes !== "true") return page;
    // The notes are the inbox's: read under the inbox doors' "mine only" check.
    await assertThreadAllowed(c.env, principal, params.route_name, thread_id);
    return { ...page, notes: await notesBeside(c.env, thread_id) };
  },
);

addRoute(
  conversationThreadsRouter,
  {
    method: "delete",
    path: "/api/conversations/{route_name}/thread",
    summary: "Forget a thread: agent checkpoint, answer records and thread indexes",
    description:
      "A valid id on its own route always succeeds (`removed` is 0 when nothing was left), also after the route itself was deleted. A person thread (bridge:@person:{id}) is forgotten across every route it spans, named from any of them. 400 for a blank id or one off the route; 404 for a person thread whose person is unknown or not on this route; 409 while a turn is queued or running.",
    area: "conversations",
    auth: { tag: "conversations" },
    store: "conversations",
    params: routeParams,
    query: threadIdQuery,
    response: forgetAnswer,
    errors: [409],
  },
  async (c, { params, query }) => {
    // A person thread is forgotten across every route it spans (its listing rows go by thread id).
    const { thread_id } = await guardThreadOnRoute(c.env, params.route_name, query.thread_id);
    return forgetThread(c.env, c.get("settings"), params.route_name, thread_id);
  },
);

/**
 * The inbox doors on one route's threads (docs/inbox.md): read a thread's inbox state, claim,
 * release, transfer, resolve, snooze, reopen, label; and the route's inbox policy. Every thread door
 * applies the thread-belongs-to-route guard, like the mode doors; each action is one compare-and-set
 * in the thread's object. The route's business hours sit beside its policy, as the handoff they
 * shape does.
 */
import { Hono } from "hono";
import { z } from "zod";
import type { AppEnv } from "../../platform/http/app-env";
import { HttpError } from "../../platform/http/errors";
import { addRoute } from "../../platform/http/route";
import { BusinessHours, hoursView } from "../business-hours";
import {
  deleteBusinessHours,
  deleteInboxPolicy,
  publicPolicy,
  readBusinessHours,
  readInboxPolicy,
  writeBusinessHours,
  writeInboxPolicy,
} from "../inbox-policy";
import { DEFAULT_POLICY, InboxPolicy, InboxView } from "../model/inbox";
import { base64url } from "../../access-control/crypto";
import { assertDeclaredUrl } from "../../outbound/urls";
import { routeParams } from "../model/schemas";
import { actOnInbox, assertThreadAllowed, claimBody, inboxThreadBody, labelsBody, readInbox, resolveBody, snoozeBody, transferBody } from "../operator/inbox";
import { inboxListPage, inboxListQuery, listInbox } from "../operator/inbox-list";
import { toWindow } from "../../platform/http/paging";
import { threadIdQuery } from "../operator/schemas";
import { guardThreadOnRoute } from "../operator/thread-guard";
import { requireRoute } from "../store";

export const conversationInboxRouter = new Hono<AppEnv>();

const common = { area: "conversations", auth: { tag: "conversations" }, store: "conversations", params: routeParams } as const;

addRoute(
  conversationInboxRouter,
  {
    ...common,
    method: "get",
    path: "/api/conversations/{route_name}/thread/inbox",
    summary: "A thread's inbox state: status, assignee, since when its customer waits, labels",
    description:
      "`status` is `pending` while the agent owns the conversation, `open` once it was handed to a human, `snoozed` until `snoozed_until`, or `resolved`. `waiting_since` is set while an open thread's customer has had no human answer; `sla_due_at` is when the waiting alert (then its escalation) is due. 404 when the thread holds no record.",
    query: threadIdQuery,
    response: InboxView,
    errors: [404],
  },
  async (c, { params, query, principal }) => {
    const route = await requireRoute(c.env.DB, params.route_name);
    const thread = await guardThreadOnRoute(c.env, route.route_name, query.thread_id, route);
    const view = await readInbox(c.env, thread.thread_id);
    await assertThreadAllowed(c.env, principal, route.route_name, thread.thread_id, view);
    return view;
  },
);

/** One action door: the body names the thread; the guard applies; the thread's object decides. */
function actionDoor<B extends { thread_id: string }>(
  path: string,
  summary: string,
  description: string,
  body: z.ZodType<B>,
  action: (b: B, by: string) => Parameters<typeof actOnInbox>[2],
  errors: number[] = [404, 409],
) {
  addRoute(
    conversationInboxRouter,
    { ...common, method: "post", path, summary, description, body, response: InboxView, errors },
    async (c, { params, body: b, principal }) => {
      const route = await requireRoute(c.env.DB, params.route_name);
      const thread = await guardThreadOnRoute(c.env, route.route_name, b.thread_id, route);
      await assertThreadAllowed(c.env, principal, route.route_name, thread.thread_id);
      return actOnInbox(c.env, thread.thread_id, action(b, principal.key.user_id));
    },
  );
}

actionDoor(
  "/api/conversations/{route_name}/thread/claim",
  "Claim a thread: the caller becomes its assignee",
  "A compare-and-set in the thread's object: 409 `thread_claimed` while another operator holds it (the inbox door says who), unless `force: true`, which takes it over and is recorded. Claiming one's own thread again changes nothing. A claimed thread refuses another operator's send (409) unless that send is forced.",
  claimBody,
  (b, by) => ({ kind: "claim", by, force: b.force === true }),
);

actionDoor(
  "/api/conversations/{route_name}/thread/release",
  "Release a thread the caller holds",
  "Only the assignee releases, unless `force: true` (409 `not_assignee` otherwise). Releasing an unowned thread changes nothing.",
  claimBody,
  (b, by) => ({ kind: "release", by, force: b.force === true }),
);

actionDoor(
  "/api/conversations/{route_name}/thread/transfer",
  "Hand a thread to another operator",
  "`to` is the new assignee's user_id. The current assignee (or anyone on an unowned thread) transfers; anyone else needs `force: true` (409 `not_assignee` otherwise).",
  transferBody,
  (b, by) => ({ kind: "transfer", by, to: b.to, force: b.force === true }),
);

actionDoor(
  "/api/conversations/{route_name}/thread/resolve",
  "Resolve a thread",
  "The thread stops waiting and its timers stop. A new customer message reopens it. Resolving a resolved thread changes nothing. With `notify: true` the customer is sent the policy's `closing_message` and, where the channel carries reply options (or as text on an SMS route) and the policy's `ask_rating` holds, a 1-5 satisfaction question; a matching reply within 24 hours is the thread's `rating` and does not reopen it.",
  resolveBody,
  (b, by) => ({ kind: "resolve", by, notify: b.notify === true }),
  [404],
);

actionDoor(
  "/api/conversations/{route_name}/thread/snooze",
  "Snooze a thread until a time",
  "`until` (ISO-8601, in the future) or `seconds` (60 to 90 days), exactly one. The thread's alarm wakes it: it opens and waits again. A customer message wakes it sooner.",
  snoozeBody,
  (b, by) => ({ kind: "snooze", by, until: b.until !== undefined ? Date.parse(b.until) : Date.now() + (b.seconds ?? 0) * 1000 }),
  [404],
);

actionDoor(
  "/api/conversations/{route_name}/thread/reopen",
  "Reopen a resolved or snoozed thread",
  "It opens and waits for a human again. An open or pending thread is left as it is.",
  inboxThreadBody,
  (_b, by) => ({ kind: "reopen", by }),
  [404],
);

actionDoor(
  "/api/conversations/{route_name}/thread/labels",
  "Add and remove a thread's labels",
  "Labels are 1-32 of a-z, 0-9, `_` and `-`; a thread carries at most 16. Removals apply before additions. The listing and the inbox filter by label.",
  labelsBody,
  (b, by) => ({ kind: "labels", by, add: b.add, remove: b.remove }),
  [404],
);

const policyAnswer = InboxPolicy.extend({ route_name: z.string(), stored: z.boolean(), updated_at: z.string().nullable(), updated_by: z.string().nullable() });

addRoute(
  conversationInboxRouter,
  {
    ...common,
    method: "get",
    path: "/api/conversations/{route_name}/inbox",
    summary: "The route's inbox policy",
    description:
      "The waiting alert's delay and target, the escalation, the holding and closing messages, auto-resolve and whether private notes join the agent's memory. `stored: false` answers the defaults.",
    response: policyAnswer,
    errors: [404],
  },
  async (c, { params }) => {
    await requireRoute(c.env.DB, params.route_name);
    const stored = await readInboxPolicy(c.env.DB, params.route_name);
    if (!stored) return { ...DEFAULT_POLICY, route_name: params.route_name, stored: false, updated_at: null, updated_by: null };
    return { ...publicPolicy(stored.policy), route_name: params.route_name, stored: true, updated_at: stored.updated_at, updated_by: stored.updated_by };
  },
);

addRoute(
  conversationInboxRouter,
  {
    ...common,
    method: "put",
    path: "/api/conversations/{route_name}/inbox",
    summary: "Replace the route's inbox policy",
    description:
      "Fields left out take their defaults. Threads read the policy when they set a timer (a handoff, a customer message while a human owns the thread, a snooze's end), so a change applies from the next one; a timer already set keeps its instant. `events_url` must be https and pass the outbound address guard (400 otherwise; checked again before each POST). The events are signed like answer callbacks, with the route's callback secret; a route without one gets an events secret, minted by the PUT that first sets `events_url` and answered once as `events_secret` (null in every other answer). It is kept while the policy keeps an `events_url`; a PUT without one, or a DELETE, drops it.",
    body: InboxPolicy,
    // The events receiver is POSTed to later, by the thread, with the route's secret: guarded at
    // this PUT and again before each POST (test/hardening/confused-deputy.test.ts).
    stores: [{ kind: "url", at: "events_url" }],
    response: policyAnswer.extend({ events_secret: z.string().nullable() }),
    errors: [404],
  },
  async (c, { params, body, principal }) => {
    const route = await requireRoute(c.env.DB, params.route_name);
    // Still a body check, but it needs the settings, so it runs here rather than in the schema.
    if (body.events_url) assertDeclaredUrl("events_url", body.events_url, c.get("settings"));
    const before = await readInboxPolicy(c.env.DB, params.route_name);
    // The route's callback secret signs its events; a route without one needs a secret of its own.
    const kept = body.events_url ? (before?.policy.events_secret ?? null) : null;
    const minted = body.events_url && !route.callback_secret && !kept ? base64url(crypto.getRandomValues(new Uint8Array(32))) : null;
    const now = new Date();
    await writeInboxPolicy(c.env.DB, params.route_name, { ...body, events_secret: minted ?? kept }, principal.key.user_id, now);
    return { ...body, route_name: params.route_name, stored: true, updated_at: now.toISOString(), updated_by: principal.key.user_id, events_secret: minted };
  },
);

addRoute(
  conversationInboxRouter,
  {
    ...common,
    method: "delete",
    path: "/api/conversations/{route_name}/inbox",
    summary: "Drop the route's inbox policy (back to the defaults)",
    response: z.object({ route_name: z.string(), deleted: z.boolean() }),
    errors: [404],
  },
  async (c, { params }) => {
    await requireRoute(c.env.DB, params.route_name);
    const deleted = await deleteInboxPolicy(c.env.DB, params.route_name);
    if (!deleted) throw new HttpError(404, "no inbox policy stored for this route");
    return { route_name: params.route_name, deleted };
  },
);

const hoursAnswer = z
  .object({
    route_name: z.string(),
    hours: BusinessHours.nullable(),
    open_now: z.boolean(),
    next_opening: z.string().nullable(),
    updated_at: z.string().nullable(),
    updated_by: z.string().nullable(),
  })
  .describe("BusinessHoursView");

function hoursAnswerOf(routeName: string, hours: BusinessHours | null, updatedAt: string | null, updatedBy: string | null) {
  const view = hoursView(hours, new Date());
  return { route_name: routeName, hours, open_now: view.open_now, next_opening: view.next_opening, updated_at: updatedAt, updated_by: updatedBy };
}

addRoute(
  conversationInboxRouter,
  {
    ...common,
    method: "get",
    path: "/api/conversations/{route_name}/hours",
    summary: "The route's business hours",
    description:
      "`hours` null: none set, the route is always open. `open_now` and `next_opening` (ISO-8601, null while open or when the week has no hours) are computed at the request.",
    response: hoursAnswer,
    errors: [404],
  },
  async (c, { params }) => {
    await requireRoute(c.env.DB, params.route_name);
    const stored = await readBusinessHours(c.env.DB, params.route_name);
    return hoursAnswerOf(params.route_name, stored?.hours ?? null, stored?.updated_at ?? null, stored?.updated_by ?? null);
  },
);

addRoute(
  conversationInboxRouter,
  {
    ...common,
    method: "put",
    path: "/api/conversations/{route_name}/hours",
    summary: "Replace the route's business hours",
    description:
      '`time_zone` (IANA name), `weekly` (`mon` … `sun`, each a list of `["HH:MM", "HH:MM"]` intervals; an end not after its start runs past midnight; a day left out is closed), `away_message` (`{next_opening}` is replaced; null: a default text), `reply_time_text` or `reply_time_seconds` (the expected reply time a page shows), `locale` (how the next opening is written when the person\'s is unknown) and `agent_out_of_hours` (`answer`: the agent answers out of hours and only a handoff says when a person is back; `handoff_note`: the customer is also told beside the agent\'s answer, once per closed period). ' +
      'A handoff out of hours sends the away message instead of the holding message, once per handoff (docs/inbox.md, "Business hours"). Threads read the hours with the inbox policy, when a handoff sets its timers.',
    body: BusinessHours,
    response: hoursAnswer,
    errors: [404],
  },
  async (c, { params, body, principal }) => {
    await requireRoute(c.env.DB, params.route_name);
    const now = new Date();
    await writeBusinessHours(c.env.DB, params.route_name, body, principal.key.user_id, now);
    return hoursAnswerOf(params.route_name, body, now.toISOString(), principal.key.user_id);
  },
);

addRoute(
  conversationInboxRouter,
  {
    ...common,
    method: "delete",
    path: "/api/conversations/{route_name}/hours",
    summary: "Drop the route's business hours (always open again)",
    response: z.object({ route_name: z.string(), deleted: z.boolean() }),
    errors: [404],
  },
  async (c, { params }) => {
    await requireRoute(c.env.DB, params.route_name);
    const deleted = await deleteBusinessHours(c.env.DB, params.route_name);
    if (!deleted) throw new HttpError(404, "no business hours stored for this route");
    return { route_name: params.route_name, deleted };
  },
);

addRoute(
  conversationInboxRouter,
  {
    method: "get",
    path: "/api/inbox/threads",
    summary: "The inbox: every route's threads in one view, with filters",
    description:
      "`view`: `waiting` (customers waiting for a human, longest wait first), `mine` (held by the caller, not resolved), `unassigned` (open, held by nobody), `all` (the default: everything not resolved), `resolved`, or `rated_down` (the review queue: threads with an answer their customer rated down, whatever their status, newest activity first; each row's `rated_down` counts them). Filters: `route`, `channel`, `label`, `status` (pending, open, snoozed, resolved), `assignee`. The listing lags the threads by the listing shards' flush (docs/architecture.md, \"The listing lag\"). A key whose condition reads `.thread` sees only the threads it lets through; its page is a post-scan of at most 500 threads (`truncated` when there were more).",
    area: "conversations",
    auth: { tag: "conversations" },
    store: "conversations",
    query: inboxListQuery,
    response: inboxListPage,
    errors: [],
  },
  async (c, { query, principal }) => listInbox(c.env.DB, principal, query, toWindow(query)),
);

/**
 * Interactions (spec §4.11 "Interactions"; platform-facts C "Interactions (ask_user)";
 * docs/interactions.md): the questions runs parked on with `ask_user`, listed, answered or
 * cancelled by operators, tailed as a stream, answered once through a public ticket, and the media
 * participants sent in their answers. Tagged `interactions`; 501 `interactions-not-configured`
 * without INTERACTIONS_STORE_URL.
 *
 * Restricted callers (owned keys) see, answer, cancel and stream only interactions whose audience
 * is their own user_id; another is 404, as if it did not exist (docs/interactions.md "Who sees what").
 */
import { Hono } from "hono";
import { z } from "zod";
import { holderOf, sinceMs } from "../access-control/identity";
import type { Principal } from "../access-control/principal";
import { keyStillAllows, presentedKeyHash } from "../access-control/live-key";
import { type AnswerInput, interactionHub, interactionStub } from "./rpc";
import type { AppEnv } from "../platform/http/app-env";
import { jsonObjectSchema } from "../platform/http/bounded-json";
import { HttpError, badRequest, notFound } from "../platform/http/errors";
import { nonBlankText } from "../platform/http/identifiers";
import { pageSchema, pagingQuery, toPage, toWindow } from "../platform/http/paging";
import { addPublicRoute, addRoute } from "../platform/http/route";
import { InteractionOption } from "./ask";
import { listInteractions, interactionByTicket } from "./index-store";
import { MEDIA_ID_PATTERN, mediaKey } from "./media";
import { INTERACTION_STATUSES, InteractionId, type InteractionState, InteractionView, viewFor, visibleTo } from "./record";
import { streamInteractionEvents } from "./stream";
import { isTicketShaped, ticketHash } from "./tickets";

export const interactionsRouter = new Hono<AppEnv>();

const DOOR = { area: "interactions", store: "interactions" } as const;

/** An answer's body: at least one of text, option_id, form. */
export const AnswerBody = z
  .object({
    text: z.string().trim().min(1, { message: "must not be blank" }).max(65_536).optional(),
    option_id: z.string().min(1, { message: "must not be blank" }).max(256).optional(),
    form: jsonObjectSchema.optional(),
  })
  .strict()
  .refine((b) => b.text !== undefined || b.option_id !== undefined || b.form !== undefined, { message: "give at least one of text, option_id, form" });
export type AnswerBody = z.infer<typeof AnswerBody>;

const ANSWER_RULES =
  "Body: at least one of `text`, `option_id` (an option's id as the interaction lists it: the author's, else its 1-based position) and `form` (a JSON object, transport-bounded, not validated against the schema). Without option_id, a text equal to an option's text, id or number picks that option.";

/** The caller as the audience rules see it: a restricted caller matches its user_id from its key lineage's start on (src/access-control/identity.ts). */
function callerOf(p: Principal): { restricted: boolean; user_id: string; since: string; admin: boolean } {
  return { restricted: p.restricted, ...holderOf(p.key), admin: p.admin };
}

/** Is interaction `id` there and visible to `caller`? */
async function interactionVisible(env: Env, id: string | undefined, caller: ReturnType<typeof callerOf>): Promise<boolean> {
  if (!id) return false;
  const s = await interactionStub(env, id).read();
  return s !== null && visibleTo(s, caller);
}

/** The interaction as this caller may see it, or 404. */
async function visibleInteraction(env: Env, principal: Principal, id: string): Promise<InteractionState> {
  const s = await interactionStub(env, id).read();
  if (!s || !visibleTo(s, callerOf(principal))) throw notFound("interaction not found");
  return s;
}

/** The HttpError an answer or cancel refusal is. */
function refusal(reason: "unknown" | "not_pending" | "bad_option" | "bad_ticket"): HttpError {
  if (reason === "bad_option") return badRequest("invalid body: option_id: names no option of this interaction");
  if (reason === "not_pending") return new HttpError(409, "interaction is not pending: it was answered, cancelled or expired");
  return notFound("interaction not found");
}

const toInput = (b: AnswerBody): AnswerInput => ({ text: b.text ?? null, option_id: b.option_id ?? null, form: b.form ?? null });

const listQuery = pagingQuery.extend({
  status: z.enum(INTERACTION_STATUSES).optional(),
  thread_id: z.string().min(1, { message: "must not be blank" }).max(1000).optional(),
});

addRoute(
  interactionsRouter,
  {
    method: "get",
    path: "/api/interactions",
    summary: "List interactions, newest first",
    description:
      "Every interaction the listing holds (pending, answered, cancelled, expired), newest first; filters `status` and `thread_id`. Paged (`page`, `pageSize` ≤ 200). A restricted caller lists only interactions addressed to it (audience = its user_id). The listing is written by each interaction's object in the background and trails it by moments; an ended interaction leaves it after INTERACTIONS_RETENTION_SECONDS.",
    ...DOOR,
    auth: { tag: "interactions" },
    pinnable: false,
    query: listQuery,
    response: pageSchema(InteractionView),
  },
  async (c, { query, principal }) => {
    const caller = callerOf(principal);
    const w = toWindow(query);
    const { items, total } = await listInteractions(
      c.env.DB,
      { status: query.status, thread_id: query.thread_id, audience: caller.restricted ? caller.user_id : undefined, audienceSinceMs: sinceMs(caller) },
      w.offset,
      w.pageSize,
    );
    return toPage(
      items.map((s) => viewFor(s, caller.admin)),
      total,
      w,
    );
  },
);

addRoute(
  interactionsRouter,
  {
    method: "get",
    path: "/api/interactions/pending",
    summary: "List the interactions waiting for an answer, newest first",
    description:
      "Pending interactions not yet past their expiry, newest first; filter `thread_id`. Paged (`page`, `pageSize` ≤ 200). A restricted caller lists only interactions addressed to it.",
    ...DOOR,
    auth: { tag: "interactions" },
    pinnable: false,
    query: listQuery.omit({ status: true }),
    response: pageSchema(InteractionView),
  },
  async (c, { query, principal }) => {
    const caller = callerOf(principal);
    const w = toWindow(query);
    const { items, total } = await listInteractions(
      c.env.DB,
      { pendingAt: Date.now(), thread_id: query.thread_id, audience: caller.restricted ? caller.user_id : undefined, audienceSinceMs: sinceMs(caller) },
      w.offset,
      w.pageSize,
    );
    return toPage(
      items.map((s) => viewFor(s, caller.admin)),
      total,
      w,
    );
  },
);

const streamQuery = z.object({
  last_event_id: z
    .string()
    .regex(/^\d{1,15}$/, { message: "must be a non-negative integer" })
    .optional(),
  max_seconds: z
    .string()
    .regex(/^\d{1,5}$/, { message: "must be a whole number of seconds" })
    .transform(Number)
    .refine((n) => n >= 1, { message: "must be at least 1" })
    .optional(),
});

addRoute(
  interactionsRouter,
  {
    method: "get",
    path: "/api/interactions/stream",
    summary: "Tail interaction events as server-sent events",
    description:
      '`text/event-stream`: each event is `id: <n>` and `data: <json>` with `{id, type, interaction_id, at, interaction}`; `type` is interaction.created, interaction.answered, interaction.cancelled, interaction.expired or interaction.resumed (an outside run\'s resumed end). `: keepalive` comments every 15 s. Starts with new events; the `Last-Event-ID` header (or `last_event_id`) replays what the ring still holds after that id (INTERACTIONS_EVENTS_MAX), preceded by a `{type: "events.dropped"}` frame when older events were already dropped. The server ends a stream after INTERACTIONS_STREAM_MAX_SECONDS (or the shorter `max_seconds`); reconnect with Last-Event-ID. A restricted caller receives only events of interactions addressed to it. The key is checked again before every push (each batch of events and each keepalive): once it is revoked, disabled or can no longer read interactions, nothing more is sent and the stream ends.',
    ...DOOR,
    auth: { tag: "interactions" },
    pinnable: false,
    query: streamQuery,
    produces: "text/event-stream",
    live: "sse",
  },
  async (c, { query, principal }) => {
    const header = c.req.header("last-event-id")?.trim();
    if (header !== undefined && header !== "" && !/^\d{1,15}$/.test(header)) throw badRequest("invalid header: Last-Event-ID must be a non-negative integer");
    const raw = header || query.last_event_id;
    const caller = callerOf(principal);
    const max = c.get("settings").interactions.streamMaxSeconds;
    const keyHash = (await presentedKeyHash(c.req.raw.headers)) ?? "";
    const door = { need: { tag: "interactions", action: "read" as const }, request: { method: "GET", path: "/api/interactions/stream" } };
    return streamInteractionEvents(interactionHub(c.env), {
      stillAllowed: () => keyStillAllows(c.env, keyHash, door),
      after: raw !== undefined ? Number(raw) : null,
      audience: caller.restricted ? caller.user_id : null,
      audienceSince: caller.restricted ? caller.since : undefined,
      admin: caller.admin,
      maxMs: Math.min(query.max_seconds ?? max, max) * 1000,
    });
  },
);

const idParams = z.object({ interaction_id: InteractionId });

addRoute(
  interactionsRouter,
  {
    method: "post",
    path: "/api/interactions/{interaction_id}/answer",
    summary: "Answer a pending interaction",
    description: `${ANSWER_RULES} The parked run resumes with the answer: inside a thread, the thread queues a resume turn whose record (\`reply_message_id\`) carries the reply, delivered like any answer; outside one, the run resumes in the background and its end is the interaction's \`result\`. Answers the interaction. 404 unknown (or not addressed to a restricted caller); 409 no longer pending; 400 an option_id naming no option.`,
    ...DOOR,
    auth: { tag: "interactions" },
    params: idParams,
    body: AnswerBody,
    response: InteractionView,
    errors: [404, 409],
  },
  async (c, { params, body, principal: p }) => {
    await visibleInteraction(c.env, p, params.interaction_id);
    const r = await interactionStub(c.env, params.interaction_id).answer(toInput(body), { kind: "operator", user_id: p.key.user_id, message_id: null });
    if (!r.ok) throw refusal(r.reason);
    return viewFor(r.state, p.admin);
  },
);

addRoute(
  interactionsRouter,
  {
    method: "post",
    path: "/api/interactions/{interaction_id}/cancel",
    summary: "Cancel a pending interaction",
    description:
      'Body (optional): `{reason}`. The parked run resumes with `{outcome: "cancelled", cancelled: true, reason?}` as its ask_user result, which the model (or a tool route\'s reply_expr) sees. 404 unknown (or not addressed to a restricted caller); 409 no longer pending.',
    ...DOOR,
    auth: { tag: "interactions" },
    params: idParams,
    body: z.object({ reason: nonBlankText(1000).optional() }).strict(),
    bodyOptional: true,
    response: InteractionView,
    errors: [404, 409],
  },
  async (c, { params, body, principal: p }) => {
    await visibleInteraction(c.env, p, params.interaction_id);
    const r = await interactionStub(c.env, params.interaction_id).cancel(p.key.user_id, body.reason ?? null);
    if (!r.ok) throw refusal(r.reason);
    return viewFor(r.state, p.admin);
  },
);

/** What a ticket holder sees: the question, never the origin, the parked run or other answers. */
export const TicketView = z
  .object({
    interaction_id: z.string(),
    status: z.enum(INTERACTION_STATUSES),
    question: z.string(),
    options: z.array(InteractionOption).nullable(),
    schema: z.record(z.string(), z.unknown()).nullable(),
    expires_at: z.string(),
  })
  .strict();

const ticketParams = z.object({ ticket: z.string().max(200) });

/** The interaction behind a live ticket, or the uniform 404 (misshapen, unknown, expired, used, ended). */
async function ticketTarget(env: Env, ticket: string): Promise<{ id: string; hash: string }> {
  if (!isTicketShaped(ticket)) throw notFound();
  const hash = await ticketHash(ticket);
  const id = await interactionByTicket(env.DB, hash, Date.now());
  if (!id) throw notFound();
  return { id, hash };
}

addPublicRoute(
  interactionsRouter,
  {
    method: "get",
    path: "/api/interactions/callback/{ticket}",
    summary: "Show the question behind a callback ticket (public)",
    description:
      "No api key: the ticket (`itk-…`, sent to the interaction's audience in its notification feed) is the credential. Answers the question, its options or form schema, status and expiry. A GET never answers (mail scanners and link previews fetch links): POST the answer. Every miss (misshapen, unknown, expired, spent or ended ticket) is the same 404.",
    ...DOOR,
    auth: { public: true },
    params: ticketParams,
    response: TicketView,
    errors: [404],
  },
  async (c, { params }) => {
    const t = await ticketTarget(c.env, params.ticket);
    const s = await interactionStub(c.env, t.id).ticketView(t.hash);
    if (!s) throw notFound();
    return { interaction_id: s.interaction_id, status: s.status, question: s.question, options: s.options, schema: s.schema, expires_at: s.expires_at };
  },
);

addPublicRoute(
  interactionsRouter,
  {
    method: "post",
    path: "/api/interactions/callback/{ticket}",
    summary: "Answer through a callback ticket, once (public)",
    description: `No api key: the ticket is the credential, and the answer spends it. ${ANSWER_RULES} Answers \`{interaction_id, status}\`. Every miss (misshapen, unknown, expired, spent or ended ticket) is the same 404; 400 for a body refusal.`,
    ...DOOR,
    auth: { public: true },
    params: ticketParams,
    body: AnswerBody,
    response: z.object({ interaction_id: z.string(), status: z.enum(INTERACTION_STATUSES) }),
    errors: [404],
  },
  async (c, { params, body }) => {
    const t = await ticketTarget(c.env, params.ticket);
    const r = await interactionStub(c.env, t.id).answerByTicket(t.hash, toInput(body));
    if (!r.ok) throw r.reason === "bad_option" ? refusal(r.reason) : notFound();
    return { interaction_id: r.state.interaction_id, status: r.state.status };
  },
);

/** A filename safe in a header: characters outside A-Z, a-z, 0-9, '.', '_' and '-' become '_'. */
function safeFilename(name: string | undefined, id: string): string {
  const cleaned = (name ?? "").replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 200);
  return cleaned && cleaned !== "." && cleaned !== ".." ? cleaned : `media-${id.slice(0, 12)}`;
}

addRoute(
  interactionsRouter,
  {
    method: "get",
    path: "/api/interactions/media/{media_id}",
    summary: "Download a media item a participant sent in an answer",
    description:
      "The stored bytes with their stored content type, `x-content-type-options: nosniff`, `content-disposition: attachment` and a `default-src 'none'` content security policy (never rendered as a page of this origin). Authorized like the interaction it belongs to: a restricted caller only for interactions addressed to it. 404 unknown, deleted with its interaction, or not visible to the caller.",
    ...DOOR,
    auth: { tag: "interactions" },
    pinnable: false,
    params: z.object({ media_id: z.string().regex(MEDIA_ID_PATTERN, { message: "must be a media id (43 url-safe characters)" }) }),
    produces: "application/octet-stream",
    errors: [404],
  },
  async (c, { params, principal }) => {
    const caller = callerOf(principal);
    const obj = await c.env.INTERACTION_MEDIA.get(mediaKey(params.media_id));
    const meta = obj?.customMetadata ?? {};
    // A restricted caller: the interaction it belongs to must be visible to it (addressed to it, in
    // its key's lineage). Its state is read only for such a caller, and only once the audience matches.
    const visible =
      obj !== null && (!caller.restricted || ((meta.audience ?? "") === caller.user_id && (await interactionVisible(c.env, meta.interaction_id, caller))));
    if (!obj || !visible) {
      await obj?.body.cancel();
      throw notFound("media not found");
    }
    return new Response(obj.body, {
      status: 200,
      headers: {
        "content-type": obj.httpMetadata?.contentType ?? "application/octet-stream",
        "content-length": String(obj.size),
        "content-disposition": `attachment; filename="${safeFilename(meta.filename, params.media_id)}"`,
        "x-content-type-options": "nosniff",
        "content-security-policy": "default-src 'none'; sandbox",
        "cache-control": "private, no-store",
      },
    });
  },
);

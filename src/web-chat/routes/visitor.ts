/**
 * The web channel's public doors (docs/channels.md "Web"). No api key: a visitor's session is the
 * credential (src/web-chat/session.ts), minted by the chat page (cookie) or for the widget
 * (bearer), and it is good on one identity only. A web route is a channel route on `web` whose
 * identity is the page's; a visitor's conversation is one thread object, which keeps the sessions,
 * the transcript and the live sockets (src/conversations/thread/web-visitor.ts).
 */
import { Hono } from "hono";
import type { Context } from "hono";
import { z } from "zod";
import { RetryLaterError, admitChannelMessageFor } from "../../conversations/door/channel-inbound";
import { takeToken, threadStub } from "../../conversations/door/stubs";
import { threadStreamStub } from "../../conversations/model/thread-rpc";
import { interactionStub } from "../../interactions/rpc";
import { personDirectoryStub } from "../../persons/rpc";
import { channelThreadId } from "../../shared/thread-id";
import { checkParams } from "../../conversations/model/transport-bounds";
import { ATTACHMENT_ID, MAX_DEVICE_SESSIONS, WEB_HEADERS, VISITOR_ID, attachmentRef, isVerifiedVisitor } from "../../conversations/model/web";
import type { InboundAttachment } from "../../shared/media";
import { StopAnswer } from "../../conversations/model/live";
import type { Route, RouteWithKey } from "../../conversations/model/route";
import { readRouteWithKeyByChannelIdentity } from "../../conversations/store";
import { hoursView } from "../../conversations/business-hours";
import { EpochCache } from "../../platform/epochs/cache";
import type { AppEnv } from "../../platform/http/app-env";
import { readStreamCapped } from "../../platform/http/body";
import { type JsonObject, jsonObjectSchema } from "../../platform/http/bounded-json";
import { HttpError, serverError } from "../../platform/http/errors";
import { addPublicRoute } from "../../platform/http/route";
import { WEB_PAGE_CSP, refusalPage, renderChatPage, serveWebAsset, webManifest } from "../assets";
import type { StringKey } from "../strings/en";
import { STRING_TABLES, pageLocale, stringsVersion } from "../strings/index";
import { LOCALES, type Locale } from "../strings/locales";
import { admitEntry } from "../gates";
import { type Site, WebIdentity, readSite } from "../sites";
import { AttachmentPolicy } from "../attachments";
import { PrechatSchema, ProfileAnswers, answersText, checkAnswers, prechatSchema, vouchedNames } from "../prechat";
import type { WebProfile } from "../../conversations/model/web";
import { type Vouched, type VisitorProfile, composeProfile } from "../../shared/visitor-profile";
import { MAX_USER_ID, hasProof, userVisitorId, verificationRequired, verifyUser } from "../verification";
import {
  type Credential,
  type CredentialMode,
  bearerToken,
  mintToken,
  networkBucket,
  originMismatch,
  ownOrigin,
  readCredential,
  requireOrigin,
  secretHash,
  sessionCookie,
  sessionMissing,
  tokenCredential,
} from "../session";

export const webChannelRouter = new Hono<AppEnv>();

const identitySchema = WebIdentity;
/** Most uploads one message carries. */
const MAX_MESSAGE_ATTACHMENTS = 10;
const identityBody = z.object({ identity: identitySchema }).strict();
const clientMessageId = z.string().regex(/^[A-Za-z0-9_-]{8,64}$/, { message: "must be 8 to 64 characters of [A-Za-z0-9_-]" });
const messageBody = z
  .object({
    identity: identitySchema,
    text: z.string().max(8000),
    client_message_id: clientMessageId.optional(),
    /** An ask-less form's submission (the fields of a schema an answer carried). */
    form: jsonObjectSchema.optional(),
    /** The pre-chat form's answers (src/web-chat/prechat.ts), checked against the identity's form. */
    profile: ProfileAnswers.optional(),
    /** The visitor's uploads this message carries (`POST attachments` answered their ids). */
    attachments: z
      .array(z.string().regex(ATTACHMENT_ID, { message: "must be an attachment id" }))
      .min(1)
      .max(MAX_MESSAGE_ATTACHMENTS)
      .optional(),
  })
  .strict();
const sessionBody = z
  .object({
    identity: identitySchema,
    entry_code: z.string().max(200).optional(),
    /** A verified user (src/web-chat/verification.ts): a token, or the user id with its HMAC. */
    user_token: z.string().max(4096).optional(),
    user_id: z.string().max(MAX_USER_ID).optional(),
    user_hash: z.string().max(128).optional(),
  })
  .strict();
const stopBody = z.object({ identity: identitySchema, message_id: z.string().min(1).max(128).optional() }).strict();

/**
 * Link parameters the page URL may carry that are not the target's: every `tai_` one is the page's
 * own (entry and pairing codes, the language, the look: docs/channels.md).
 */
const isPageParam = (name: string) => name.startsWith("tai_");
const TICKET_TTL_MS = 60_000;

/** What a web door reads for an identity: its route (with key and target facts) and its site. */
interface WebRead {
  found: RouteWithKey;
  site: Site;
}

/**
 * The route and the site of each identity, cached per isolate under the identity's access epoch:
 * a change to the route, its key, its target or the site bumps it (migrations/0026_access_changes.sql),
 * so a steady visitor's message costs no D1 round trip. An identity with no route is cached too:
 * creating its route bumps the same epoch.
 */
const webReads = new EpochCache<WebRead>(2048);

/** The route and the identity's site, from the cache, or read side by side from D1. */
export async function webRead(c: Context<AppEnv>, identity: string): Promise<WebRead> {
  return webReads.read(c.env, `ident:web:${identity}`, async () => {
    const [found, site] = await Promise.all([readRouteWithKeyByChannelIdentity(c.env.DB, "web", identity), readSite(c.env.DB, identity)]);
    return { found, site };
  });
}

/** The web route for `identity` with its key and target, and when it was read; 404 when there is none. */
async function webRoute(c: Context<AppEnv>, identity: string): Promise<{ at: number; found: RouteWithKey; route: Route }> {
  return (await routeAndSite(c, identity))[0];
}

/**
 * The locale of the visitor's person, on a multichannel target (docs/persons.md): one call to the
 * target's person directory (the route's target facts come from the identity's cache); null when
 * the target is not multichannel, the visitor has no person yet or the person has no locale.
 */
async function personLocale(c: Context<AppEnv>, read: { found: RouteWithKey; route: Route }, identity: string, visitorId: string): Promise<string | null> {
  if (!read.found.target.config?.multichannel) return null;
  const { route } = read;
  const person = await personDirectoryStub(c.env, route.target_kind, route.target_name).resolve({
    door: "channel",
    channel: "web",
    our_identity: route.our_identity ?? identity,
    address: visitorId,
  });
  return person?.locale ?? null;
}

/** The route (404 when none) and the identity's site. */
export async function routeAndSite(c: Context<AppEnv>, identity: string): Promise<[{ at: number; found: RouteWithKey; route: Route }, Site]> {
  const at = Date.now();
  const read = await webRead(c, identity);
  const route = read.found.route;
  if (!route || route.door !== "channel") throw new HttpError(404, "no web route has this identity", "unknown_identity");
  return [{ at, found: read.found, route }, read.site];
}

/** The visitor's profile as each of their turns carries it (null: nothing given). */
const profileOf = (p: WebProfile | null): VisitorProfile | null => (p ? composeProfile(p.answers, p.vouched) : null);

/** The visitor's session on `route`, checked in its thread; refused like an unknown one otherwise. */
export async function session(c: Context<AppEnv>, route: Route, identity: string, cred: Credential | null, params?: Record<string, string>) {
  if (!cred) throw sessionMissing();
  // An identity switched to verified visitors only refuses an anonymous session at its next use.
  if (!isVerifiedVisitor(cred.visitorId) && (await webRead(c, identity)).site.require_verified) throw verificationRequired();
  const s = c.get("settings").web;
  const threadId = channelThreadId(route.route_name, cred.visitorId);
  const check = await threadStub(c.env, threadId).webCheck(identity, cred.secretHash, s.sessionTtlSeconds * 1000, params);
  if (!check.ok) throw sessionMissing();
  return { threadId, params: check.params, profile: check.profile ?? null };
}

/**
 * Spends one of the client network's session mints (CHANNEL_WEB_SESSIONS_PER_HOUR), counted in a
 * rate-bucket object like the message cap, so minting makes no D1 statement; over the cap is 429
 * too_many_sessions. Taken before anything is minted or ended.
 */
async function spendMint(c: Context<AppEnv>): Promise<void> {
  const verdict = await takeToken(c.env, c.get("settings").conversations, `web-session:${networkBucket(c.req.raw)}`, c.get("settings").web.sessionsPerHour);
  if (!verdict.allowed) {
    const retry = String(Math.max(1, Math.ceil(verdict.retryAfterSeconds)));
    throw new HttpError(429, "too many new chat sessions from this network; try again later", "too_many_sessions", undefined, { "Retry-After": retry });
  }
}

/**
 * Opens a fresh session on `route` for a new visitor and answers its token; `spent` when the
 * caller has already spent the network's mint (see `spendMint`).
 */
async function openSession(
  c: Context<AppEnv>,
  route: Route,
  identity: string,
  params: Record<string, string> | null,
  spent = false,
  visitorId?: string,
  vouched?: Vouched,
) {
  const s = c.get("settings").web;
  if (!spent) await spendMint(c);
  const fresh = mintToken();
  // A verified user's address is derived from their user id, so their sessions share one thread.
  const minted = visitorId ? { visitorId, secret: fresh.secret, token: `${visitorId}.${fresh.secret}` } : fresh;
  await threadStub(c.env, channelThreadId(route.route_name, minted.visitorId)).webOpen(
    identity,
    await secretHash(minted.secret),
    s.pendingTtlSeconds * 1000,
    params,
    visitorId ? MAX_DEVICE_SESSIONS : 1,
    vouched,
  );
  return { ...minted, expires_at: new Date(Date.now() + s.pendingTtlSeconds * 1000).toISOString() };
}

export function corsHeaders(c: Context<AppEnv>, mode: CredentialMode, origin: string): Record<string, string> {
  return mode === "bearer" ? { "Access-Control-Allow-Origin": origin, Vary: "Origin" } : {};
}

export function json(c: Context<AppEnv>, data: unknown, status: number, headers: Record<string, string>): Response {
  return new Response(JSON.stringify({ data }), { status, headers: { "content-type": "application/json; charset=UTF-8", ...headers } });
}

/** The visitor's POST doors (the operator's configuration doors under the same prefix take api keys). */
const VISITOR_POSTS =
  /^\/api\/channels\/web\/(messages|stop|feedback|config|session|session\/rotate|session\/end|session\/merge|stream-ticket|attachments|questions\/[^/]+\/answer)$/;
/** The visitor's GET door the widget calls with its bearer header (so the browser preflights it). */
const VISITOR_GETS = /^\/api\/channels\/web\/attachments\/[^/]+$/;

// Before anything is read: a visitor's POST without an Origin, or from a foreign origin without the
// widget's bearer header, is refused whatever its body. The identity's own list is checked once the
// body names the identity; the widget's first POST (`session`) has no bearer yet and is held to that list.
webChannelRouter.use("/api/channels/web/*", async (c, next) => {
  // A cross-origin POST with a bearer header is preflighted. The preflight is protocol, not a door:
  // it names nothing and admits any origin, because the real request is then held to the
  // identity's allowed origins.
  const get = VISITOR_GETS.test(c.req.path);
  if (c.req.method === "OPTIONS" && (get || VISITOR_POSTS.test(c.req.path))) {
    const origin = c.req.header("origin");
    if (!origin) return c.body(null, 204);
    return c.body(null, 204, {
      "Access-Control-Allow-Origin": origin,
      "Access-Control-Allow-Methods": get ? "GET" : "POST",
      "Access-Control-Allow-Headers": "authorization, content-type, x-filename",
      "Access-Control-Max-Age": "600",
      Vary: "Origin",
    });
  }
  let listed: string | null = null;
  if (c.req.method === "POST" && VISITOR_POSTS.test(c.req.path)) {
    const origin = c.req.header("origin");
    if (!origin) throw originMismatch();
    if (origin !== ownOrigin(c)) {
      if (c.req.path === "/api/channels/web/session") {
        // The widget's first POST has no bearer yet: its origin is held to the list of the
        // identity it names, before the body is validated any further.
        if (!(await listedOrigin(c, origin))) throw originMismatch();
        listed = origin;
      } else if (bearerToken(c.req.raw) === null) throw originMismatch();
      else if (await listedOrigin(c, origin)) listed = origin;
    }
  }
  await next();
  // A refusal to a widget on a page the identity lists says why (its session ended, its user's
  // token expired), so the widget can mint again or ask its page for a fresh token. A page the
  // identity does not list still gets no Access-Control-Allow-Origin: the browser hides even the status.
  if (listed && !c.res.headers.has("access-control-allow-origin")) {
    const res = new Response(c.res.body, c.res);
    res.headers.set("Access-Control-Allow-Origin", listed);
    res.headers.append("Vary", "Origin");
    c.res = res;
  }
});

/** True when the body's `identity` lists `origin` (a body that names no identity lists nothing). */
async function listedOrigin(c: Context<AppEnv>, origin: string): Promise<boolean> {
  let identity: unknown = null;
  const raw = await readStreamCapped(c.req.raw.clone().body, c.get("settings").web.maxBodyBytes);
  if (!raw) return false;
  try {
    const body: unknown = JSON.parse(new TextDecoder().decode(raw));
    identity = body && typeof body === "object" && "identity" in body ? body.identity : null;
  } catch {
    return false;
  }
  if (typeof identity !== "string" || !WebIdentity.safeParse(identity).success) return false;
  return (await webRead(c, identity)).site.allowed_origins.includes(origin);
}

/** The body cap of the web doors, below the service's 1 MiB. */
function capBody(c: Context<AppEnv>, raw: Uint8Array | null): void {
  const max = c.get("settings").web.maxBodyBytes;
  if (raw && raw.byteLength > max) throw new HttpError(413, `request body exceeds ${max} bytes`, "body_too_large");
}

/**
 * What every visitor POST starts with: the body cap, the credential, the route and site, the
 * Origin rule for the credential's mode (`bearer` forces the widget's rule), and the live session.
 */
export async function visitorRequest(c: Context<AppEnv>, identity: string, raw: Uint8Array | null, mode?: CredentialMode) {
  capBody(c, raw);
  const found = await readCredential(c.req.raw, identity);
  const [read, site] = await routeAndSite(c, identity);
  const origin = requireOrigin(c, mode ?? found?.mode ?? (bearerToken(c.req.raw) !== null ? "bearer" : "cookie"), site.allowed_origins);
  const current = await session(c, read.route, identity, found);
  if (!found) throw sessionMissing();
  return { cred: found, read, site, origin, current };
}

export const publicDoor = { area: "channels", auth: { public: true } as const, store: "conversations" as const };

addPublicRoute(
  webChannelRouter,
  {
    ...publicDoor,
    method: "post",
    path: "/api/channels/web/messages",
    links: "redeem",
    summary: "Web chat: the visitor sends one message into their own conversation",
    description:
      "Public; the visitor's session (the page's cookie, or the widget's bearer token) is the credential, and the Origin must be the page's own or one allowed for the identity (403 origin_mismatch). `client_message_id` (8–64 of [A-Za-z0-9_-]) makes a retry count once. The rate cap counts the client's network, not the visitor. " +
      "`profile` carries the pre-chat form's answers (docs/channels.md, \"Pre-chat form\"), checked against the identity's form: an unknown field, a wrong type, a missing required field or a field the site already vouches for is 400 invalid_profile naming the field, and nothing is kept. Without `text` the message's text is the answers, one `label: answer` line each. The answers are kept with the session and every later turn carries them as the visitor's `profile`." +
      "`attachments` (at most 10) names the visitor's own uploads (`POST attachments`); one this conversation does not hold (another visitor's, expired, forgotten) is 400 unknown_attachment naming its index. They reach the target as the turn's `attachments`, `url` a `web-attachment:{route_name}/{id}` reference (docs/channels.md, \"Attachments\").",
    body: messageBody,
    response: z.object({ message_id: z.string() }),
    errors: [401, 403, 404, 413, 429, 503],
  },
  async (c, { body, raw }) => {
    const { cred, read, site, origin, current } = await visitorRequest(c, body.identity, raw);
    const { params } = current;
    let text = body.text;
    let kept = current.profile;
    const answers = body.profile ? checkAnswers(site.prechat, body.profile, vouchedNames(kept?.vouched)) : null;
    if (answers) {
      kept = { answers, vouched: kept?.vouched ?? null };
      if (!text.trim()) text = answersText(site.prechat, answers);
    }
    if (!text.trim() && !body.form && !body.attachments) throw new HttpError(400, "text must not be blank", "blank");
    let attachments: InboundAttachment[] | undefined;
    if (body.attachments) {
      const held = await threadStub(c.env, current.threadId).webAttachments(body.attachments);
      if (!Array.isArray(held))
        throw new HttpError(400, `invalid body: attachments.${held.missing}: names no upload of this conversation`, "unknown_attachment");
      attachments = held.map((a) => ({
        kind: a.kind,
        url: attachmentRef(read.route.route_name, a.attachment_id),
        filename: a.filename,
        mime_type: a.content_type,
      }));
    }
    const messageId = await admitVisitorMessage(
      c,
      read,
      body.identity,
      cred,
      text,
      body.client_message_id ?? null,
      params,
      body.form,
      profileOf(kept),
      attachments,
    );
    // Kept only once the message is in, so a refused message leaves no answers behind.
    if (answers) await threadStub(c.env, current.threadId).webAnswers(answers);
    return json(c, { message_id: messageId }, 200, corsHeaders(c, cred.mode, origin));
  },
);

const configBody = z.object({ identity: identitySchema }).strict();

addPublicRoute(
  webChannelRouter,
  {
    ...publicDoor,
    method: "post",
    path: "/api/channels/web/config",
    summary:
      "Web chat: what the page shows about its route and visitor: open now, the next opening, the expected reply time, the pre-chat form, the person's locale",
    description:
      "Public; the visitor's session and a matching Origin, as for `messages`. From the route's business hours (docs/inbox.md, \"Business hours\"): `open_now` (true when the route has none), `next_opening` (ISO-8601; null while open or when the week has no hours), `reply_time_text` and `reply_time_seconds` (null when unset). The hours ride in the identity's cached route read: no D1 statement while they are unchanged. " +
      "`prechat`: the identity's pre-chat form as a form schema (`{type: object, properties, required}`, docs/channels.md \"Pre-chat form\"), without the fields the site vouches for in this verified visitor's token; null when there is none or nothing is left to ask. It rides with the identity's cached site read. " +
      '`attachments`: what the visitor may upload (`{enabled, max_bytes, allowed_types}`, docs/channels.md "Attachments"), from the same cached site read. ' +
      "`locale`: the visitor's person's locale (a BCP 47 tag, docs/persons.md) on a multichannel target, which the widget speaks when its tag names no language; null when the target is not multichannel or the visitor has no person (yet) or the person no locale. One call to the target's person directory, no D1 statement.",
    body: configBody,
    response: z.object({
      open_now: z.boolean(),
      next_opening: z.string().nullable(),
      reply_time_text: z.string().nullable(),
      reply_time_seconds: z.number().nullable(),
      prechat: PrechatSchema.nullable(),
      attachments: AttachmentPolicy,
      locale: z.string().nullable(),
    }),
    errors: [401, 403, 404, 413],
  },
  async (c, { body, raw }) => {
    const { cred, read, site, origin, current } = await visitorRequest(c, body.identity, raw);
    const view = hoursView(read.found.target.hours ?? null, new Date());
    const prechat = prechatSchema(site.prechat, vouchedNames(current.profile?.vouched));
    const locale = await personLocale(c, read, body.identity, cred.visitorId);
    return json(c, { ...view, prechat, attachments: site.attachments, locale }, 200, corsHeaders(c, cred.mode, origin));
  },
);

addPublicRoute(
  webChannelRouter,
  {
    ...publicDoor,
    method: "post",
    path: "/api/channels/web/stop",
    summary: "Web chat: the visitor stops the answer being written in their own conversation",
    description:
      "Public; the visitor's session and a matching Origin, as for `messages`. Stops the turn running on the visitor's own thread (only the one `message_id` names, when given): its answer becomes the draft written so far, marked `stopped: true` (nothing written: silence), and the next queued message's turn runs. `stopped: false` when no turn of this visitor runs. A turn kept on a linked person's thread is stopped by the operator door instead (docs/web-channel-client.md).",
    body: stopBody,
    response: StopAnswer,
    errors: [401, 403, 404, 413],
  },
  async (c, { body, raw }) => {
    const { cred, origin, current } = await visitorRequest(c, body.identity, raw);
    const answer = await threadStub(c.env, current.threadId).stopTurn(body.message_id ?? null);
    return json(c, answer, 200, corsHeaders(c, cred.mode, origin));
  },
);

addPublicRoute(
  webChannelRouter,
  {
    ...publicDoor,
    method: "post",
    path: "/api/channels/web/session",
    summary: "Web chat: a session for the embeddable widget",
    description:
      "Public; only from an origin allowed for the identity (403 origin_mismatch). Answers a bearer token for this identity, which the widget keeps and sends as `Authorization: Bearer`. A gated identity needs a live `entry_code` (403 entry_refused). New sessions are capped per client network (CHANNEL_WEB_SESSIONS_PER_HOUR: 429 too_many_sessions with Retry-After); one whose token never comes back is swept after CHANNEL_WEB_PENDING_TTL_SECONDS. " +
      "A signed-in user of the site (docs/channels.md, \"Verified visitors\") comes with `user_token` (HS256 `{sub, iat, exp, name?, email?}` signed with the identity's verification secret, `exp` at most 1 h ahead) or `user_id` with `user_hash` (hex HMAC-SHA256 of the user id): the session is then on the user's own address, the same from every device. " +
      "A malformed proof is 400 invalid_user_proof, one the identity has no secret for 400 verification_not_configured, a wrong signature 401 user_unverified, an expired token 401 user_token_expired; an identity requiring verified visitors refuses a session without a proof (401 verification_required).",
    body: sessionBody,
    response: z.object({ token: z.string(), expires_at: z.string() }),
    errors: [400, 401, 403, 404, 413, 429],
  },
  async (c, { body, raw }) => {
    capBody(c, raw);
    const [read, site] = await routeAndSite(c, body.identity);
    const origin = requireOrigin(c, "bearer", site.allowed_origins);
    // The proof is checked before the gate and the mint, so a forged one spends nothing.
    const user = hasProof(body) ? await verifyUser(c.env.DB, c.get("settings").config, body.identity, body, Date.now()) : null;
    if (!user && site.require_verified) throw verificationRequired();
    if (site.gate_enabled) await requireEntry(c, body.identity, body.entry_code ?? null);
    const visitorId = user ? await userVisitorId(body.identity, user.userId) : undefined;
    // A token's claims are what the site vouches for now (none: none); a hash proof carries none and changes nothing.
    const vouched: Vouched | undefined =
      user && body.user_token !== undefined ? { ...(user.name ? { name: user.name } : {}), ...(user.email ? { email: user.email } : {}) } : undefined;
    const minted = await openSession(c, read.route, body.identity, null, false, visitorId, vouched);
    return json(c, { token: minted.token, expires_at: minted.expires_at }, 200, corsHeaders(c, "bearer", origin));
  },
);

addPublicRoute(
  webChannelRouter,
  {
    ...publicDoor,
    method: "post",
    path: "/api/channels/web/session/rotate",
    summary: "Web chat: a new conversation on a fresh address",
    description:
      "Public; needs the visitor's current session and a matching Origin. Ends the current session and opens a new one on a new, anonymous visitor address: the page gets a new cookie, the widget a new token. A signed-in user's session ends alone: the user's other devices keep theirs and the user's conversation, which this device leaves (docs/channels.md, \"Several devices\"). An identity requiring verified visitors refuses it (401 verification_required). The new session counts against the network's cap (429 too_many_sessions, the current session kept).",
    body: identityBody,
    response: z.object({ rotated: z.boolean(), token: z.string().optional(), expires_at: z.string().optional() }),
    errors: [401, 403, 404, 413, 429],
  },
  async (c, { body, raw }) => {
    const { cred, read, origin, current } = await visitorRequest(c, body.identity, raw);
    // A fresh address is an anonymous one, which an identity for verified visitors only refuses.
    if ((await webRead(c, body.identity)).site.require_verified) throw verificationRequired();
    // The mint is spent before the current session ends, so a refusal leaves the visitor as they were.
    await spendMint(c);
    // A verified user's thread is shared by their devices: only this device's session ends.
    await threadStub(c.env, current.threadId).webEnd(false, isVerifiedVisitor(cred.visitorId) ? cred.secretHash : undefined);
    const minted = await openSession(c, read.route, body.identity, null, true);
    const s = c.get("settings").web;
    if (cred.mode === "bearer") return json(c, { rotated: true, token: minted.token, expires_at: minted.expires_at }, 200, corsHeaders(c, "bearer", origin));
    return json(c, { rotated: true }, 200, { "Set-Cookie": sessionCookie(body.identity, minted.token, s.sessionTtlSeconds, s.cookieSecure, c.req.url) });
  },
);

addPublicRoute(
  webChannelRouter,
  {
    ...publicDoor,
    method: "post",
    path: "/api/channels/web/session/end",
    summary: "Web chat: the visitor ends their own session (signs this device out)",
    description:
      "Public; needs the session it ends and a matching Origin, as for `messages`. Ends the presented session only: its open streams are told `ended` and closed, its stream tickets go, and the token or cookie stops working. A signed-in user's other devices keep their sessions; the conversation and its records are not touched (they keep their own lifetime). The widget calls it when its page signs the user out (docs/web-channel-client.md, \"Signed-in users\"). The page's cookie is cleared.",
    body: identityBody,
    response: z.object({ ended: z.boolean() }),
    errors: [401, 403, 404, 413],
  },
  async (c, { body, raw }) => {
    const { cred, origin, current } = await visitorRequest(c, body.identity, raw);
    await threadStub(c.env, current.threadId).webEnd(false, cred.secretHash);
    if (cred.mode === "bearer") return json(c, { ended: true }, 200, corsHeaders(c, "bearer", origin));
    const s = c.get("settings").web;
    return json(c, { ended: true }, 200, { "Set-Cookie": sessionCookie(body.identity, "", 0, s.cookieSecure, c.req.url) });
  },
);

const mergeBody = z
  .object({
    identity: identitySchema,
    /** The signed-in user's session on this identity (the token `POST session` answered for their proof). */
    verified_token: z.string().max(200),
  })
  .strict();

addPublicRoute(
  webChannelRouter,
  {
    ...publicDoor,
    method: "post",
    path: "/api/channels/web/session/merge",
    links: "join",
    summary: "Web chat: with the visitor's consent, joins their anonymous conversation to their signed-in self",
    description:
      "Public; the credential (cookie or bearer, with a matching Origin as for `messages`) is the visitor's ANONYMOUS session, and `verified_token` is the same visitor's signed-in session on this identity (what `POST session` answered for a user proof). Each conversation is proven by its own live session; nothing else is read from the body. Both addresses then belong to one person of the route's target, the signed-in user's (the merge a pairing code makes: docs/persons.md), and the anonymous session ends. The widget calls it only after the visitor chose to keep their earlier conversation (docs/channels.md, \"Keeping an anonymous conversation\"). " +
      "400 merge_needs_anonymous when the credential is itself a signed-in session, 400 invalid_verified_token when `verified_token` is not a signed-in session token, 401 user_session_missing when it is not live on this identity, 409 merge_unavailable when the route's target keeps no persons (not multichannel).",
    body: mergeBody,
    response: z.object({ merged: z.boolean() }),
    errors: [400, 401, 403, 404, 409, 413],
  },
  async (c, { body, raw }) => {
    const { cred, read, origin, current } = await visitorRequest(c, body.identity, raw);
    if (isVerifiedVisitor(cred.visitorId))
      throw new HttpError(400, "the session presented is a signed-in user's: present the anonymous conversation's session", "merge_needs_anonymous");
    const user = await tokenCredential(body.verified_token);
    if (!user || !isVerifiedVisitor(user.visitorId))
      throw new HttpError(400, "verified_token must be a signed-in user's session token from POST session", "invalid_verified_token");
    const route = read.route;
    const userThread = channelThreadId(route.route_name, user.visitorId);
    const check = await threadStub(c.env, userThread).webCheck(body.identity, user.secretHash, c.get("settings").web.sessionTtlSeconds * 1000);
    if (!check.ok) throw new HttpError(401, "the signed-in session is not live on this identity: open it again", "user_session_missing");
    if (!read.found.target.config?.multichannel)
      throw new HttpError(409, "this chat keeps no persons, so an earlier conversation cannot be joined to a signed-in user", "merge_unavailable");
    const target = { kind: route.target_kind, name: route.target_name };
    const address = (visitor: string) => ({ door: "channel" as const, channel: "web", our_identity: body.identity, address: visitor });
    await personDirectoryStub(c.env, route.target_kind, route.target_name).join(
      { target, address: address(user.visitorId), route_name: route.route_name },
      { target, address: address(cred.visitorId), route_name: route.route_name },
      Date.now(),
    );
    // The anonymous session is given up: its conversation now lives on as the signed-in person's.
    await threadStub(c.env, current.threadId).webEnd(false);
    if (cred.mode === "bearer") return json(c, { merged: true }, 200, corsHeaders(c, "bearer", origin));
    const s = c.get("settings").web;
    return json(c, { merged: true }, 200, { "Set-Cookie": sessionCookie(body.identity, "", 0, s.cookieSecure, c.req.url) });
  },
);

addPublicRoute(
  webChannelRouter,
  {
    ...publicDoor,
    method: "post",
    path: "/api/channels/web/stream-ticket",
    summary: "Web chat: a one-time ticket for the widget's live stream",
    description:
      "Public; bearer session and an allowed Origin. A browser cannot put a header on a WebSocket, so the widget trades its token for a ticket that opens `GET /api/channels/web/stream?ticket=…` once, within 60 s. Only the ticket's hash is kept.",
    body: identityBody,
    response: z.object({ ticket: z.string() }),
    errors: [401, 403, 404, 413],
  },
  async (c, { body, raw }) => {
    const { cred, origin, current } = await visitorRequest(c, body.identity, raw, "bearer");
    const ticket = `${cred.visitorId}.${mintToken().secret}`;
    await threadStub(c.env, current.threadId).webTicket(await secretHash(ticket), TICKET_TTL_MS, cred.secretHash);
    return json(c, { ticket }, 200, corsHeaders(c, "bearer", origin));
  },
);

const streamQuery = z.object({
  identity: identitySchema,
  after: z
    .string()
    .regex(/^\d{1,15}$/, { message: "must be a whole number" })
    .optional(),
  ticket: z.string().max(200).optional(),
});

addPublicRoute(
  webChannelRouter,
  {
    ...publicDoor,
    method: "get",
    path: "/api/channels/web/stream",
    live: "websocket",
    summary: "Web chat: the visitor's live conversation (WebSocket)",
    description:
      "Public; a WebSocket upgrade with the page's cookie (same Origin) or the widget's one-time `ticket`. Sends the entries after `after`, then `{type: ready}`, then each new entry as it is written; a reload that passes its last seq sees each entry once. Each push goes only to a socket whose own session still lives (a signed-in user's devices each have theirs): once that session ended, expired or was replaced, the socket gets nothing more and is closed (code 4401), and the other devices' sockets go on.",
    query: streamQuery,
    errors: [401, 403, 404, 426, 429],
  },
  async (c, { query }) => {
    if (c.req.header("upgrade")?.toLowerCase() !== "websocket") throw new HttpError(426, "expected a WebSocket upgrade", "upgrade_required");
    const read = await webRoute(c, query.identity);
    const s = c.get("settings").web;
    const headers = new Headers({ upgrade: "websocket" });
    headers.set(WEB_HEADERS.identity, query.identity);
    headers.set(WEB_HEADERS.after, query.after ?? "0");
    headers.set(WEB_HEADERS.ttlMs, String(s.sessionTtlSeconds * 1000));
    headers.set(WEB_HEADERS.maxStreams, String(s.maxStreamsPerVisitor));
    let visitorId: string;
    if (query.ticket !== undefined) {
      const { site } = await webRead(c, query.identity);
      requireOrigin(c, "bearer", site.allowed_origins);
      visitorId = query.ticket.split(".")[0] ?? "";
      if (!VISITOR_ID.test(visitorId)) throw sessionMissing();
      headers.set(WEB_HEADERS.ticketHash, await secretHash(query.ticket));
    } else {
      requireOrigin(c, "cookie", []);
      const cred = await readCredential(c.req.raw, query.identity);
      if (!cred || cred.mode !== "cookie") throw sessionMissing();
      if (!isVerifiedVisitor(cred.visitorId) && (await webRead(c, query.identity)).site.require_verified) throw verificationRequired();
      visitorId = cred.visitorId;
      headers.set(WEB_HEADERS.secretHash, cred.secretHash);
    }
    const stub = threadStreamStub(c.env, channelThreadId(read.route.route_name, visitorId));
    return stub.fetch(new Request("https://thread/web/stream", { headers }));
  },
);

/**
 * Admits one of the visitor's messages as a turn on their thread; answers its record's id. The
 * provider id is random, or derived from the page's `client_message_id` so a retry finds the
 * first record; the rate cap counts the client's network.
 */
async function admitVisitorMessage(
  c: Context<AppEnv>,
  read: { at: number; found: RouteWithKey },
  identity: string,
  cred: Credential,
  text: string,
  clientMessageId: string | null,
  params: Record<string, string> | null,
  form?: JsonObject,
  profile?: VisitorProfile | null,
  attachments?: InboundAttachment[],
): Promise<string> {
  const providerId = clientMessageId ? `cm:${await secretHash(`${identity}:${cred.visitorId}:${clientMessageId}`)}` : `rm:${crypto.randomUUID()}`;
  let out;
  try {
    out = await admitChannelMessageFor(
      c.env,
      c.get("settings").conversations,
      "web",
      {
        kind: "message",
        provider_message_id: providerId,
        sender: cred.visitorId,
        our_identity: identity,
        text,
        ...(params ? { params } : {}),
        ...(form ? { form } : {}),
        ...(profile ? { profile } : {}),
        ...(attachments ? { attachments } : {}),
        cap_key: networkBucket(c.req.raw),
      },
      read,
    );
  } catch (err) {
    if (err instanceof RetryLaterError)
      throw serverError("queue_full", "this conversation is busy; try again shortly", { reason: "web: the thread queue is full", retryAfterSeconds: 1 });
    throw err;
  }
  if (out.verdict === "shed") throw new HttpError(429, "too many messages from this network; wait a moment", "rate_limited");
  if (!out.message_id) throw new HttpError(404, "no web route has this identity", "unknown_identity");
  return out.message_id;
}

const answerBody = z
  .object({ identity: WebIdentity, option_id: z.string().min(1).max(256).optional(), text: z.string().min(1).max(8000).optional() })
  .strict()
  .refine((b) => (b.option_id === undefined) !== (b.text === undefined), { message: "give exactly one of option_id and text" });

addPublicRoute(
  webChannelRouter,
  {
    ...publicDoor,
    method: "post",
    path: "/api/channels/web/questions/{interaction_id}/answer",
    links: "redeem",
    summary: "Web chat: the visitor answers a pending ask_user question of their own conversation",
    description:
      "Public; the visitor's session and a matching Origin. Only a question a turn of the visitor's own thread waits on: any other (another visitor's, unknown, already answered elsewhere) is 404. The answer (an option by id, or text) goes in as the visitor's next message, which the waiting turn takes.",
    params: z.object({ interaction_id: z.string().min(1).max(128) }).strict(),
    body: answerBody,
    response: z.object({ message_id: z.string() }),
    errors: [401, 403, 404, 413, 429, 503],
  },
  async (c, { params, body, raw }) => {
    const { cred, read, origin, current } = await visitorRequest(c, body.identity, raw);
    const noSuch = () => new HttpError(404, "no such question waits in this conversation", "unknown_question");
    if (!(await threadStub(c.env, current.threadId).holdsParked(params.interaction_id))) throw noSuch();
    let text = body.text ?? "";
    if (body.option_id !== undefined) {
      const state = await interactionStub(c.env, params.interaction_id).read();
      const option = state?.status === "pending" ? state.options?.find((o) => o.id === body.option_id) : undefined;
      if (!state || state.status !== "pending") throw noSuch();
      if (!option) throw new HttpError(400, "option_id names no option of this question", "unknown_option");
      text = option.text;
    }
    const messageId = await admitVisitorMessage(c, read, body.identity, cred, text, null, current.params, undefined, profileOf(current.profile));
    return json(c, { message_id: messageId }, 200, corsHeaders(c, cred.mode, origin));
  },
);

const feedbackBody = z
  .object({
    identity: WebIdentity,
    message_id: z.string().min(1).max(200),
    /** `up`: the answer helped; `down`: it did not; null takes the visitor's rating back. */
    rating: z.enum(["up", "down"]).nullable(),
  })
  .strict();

addPublicRoute(
  webChannelRouter,
  {
    ...publicDoor,
    method: "post",
    path: "/api/channels/web/feedback",
    summary: "Web chat: the visitor rates an answer of their own conversation (or takes the rating back)",
    description:
      "Public; the visitor's session and a matching Origin, as for messages. Only an answer entry (the target's or an operator's) of the visitor's own transcript can be rated: any other id (a visitor's own message, a notice, another visitor's answer, an unknown or expired one) is 404 unknown_answer, whatever it names elsewhere. `rating: null` takes the rating back; the same rating again changes nothing. The rating is kept on the answer's record (`feedback`), shown on the entry after a reload (`rating`), counted in the metrics and sent to the route's events_url as a `rated` event (docs/inbox.md, \"Answer feedback\"). Ratings from one network are capped like its messages (429 rate_limited).",
    body: feedbackBody,
    response: z.object({ message_id: z.string(), rating: z.enum(["up", "down"]).nullable() }),
    errors: [401, 403, 404, 413, 429],
  },
  async (c, { body, raw }) => {
    const { cred, read, origin, current } = await visitorRequest(c, body.identity, raw);
    const route = read.route;
    const cap = route.turns_per_hour_override ?? c.get("settings").conversations.perAddressTurnsPerHour;
    const verdict = await takeToken(c.env, c.get("settings").conversations, `web-feedback:${route.route_name}:${networkBucket(c.req.raw)}`, cap);
    if (!verdict.allowed) {
      const retry = String(Math.max(1, Math.ceil(verdict.retryAfterSeconds)));
      throw new HttpError(429, "too many ratings from this network; wait a moment", "rate_limited", undefined, { "Retry-After": retry });
    }
    const rated = await threadStub(c.env, current.threadId).webRate(body.message_id, body.rating, { route_name: route.route_name, visitor: cred.visitorId });
    if (!rated.ok) throw new HttpError(404, "no answer of this conversation has this id", "unknown_answer");
    return json(c, { message_id: body.message_id, rating: rated.rating }, 200, corsHeaders(c, cred.mode, origin));
  },
);

/** Refuses an entry with the one answer every reason gets (missing, unknown, expired, revoked, throttled). */
async function requireEntry(c: Context<AppEnv>, identity: string, code: string | null): Promise<void> {
  const s = c.get("settings").web;
  const ok = await admitEntry(c.env, identity, code, networkBucket(c.req.raw), Date.now(), {
    guesses: s.gateGuesses,
    windowSeconds: s.gateWindowSeconds,
    bucketMaxEntries: c.get("settings").conversations.addressBucketMaxEntries,
  });
  if (!ok) throw new HttpError(403, "this chat needs a valid entry link", "entry_refused");
}

/** A refusal of the page door, as a minimal HTML page in `locale`. */
function pageRefusal(locale: Locale, title: string | null, status: number, code: string, message: StringKey): Response {
  return new Response(refusalPage(locale, title, message), {
    status,
    headers: {
      "content-type": "text/html; charset=UTF-8",
      "content-security-policy": WEB_PAGE_CSP,
      "referrer-policy": "no-referrer",
      "x-content-type-options": "nosniff",
      "x-web-refusal": code,
    },
  });
}

addPublicRoute(
  webChannelRouter,
  {
    ...publicDoor,
    method: "get",
    path: "/api/channels/web/chat/{identity}",
    summary: "Web chat: the standalone chat page of one web route",
    description:
      "Public; a top-level navigation (403 not_a_navigation otherwise). Opens a session for a new visitor (a gated identity needs `?tai_entry=` with a live code: 403 entry_refused; new sessions are capped per client network: 429 too_many_sessions) and refreshes an existing one. Other query parameters, bar the page's own `tai_` ones (`tai_locale` picks the page's language before the visitor's person's and the browser's; `tai_accent`, `tai_accent_text`, `tai_background`, `tai_text`, `tai_font` and `tai_radius` its look), are captured as the visitor's link params, delivered as `params` on tool turns; a later navigation carrying some replaces them, unless another site sent it (`Sec-Fetch-Site` cross-site or same-site, or without it a foreign Origin or Referer). `tai_pair` (a pairing code) is never redeemed by this GET: the page's script offers it to the visitor, who sends it as a message. Refusals are small HTML pages, in the page's language.",
    params: z.object({ identity: identitySchema }).strict(),
    produces: "text/html",
    errors: [403, 404, 429],
  },
  async (c, { params }) => {
    const s = c.get("settings").web;
    const title = s.pageTitle;
    const url = new URL(c.req.url);
    const localeOf = (person: string | null) => pageLocale(url.searchParams.get("tai_locale"), person, c.req.header("accept-language"));
    const early = localeOf(null);
    const mode = c.req.header("sec-fetch-mode");
    if (mode && mode !== "navigate") return pageRefusal(early, title, 403, "not_a_navigation", "page.not_navigation");
    let read;
    try {
      read = await webRoute(c, params.identity);
    } catch (err) {
      if (err instanceof HttpError && err.status === 404) return pageRefusal(early, title, 404, "unknown_identity", "page.unknown");
      throw err;
    }
    const linkParams: Record<string, string> = {};
    for (const [k, v] of url.searchParams) if (!isPageParam(k)) linkParams[k] = v;
    if (checkParams(linkParams)) return pageRefusal(early, title, 400, "invalid_params", "page.bad_params");
    const cred = await readCredential(c.req.raw, params.identity);
    // A live cookie is refreshed as it is (and its link params replaced when this visit carries
    // some, unless another site sent the visitor here); otherwise a new visitor gets a session,
    // past the entry gate when the identity has one.
    const replacing = foreignNavigation(c) ? undefined : linkParams;
    let visitor: Credential | null = cred?.mode === "cookie" && (await sessionLive(c, read.route, params.identity, cred, replacing)) ? cred : null;
    // A returning visitor's person may have a locale (a new one has no person yet).
    const locale = visitor ? localeOf(await personLocale(c, read, params.identity, visitor.visitorId)) : early;
    if (!visitor) {
      const { site } = await webRead(c, params.identity);
      // The chat page cannot vouch for a user: only the widget, given a proof by the site, can.
      if (site.require_verified) return pageRefusal(locale, title, 403, "verification_required", "page.verification");
      if (site.gate_enabled) {
        try {
          await requireEntry(c, params.identity, url.searchParams.get("tai_entry"));
        } catch (err) {
          if (err instanceof HttpError && err.status === 403) return pageRefusal(locale, title, 403, "entry_refused", "page.entry");
          throw err;
        }
      }
      let minted;
      try {
        minted = await openSession(c, read.route, params.identity, Object.keys(linkParams).length ? linkParams : null);
      } catch (err) {
        if (err instanceof HttpError && err.code === "too_many_sessions") {
          const refused = pageRefusal(locale, title, 429, "too_many_sessions", "page.too_many");
          for (const [k, v] of Object.entries(err.headers ?? {})) refused.headers.set(k, v);
          return refused;
        }
        throw err;
      }
      visitor = { mode: "cookie", token: minted.token, visitorId: minted.visitorId, secretHash: await secretHash(minted.secret) };
    }
    // A pairing link (`?tai_pair=LINK-…`) is never redeemed here: a GET is what any site can make
    // a browser send with the visitor's cookie. The page's script offers the code to the visitor,
    // who sends it as a message (a POST from this origin).
    const manifest = await webManifest(c.env);
    const html = renderChatPage({ identity: params.identity, title, manifest, embedded: false, locale });
    return new Response(html, {
      status: 200,
      headers: {
        "content-type": "text/html; charset=UTF-8",
        "content-security-policy": WEB_PAGE_CSP,
        "referrer-policy": "no-referrer",
        "x-content-type-options": "nosniff",
        "cache-control": "no-store",
        "set-cookie": sessionCookie(params.identity, visitor.token, s.sessionTtlSeconds, s.cookieSecure, c.req.url),
      },
    });
  },
);

/**
 * Did another site send this navigation? `Sec-Fetch-Site` when the browser sends it (`cross-site`
 * and `same-site` are foreign: a sibling host is another party); without it, a foreign `Origin` or
 * `Referer`. A typed address or a bookmark (`none`, or neither header) is the visitor's own.
 */
function foreignNavigation(c: Context<AppEnv>): boolean {
  const site = c.req.header("sec-fetch-site");
  if (site) return site !== "same-origin" && site !== "none";
  const own = ownOrigin(c);
  const origin = c.req.header("origin");
  if (origin) return origin !== own;
  const referer = c.req.header("referer");
  if (!referer) return false;
  try {
    return new URL(referer).origin !== own;
  } catch {
    return true;
  }
}

/** Checks (and refreshes) a session; false instead of the 401 when there is none. `params` replaces its link params when given. */
async function sessionLive(c: Context<AppEnv>, route: Route, identity: string, cred: Credential, params: Record<string, string> | undefined): Promise<boolean> {
  try {
    await session(c, route, identity, cred, params);
    return true;
  } catch (err) {
    if (err instanceof HttpError && err.status === 401) return false;
    throw err;
  }
}

addPublicRoute(
  webChannelRouter,
  {
    area: "channels",
    auth: { public: true },
    method: "get",
    path: "/api/channels/web/widget.js",
    summary: "Web chat: the embeddable widget's script",
    description:
      'Public. `<script src="https://<host>/api/channels/web/widget.js" data-identity="desk" async></script>` adds a launcher and a chat panel to any page of an allowed origin.',
    produces: "text/javascript",
    errors: [404],
  },
  async (c) => (await serveWebAsset(c.env, "widget.js")) ?? c.json({ error: "not found" }, 404),
);

addPublicRoute(
  webChannelRouter,
  {
    area: "channels",
    auth: { public: true },
    method: "get",
    path: "/api/channels/web/strings/{locale}",
    summary: "Web chat: the visible strings of one language",
    description:
      `Public. The JSON object \`{key: text}\` of one shipped language (${LOCALES.join(", ")}), every key of the English table; \`{name}\` marks a placeholder. The widget fetches its language's table from here rather than carrying any (docs/channels.md, "Languages"). ` +
      "With `v` equal to the tables' current version (the widget's build carries it) the answer is cacheable for a year, `immutable`; without it, or with another version, for five minutes. Any origin may read it (`Access-Control-Allow-Origin: *`): it holds nothing but the service's own texts.",
    params: z.object({ locale: z.enum(LOCALES) }).strict(),
    query: z.object({
      v: z
        .string()
        .regex(/^[0-9a-f]{1,64}$/, { message: "must be hex digits" })
        .optional(),
    }),
    produces: "application/json",
    response: z.record(z.string(), z.string()),
  },
  async (c, { params, query }) => {
    const current = query.v !== undefined && query.v === (await stringsVersion());
    return new Response(JSON.stringify(STRING_TABLES[params.locale]), {
      status: 200,
      headers: {
        "content-type": "application/json; charset=UTF-8",
        "x-content-type-options": "nosniff",
        "access-control-allow-origin": "*",
        "cross-origin-resource-policy": "cross-origin",
        "cache-control": current ? "public, max-age=31536000, immutable" : "public, max-age=300",
      },
    });
  },
);

addPublicRoute(
  webChannelRouter,
  {
    area: "channels",
    auth: { public: true },
    method: "get",
    path: "/api/channels/web/assets/{name}",
    summary: "Web chat: one of the page's files, by exact name",
    description:
      "Public. Only the names in the build's integrity manifest are served; anything else is 404. `chat.css` is readable from any origin (the widget fetches it); with `v` equal to its version (the widget's build carries it) it is cacheable for a year, `immutable`.",
    params: z.object({ name: z.string().regex(/^[a-z0-9.-]{1,64}$/, { message: "is not an asset name" }) }).strict(),
    query: z.object({
      v: z
        .string()
        .regex(/^[0-9a-f]{1,64}$/, { message: "must be hex digits" })
        .optional(),
    }),
    errors: [404],
  },
  async (c, { params, query }) => (await serveWebAsset(c.env, params.name, query.v)) ?? c.json({ error: "not found" }, 404),
);

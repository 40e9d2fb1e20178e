/**
 * The operator console (docs/console.md): its files, the doors of its live updates, and
 * the pages that lead to it.
 *
 * - `/console/…` and `/vendor/…`: the built files in public/ (Workers static assets, binding
 *   ASSETS), each answered with the security headers and the strict CSP
 *   (src/console/security-headers.ts). `/` leads to the console, `/docs` to the API reference.
 * - `POST /api/conversations/{route_name}/live-tickets`: a one-time ticket for the route's live
 *   socket, for a key that may read the route's transcripts (checked with the real authorizer on
 *   that door's concrete path, so custom URL scopes and conditions count).
 * - `GET /api/conversations/{route_name}/live?ticket=`: the WebSocket, handed to the route's
 *   ConsoleHub, which spends the ticket. Public by declaration: the ticket is the credential (a
 *   browser cannot set a header on a WebSocket, and the key must never be in a URL).
 */
import { Hono } from "hono";
import type { Context } from "hono";
import { z } from "zod";
import { authorize, readCredential } from "../access-control/principal";
import { sha256Hex } from "../access-control/crypto";
import { requireRoute } from "../conversations/store";
import { routeParams } from "../conversations/model/schemas";
import { TICKET_TTL_MS, livePath, mintTicket, ticketHash } from "./tickets";
import { CONSOLE_CSP, secured } from "./security-headers";
import { consoleHubStub } from "./rpc";
import type { AppEnv } from "../platform/http/app-env";
import { HttpError } from "../platform/http/errors";
import { addPublicRoute, addRoute } from "../platform/http/route";

export const consoleRouter = new Hono<AppEnv>();

/**
 * The pages outside /api are not doors: no key, no route table entry, no OpenAPI operation. They
 * are served by this middleware (a GET or HEAD on one of these paths), and everything else passes.
 */
consoleRouter.use("*", async (c, next) => {
  const method = c.req.method;
  if (method !== "GET" && method !== "HEAD") return next();
  const p = c.req.path;
  if (p === "/") return c.redirect("/console/", 302);
  if (p === "/docs" || p === "/docs/") return c.redirect("/api/docs", 302);
  if (p === "/console") return c.redirect("/console/", 301);
  if (p.startsWith("/console/") || p.startsWith("/vendor/")) return asset(c);
  return next();
});

/** A built file, with the console's headers; an unknown file is the JSON 404 of every other path. */
async function asset(c: Context<AppEnv>): Promise<Response> {
  const res = await c.env.ASSETS.fetch(c.req.raw);
  if (res.status === 404) return c.json({ error: "not found" }, 404);
  return new Response(res.body, { status: res.status, statusText: res.statusText, headers: secured(res.headers, CONSOLE_CSP) });
}

export const LiveTicket = z.object({
  ticket: z.string(),
  expires_at: z.string(),
  /** The WebSocket's path; the ticket goes in its `ticket` query parameter. */
  socket_path: z.string(),
});
export type LiveTicket = z.infer<typeof LiveTicket>;

addRoute(
  consoleRouter,
  {
    method: "post",
    path: "/api/conversations/{route_name}/live-tickets",
    summary: "A one-time ticket for the route's live WebSocket (the operator console)",
    description:
      "For a key that may read the route's transcripts (`GET …/transcript` on this route, checked by the real authorizer). The ticket works once, within 30 s, for this route only: open `GET /api/conversations/{route_name}/live?ticket=…` as a WebSocket. Only the ticket's SHA-256 is stored.",
    area: "console",
    auth: { tag: "conversations", action: "read" },
    store: "conversations",
    params: routeParams,
    response: LiveTicket,
    status: 201,
    errors: [404],
  },
  async (c, { params, principal }) => {
    // The socket tells about this route's threads: the caller must be able to read them.
    await authorize(
      principal,
      { tag: "conversations", action: "read" },
      { method: "GET", path: `/api/conversations/${params.route_name}/transcript` },
      new Date(),
    );
    await requireRoute(c.env.DB, params.route_name);
    const ticket = mintTicket();
    const expiresAt = Date.now() + TICKET_TTL_MS;
    // The hub checks this key again when the ticket is spent and before every push.
    const keyHash = await sha256Hex(readCredential(c.req.raw.headers) ?? "");
    await consoleHubStub(c.env, params.route_name).keepTicket(
      await ticketHash(ticket),
      { user_id: principal.key.user_id, key_hash: keyHash, route_name: params.route_name },
      expiresAt,
    );
    const answer: LiveTicket = { ticket, expires_at: new Date(expiresAt).toISOString(), socket_path: livePath(params.route_name) };
    return answer;
  },
);

addPublicRoute(
  consoleRouter,
  {
    method: "get",
    path: "/api/conversations/{route_name}/live",
    summary: "The route's live WebSocket for the operator console (opened with a one-time ticket)",
    description:
      'A WebSocket upgrade only (426 otherwise). `ticket` comes from `POST …/live-tickets` and works once; a bad, spent or expired one is 401, and so is one whose key was revoked, disabled or narrowed since it was minted. The key is checked again before every push: once it may no longer read the route\'s transcripts, the socket gets nothing more and is closed (code 4003). Frames are JSON: `{type: "ready"}`, then `{type: "notices", notices: [{type: "thread", route_name, thread_id, status, at} | {type: "failed", route_name, thread_id, message_id}]}`: ids and a status, never message text. Send `ping` to get `pong`. A console may also send `{"type":"presence","thread_id":…,"state":"viewing"|"typing"|"left"}` (at most 20 per 10 s): the consoles of other users on the route get `{type: "presence", presence: [{route_name, thread_id, user_id, state, until}]}`, named from the key of the socket, held 30 s (viewing) or 8 s (typing) unless repeated, never stored; any other frame closes the socket (1003). The hub closes a socket after 10 minutes (code 4001): open a new ticket. A key keeps at most 8 sockets on a route (its next closes its oldest, code 4008) and a route at most 256 (429 too_many_consoles).',
    area: "console",
    auth: { public: true },
    store: "conversations",
    params: routeParams,
    query: z.object({ ticket: z.string().max(256) }),
    produces: "application/websocket",
    live: "websocket",
    status: 101,
    errors: [401, 426, 429],
  },
  async (c, { params }) => {
    if (c.req.header("upgrade")?.toLowerCase() !== "websocket")
      throw new HttpError(426, "expected a WebSocket upgrade", undefined, undefined, { Upgrade: "websocket" });
    return consoleHubStub(c.env, params.route_name).fetch(c.req.raw);
  },
);

/**
 * Web chat attachments (docs/channels.md, "Attachments"): a visitor uploads a file into their own
 * conversation, a message carries it to the route's target, and the page shows it back. Three
 * kinds of door:
 *
 * - the visitor's, behind the session exactly as `POST messages` (the page's cookie or the
 *   widget's bearer, and the Origin rule): upload, and read back an upload of their own thread;
 * - the operator's read of an upload (the route's conversations, read), which is how a target
 *   resolves the `web-attachment:` reference its turn carries;
 * - the identity's policy (what may be uploaded), beside its site's other settings.
 *
 * The bytes live in the WEB_ATTACHMENTS bucket; the visitor's thread holds the row that makes an
 * upload theirs, so both read doors ask the thread first and serve nothing it no longer holds.
 */
import { Hono } from "hono";
import type { Context } from "hono";
import { z } from "zod";
import { randomToken } from "../../access-control/crypto";
import { takeToken, threadStub } from "../../conversations/door/stubs";
import { ATTACHMENT_ID, type WebAttachment, attachmentKey } from "../../conversations/model/web";
import { routeNameSchema } from "../../conversations/model/schemas";
import type { AppEnv } from "../../platform/http/app-env";
import { readStreamCapped } from "../../platform/http/body";
import { HttpError, notFound, serverError } from "../../platform/http/errors";
import { addPublicRoute, addRoute } from "../../platform/http/route";
import { ATTACHMENT_TYPES, AttachmentPolicyBody, AttachmentPolicyView, MAX_ATTACHMENT_BYTES, checkUpload, disposition } from "../attachments";
import { type CredentialMode, bearerToken, networkBucket, originMismatch, ownOrigin, readCredential, requireOrigin } from "../session";
import { WebIdentity, readSite, writeSiteColumn } from "../sites";
import { corsHeaders, json, publicDoor, routeAndSite, session, visitorRequest, webRead } from "./visitor";

export const webAttachmentsRouter = new Hono<AppEnv>();

const attachmentIdSchema = z.string().regex(ATTACHMENT_ID, { message: "must be an attachment id (43 url-safe characters)" });

const Uploaded = z
  .object({ attachment_id: z.string(), kind: z.enum(["image", "document"]), content_type: z.string(), bytes: z.number(), filename: z.string() })
  .describe("WebAttachment");

/** The file name the upload names in `x-filename` (percent-encoded UTF-8), or null. */
function filenameOf(c: Context<AppEnv>): string | null {
  const raw = c.req.header("x-filename");
  if (!raw) return null;
  if (raw.length > 1024) throw new HttpError(400, "invalid header: x-filename: must be at most 1024 characters", "invalid_filename");
  try {
    return decodeURIComponent(raw);
  } catch {
    throw new HttpError(400, "invalid header: x-filename: must be percent-encoded UTF-8", "invalid_filename");
  }
}

addPublicRoute(
  webAttachmentsRouter,
  {
    ...publicDoor,
    method: "post",
    path: "/api/channels/web/attachments",
    summary: "Web chat: the visitor uploads a file into their own conversation",
    description:
      "Public; the visitor's session and a matching Origin, as for `messages`. The body is the file's bytes; `Content-Type` and `x-filename` (percent-encoded) may say what it is. " +
      "The type is what the bytes are (their signature: PNG, JPEG, GIF, WebP, PDF, or UTF-8 text), never what the upload claims: a Content-Type or a file name extension that says otherwise is 415 disguised_type, a type the identity does not allow 415 type_not_allowed, one no signature matches 415 unsupported_type; past the identity's `max_bytes` 413 attachment_too_large. " +
      "Uploads from one client network are capped (CHANNEL_WEB_UPLOADS_PER_HOUR: 429 too_many_uploads with Retry-After), and a visitor holds at most 20 unsent (429 too_many_attachments). A refusal stores nothing. " +
      "Answers 201 `{attachment_id, kind, content_type, bytes, filename}`; `POST messages` sends it with `attachments: [attachment_id]`. An upload no message carried is deleted after an hour.",
    query: z.object({ identity: WebIdentity }),
    streamedBody: "application/octet-stream",
    response: Uploaded,
    status: 201,
    errors: [401, 403, 404, 413, 415, 429, 503],
  },
  async (c, { query }) => {
    const { cred, read, origin, current } = await visitorRequest(c, query.identity, null);
    const policy = (await webRead(c, query.identity)).site.attachments;
    if (!policy.enabled) throw new HttpError(403, "this chat does not take attachments", "attachments_disabled");
    const tooLarge = () => new HttpError(413, `an upload is limited to ${policy.max_bytes} bytes on this chat`, "attachment_too_large");
    const declared = Number(c.req.header("content-length") ?? "NaN");
    if (Number.isFinite(declared) && declared > policy.max_bytes) throw tooLarge();
    // Every upload counts against the network, refused or not, before its body is read.
    const verdict = await takeToken(c.env, c.get("settings").conversations, `web-upload:${networkBucket(c.req.raw)}`, c.get("settings").web.uploadsPerHour);
    if (!verdict.allowed) {
      const retry = String(Math.max(1, Math.ceil(verdict.retryAfterSeconds)));
      throw new HttpError(429, "too many uploads from this network; try again later", "too_many_uploads", undefined, { "Retry-After": retry });
    }
    const bytes = await readStreamCapped(c.req.raw.body, policy.max_bytes);
    if (!bytes) throw tooLarge();
    const checked = checkUpload(policy, bytes, c.req.header("content-type") ?? null, filenameOf(c));
    if (!checked.ok) throw new HttpError(checked.status, checked.error, checked.code);
    const attachment: WebAttachment = {
      attachment_id: randomToken(),
      kind: checked.kind,
      content_type: checked.contentType,
      bytes: bytes.byteLength,
      filename: checked.filename,
    };
    const thread = threadStub(c.env, current.threadId);
    // The thread's row first: bytes are never stored that no thread would delete.
    if (!(await thread.webAttachAdd(attachment)))
      throw new HttpError(429, "this conversation holds too many unsent attachments: send or wait for them to expire", "too_many_attachments");
    try {
      await c.env.WEB_ATTACHMENTS.put(attachmentKey(attachment.attachment_id), bytes, {
        httpMetadata: { contentType: attachment.content_type },
        customMetadata: { route_name: read.route.route_name, home: current.threadId },
      });
    } catch (err) {
      await thread.webAttachRemove(attachment.attachment_id);
      throw serverError("attachment_store_unavailable", "the attachment could not be stored; try again", {
        reason: `web attachments: the bucket refused a put (${err instanceof Error ? err.name : "unknown error"})`,
        retryAfterSeconds: 1,
      });
    }
    return json(c, attachment, 201, corsHeaders(c, cred.mode, origin));
  },
);

/** The headers every served upload carries: its stored type, never sniffed, never run as a page. */
function servedHeaders(a: WebAttachment, size: number, inline: boolean): Record<string, string> {
  return {
    "content-type": a.content_type,
    "content-length": String(size),
    "content-disposition": disposition(inline ? "inline" : "attachment", a.filename),
    "x-content-type-options": "nosniff",
    "content-security-policy": "default-src 'none'; sandbox",
    "cross-origin-resource-policy": "same-origin",
    "referrer-policy": "no-referrer",
    "cache-control": "private, no-store",
  };
}

/** The bytes of `a`, or null when the bucket no longer holds them. */
async function served(c: Context<AppEnv>, a: WebAttachment, inline: boolean, extra: Record<string, string> = {}): Promise<Response | null> {
  const obj = await c.env.WEB_ATTACHMENTS.get(attachmentKey(a.attachment_id));
  if (!obj) return null;
  return new Response(obj.body, { status: 200, headers: { ...servedHeaders(a, obj.size, inline), ...extra } });
}

/**
 * The Origin rule of a visitor's GET: the widget's bearer comes from an allowed origin (a CORS
 * request carries its Origin); the page's cookie only from the page itself: a browser names
 * another site in `Sec-Fetch-Site` or `Origin`, and is refused.
 */
function readerOrigin(c: Context<AppEnv>, mode: CredentialMode, allowed: readonly string[]): string | null {
  if (mode === "bearer") return requireOrigin(c, "bearer", allowed);
  const site = c.req.header("sec-fetch-site");
  const origin = c.req.header("origin");
  if ((site && site !== "same-origin") || (origin && origin !== ownOrigin(c))) throw originMismatch();
  return null;
}

addPublicRoute(
  webAttachmentsRouter,
  {
    ...publicDoor,
    method: "get",
    path: "/api/channels/web/attachments/{attachment_id}",
    summary: "Web chat: the visitor reads back an upload of their own conversation",
    description:
      "Public; the visitor's session: the page's cookie (from the page itself: a request another site made is 403 origin_mismatch) or the widget's bearer from an allowed origin. Only an upload this visitor's conversation holds: any other id (another visitor's, expired, forgotten) is 404 unknown_attachment. " +
      "Served with its checked type, `X-Content-Type-Options: nosniff`, a `default-src 'none'; sandbox` policy and `Content-Disposition` (inline for images, attachment for everything else).",
    params: z.object({ attachment_id: attachmentIdSchema }).strict(),
    query: z.object({ identity: WebIdentity }),
    produces: "application/octet-stream",
    errors: [401, 403, 404],
  },
  async (c, { params, query }) => {
    const cred = await readCredential(c.req.raw, query.identity);
    const mode: CredentialMode = cred?.mode ?? (bearerToken(c.req.raw) !== null ? "bearer" : "cookie");
    const [read, site] = await routeAndSite(c, query.identity);
    const origin = readerOrigin(c, mode, site.allowed_origins);
    const current = await session(c, read.route, query.identity, cred);
    const noSuch = () => new HttpError(404, "no upload of this conversation has this id", "unknown_attachment");
    const held = await threadStub(c.env, current.threadId).webAttachments([params.attachment_id]);
    if (!Array.isArray(held)) throw noSuch();
    const cors = origin && cred ? corsHeaders(c, cred.mode, origin) : {};
    const res = await served(c, held[0], held[0].kind === "image", cors);
    if (!res) throw noSuch();
    return res;
  },
);

addRoute(
  webAttachmentsRouter,
  {
    method: "get",
    path: "/api/conversations/{route_name}/attachments/{attachment_id}",
    summary: "Download an attachment a web visitor sent on this route",
    description:
      "Resolves the `web-attachment:{route_name}/{attachment_id}` reference a web turn's attachment carries (docs/channels.md, \"Attachments\"): the stored bytes with their checked type, `X-Content-Type-Options: nosniff`, a `default-src 'none'; sandbox` policy and `Content-Disposition: attachment`. 404 for an upload of another route, and for one forgotten, erased or past its retention with the conversation that carried it.",
    area: "conversations",
    auth: { tag: "conversations" },
    store: "conversations",
    pinnable: false,
    params: z.object({ route_name: routeNameSchema, attachment_id: attachmentIdSchema }).strict(),
    produces: "application/octet-stream",
    errors: [404],
  },
  async (c, { params }) => {
    const head = await c.env.WEB_ATTACHMENTS.head(attachmentKey(params.attachment_id));
    const meta = head?.customMetadata ?? {};
    if (!head || meta.route_name !== params.route_name || !meta.home) throw notFound("attachment not found");
    // The visitor's thread decides whether the upload still exists: a forgotten one may still be
    // in the bucket for a moment, but it is gone.
    const held = await threadStub(c.env, meta.home).webAttachments([params.attachment_id]);
    if (!Array.isArray(held)) throw notFound("attachment not found");
    const res = await served(c, held[0], false);
    if (!res) throw notFound("attachment not found");
    return res;
  },
);

const DOOR = { area: "channels", auth: { tag: "channels" }, store: "conversations" } as const;
const identityParams = z.object({ identity: WebIdentity });

addRoute(
  webAttachmentsRouter,
  {
    method: "get",
    path: "/api/channels/web/sites/{identity}/attachments",
    summary: "What a web identity's visitors may upload",
    description: `\`{identity, enabled, max_bytes, allowed_types}\`. An identity never configured answers the defaults: on, images (PNG, JPEG, GIF, WebP) and PDF, up to 5 MiB.`,
    ...DOOR,
    params: identityParams,
    response: AttachmentPolicyView,
  },
  async (c, { params }) => ({ identity: params.identity, ...(await readSite(c.env.DB, params.identity)).attachments }),
);

addRoute(
  webAttachmentsRouter,
  {
    method: "put",
    path: "/api/channels/web/sites/{identity}/attachments",
    summary: "Set what a web identity's visitors may upload",
    description:
      `\`{enabled?, max_bytes?, allowed_types?}\`; the fields given replace the current ones. \`max_bytes\` is 1 to ${MAX_ATTACHMENT_BYTES}; \`allowed_types\` lists some of ${ATTACHMENT_TYPES.join(", ")} (\`[]\` allows none). ` +
      "Applies to uploads from now on; uploads already made are kept. Answers the policy as GET does.",
    ...DOOR,
    params: identityParams,
    body: AttachmentPolicyBody,
    response: AttachmentPolicyView,
  },
  async (c, { params, body, principal }) => {
    const current = (await readSite(c.env.DB, params.identity)).attachments;
    const next = { ...current, ...body };
    await writeSiteColumn(c.env.DB, params.identity, "attachments", JSON.stringify(next), new Date().toISOString(), principal.key.user_id);
    return { identity: params.identity, ...next };
  },
);

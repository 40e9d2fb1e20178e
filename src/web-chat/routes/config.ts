/**
 * The operator's doors for web identities (docs/channels.md, "Web sites and entry gates"): a
 * site's allowed origins, its entry gate and the gate's codes, its verified-visitor setting and
 * its pre-chat form. Tagged `channels` (GET read, the
 * rest write) and gated on the conversations store, which the web channel's routes live in.
 * An identity needs no route to be configured: the settings wait for the route, and outlive it.
 */
import { Hono } from "hono";
import { z } from "zod";
import type { AppEnv } from "../../platform/http/app-env";
import { HttpError, badRequest, notFound } from "../../platform/http/errors";
import { addRoute } from "../../platform/http/route";
import { GateCodeBody, GateCodeCreated, GateCodeId, GateCodeView, MAX_LIVE_CODES, createGateCode, listGateCodes, revokeGateCode } from "../gates";
import { SiteBody, SiteView, WebIdentity, readPrechat, readSite, readSiteView, writeAllowedOrigins, writeGateEnabled, writePrechat } from "../sites";
import { MAX_PRECHAT_FIELDS, PRECHAT_TYPES, PrechatBody, PrechatView } from "../prechat";
import { VerificationBody, VerificationView, clearVerification, readVerification, writeVerification } from "../verification";

export const webConfigRouter = new Hono<AppEnv>();

const DOOR = { area: "channels", auth: { tag: "channels" }, store: "conversations" } as const;

const identityParams = z.object({ identity: WebIdentity });
const codeParams = z.object({ identity: WebIdentity, code_id: GateCodeId });

const GateView = z
  .object({ identity: z.string(), enabled: z.boolean(), codes: z.array(GateCodeView) })
  .strict()
  .describe("WebGate");

async function gateView(db: D1Database, identity: string) {
  const [site, codes] = await Promise.all([readSite(db, identity), listGateCodes(db, identity)]);
  return { identity, enabled: site.gate_enabled, codes };
}

addRoute(
  webConfigRouter,
  {
    method: "get",
    path: "/api/channels/web/sites/{identity}",
    summary: "A web identity's allowed origins",
    description:
      "`{identity, allowed_origins, updated_at, updated_by}`. An identity never configured answers the defaults (no allowed origin: only this service's own chat page may talk to it), with `updated_at` and `updated_by` null.",
    ...DOOR,
    params: identityParams,
    response: SiteView,
  },
  async (c, { params }) => readSiteView(c.env.DB, params.identity),
);

addRoute(
  webConfigRouter,
  {
    method: "put",
    path: "/api/channels/web/sites/{identity}",
    summary: "Replace a web identity's allowed origins",
    description:
      "`{allowed_origins: [origin, ...]}`, at most 20: the origins whose pages may embed the widget for this identity. Each must be exactly an origin, `https://host[:port]` (or `http://` for localhost and 127.0.0.1), " +
      "with no path, query or credentials; it is stored as a browser sends it in `Origin` (lowercase, no default port, no trailing slash), duplicates once. A refused entry is a 400 naming its index. `[]` allows none. The gate switch is kept.",
    ...DOOR,
    params: identityParams,
    body: SiteBody,
    response: SiteView,
  },
  async (c, { params, body, principal }) =>
    writeAllowedOrigins(c.env.DB, params.identity, body.allowed_origins, new Date().toISOString(), principal.key.user_id),
);

addRoute(
  webConfigRouter,
  {
    method: "get",
    path: "/api/channels/web/gates/{identity}",
    summary: "A web identity's entry gate and its codes",
    description:
      "`{identity, enabled, codes: [{code_id, label, expires_at, revoked, created_at, created_by}]}`, every code oldest first (revoked and expired ones too). A code itself is shown only when it is created. An identity never configured answers `enabled: false` and no codes.",
    ...DOOR,
    params: identityParams,
    response: GateView,
  },
  async (c, { params }) => gateView(c.env.DB, params.identity),
);

addRoute(
  webConfigRouter,
  {
    method: "put",
    path: "/api/channels/web/gates/{identity}",
    summary: "Switch a web identity's entry gate on or off",
    description:
      "`{enabled}`. While on, the chat page mints a session only for a navigation carrying a live code in `?tai_entry=` (existing sessions are kept). Answers the gate as GET does. The allowed origins are kept.",
    ...DOOR,
    params: identityParams,
    body: z.object({ enabled: z.boolean() }).strict(),
    response: GateView,
  },
  async (c, { params, body, principal }) => {
    await writeGateEnabled(c.env.DB, params.identity, body.enabled, new Date().toISOString(), principal.key.user_id);
    return gateView(c.env.DB, params.identity);
  },
);

addRoute(
  webConfigRouter,
  {
    method: "post",
    path: "/api/channels/web/gates/{identity}/codes",
    summary: "Create an entry code for a web identity",
    description:
      "`{label (1-100 characters), expires_at?}` (ISO 8601, in the future; absent: until revoked). Answers 201 `{code_id, code, label, expires_at}`: the code appears only in this answer, only its SHA-256 is stored. " +
      `An identity holds at most ${MAX_LIVE_CODES} live codes (409 past that). A code admits visitors only while the gate is on.`,
    ...DOOR,
    params: identityParams,
    body: GateCodeBody,
    response: GateCodeCreated,
    status: 201,
    errors: [409],
  },
  async (c, { params, body, principal }) => {
    const now = new Date();
    let expiresAt: string | null = null;
    if (body.expires_at !== undefined) {
      const ms = Date.parse(body.expires_at);
      if (ms <= now.getTime()) throw badRequest("invalid body: expires_at: must be in the future");
      expiresAt = new Date(ms).toISOString();
    }
    const created = await createGateCode(c.env.DB, params.identity, body.label, expiresAt, now.toISOString(), principal.key.user_id);
    if (!created) throw new HttpError(409, `this identity already holds ${MAX_LIVE_CODES} live codes: revoke one first`, "too_many_codes");
    return created;
  },
);

addRoute(
  webConfigRouter,
  {
    method: "delete",
    path: "/api/channels/web/gates/{identity}/codes/{code_id}",
    summary: "Revoke an entry code",
    description:
      "The code admits no one from now on; it stays listed as `revoked`. Revoking a revoked code changes nothing. Sessions it admitted are kept. Unknown code (or one of another identity) 404.",
    ...DOOR,
    params: codeParams,
    response: z.object({ code_id: z.string(), revoked: z.literal(true) }).strict(),
    errors: [404],
  },
  async (c, { params }) => {
    if (!(await revokeGateCode(c.env.DB, params.identity, params.code_id, new Date().toISOString()))) throw notFound("entry code not found");
    return { code_id: params.code_id, revoked: true as const };
  },
);

addRoute(
  webConfigRouter,
  {
    method: "get",
    path: "/api/channels/web/sites/{identity}/verification",
    summary: "A web identity's verified-visitor setting",
    description:
      "`{identity, has_secret, secret_created_at, require_verified}`. The secret itself is never shown here: only the answer that minted it carried it. An identity never configured answers no secret and `require_verified: false`.",
    ...DOOR,
    params: identityParams,
    response: VerificationView,
  },
  async (c, { params }) => readVerification(c.env.DB, params.identity),
);

addRoute(
  webConfigRouter,
  {
    method: "put",
    path: "/api/channels/web/sites/{identity}/verification",
    summary: "Set up verified visitors for a web identity",
    description:
      "`{require_verified?, rotate?}`. Mints the identity's verification secret when it has none, or a new one with `rotate: true` (the old one stops verifying at once); the answer that mints carries it as `secret`, once: it is sealed at rest and no door shows it again. " +
      'The site\'s backend signs its logged-in user with it (docs/channels.md, "Verified visitors"). `require_verified: true` refuses anonymous visitors: new sessions need a user proof, existing anonymous ones are refused at their next use. 501 without SETTINGS_ENCRYPTION_KEY when a secret is to be minted.',
    ...DOOR,
    params: identityParams,
    body: VerificationBody,
    response: VerificationView,
    errors: [501],
  },
  async (c, { params, body, principal }) =>
    writeVerification(c.env.DB, c.get("settings").config, params.identity, body, new Date().toISOString(), principal.key.user_id),
);

addRoute(
  webConfigRouter,
  {
    method: "delete",
    path: "/api/channels/web/sites/{identity}/verification",
    summary: "Forget a web identity's verification secret",
    description:
      "Forgets the secret and turns `require_verified` off: user proofs are refused from now on (400 verification_not_configured) and visitors are anonymous. Sessions already verified are kept. Answers the setting as GET does.",
    ...DOOR,
    params: identityParams,
    response: VerificationView,
  },
  async (c, { params, principal }) => clearVerification(c.env.DB, params.identity, new Date().toISOString(), principal.key.user_id),
);

addRoute(
  webConfigRouter,
  {
    method: "get",
    path: "/api/channels/web/sites/{identity}/prechat",
    summary: "A web identity's pre-chat form",
    description:
      '`{identity, fields}`: the fields a visitor fills in before their first message (docs/channels.md, "Pre-chat form"), in the order the page shows them; `fields: null` when the identity has no form.',
    ...DOOR,
    params: identityParams,
    response: PrechatView,
  },
  async (c, { params }) => readPrechat(c.env.DB, params.identity),
);

addRoute(
  webConfigRouter,
  {
    method: "put",
    path: "/api/channels/web/sites/{identity}/prechat",
    summary: "Set a web identity's pre-chat form",
    description:
      `\`{fields: [{name, label, type, required?, options?, max_length?}]}\`, 1 to ${MAX_PRECHAT_FIELDS} fields, replacing the form. \`name\` is 1-32 of [a-z0-9_] starting with a letter, unique; \`label\` 1-100 characters; \`type\` one of ${PRECHAT_TYPES.join(", ")}; ` +
      "`options` (1-20 distinct labels) for an enum field only; `max_length` (1-1000, default 200) for a text field only; `required` defaults to false. " +
      "The page shows the form before the visitor's first message; the answers arrive with that turn as the visitor's `profile`. Fields named `name` and `email` are skipped for a verified visitor whose token carries that claim. A refused field is a 400 naming its index.",
    ...DOOR,
    params: identityParams,
    body: PrechatBody,
    response: PrechatView,
  },
  async (c, { params, body, principal }) => writePrechat(c.env.DB, params.identity, body, new Date().toISOString(), principal.key.user_id),
);

addRoute(
  webConfigRouter,
  {
    method: "delete",
    path: "/api/channels/web/sites/{identity}/prechat",
    summary: "Remove a web identity's pre-chat form",
    description: "Visitors are asked nothing before their first message from now on. Profiles already given are kept where they are. Answers `fields: null`.",
    ...DOOR,
    params: identityParams,
    response: PrechatView,
  },
  async (c, { params, principal }) => writePrechat(c.env.DB, params.identity, null, new Date().toISOString(), principal.key.user_id),
);

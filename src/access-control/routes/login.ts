/**
 * The doors of login and claim links (docs/login.md): `POST /api/auth/claim-links`
 * (make a one-time link carrying a new owned key), `POST /api/auth/logout` (the calling key
 * revokes itself), and the public login doors `GET /api/login/methods` and `POST /api/login/claim`.
 */
import { Hono } from "hono";
import { z } from "zod";
import { bootstrapTokenProblem } from "../bootstrap-token";
import { DEFAULT_CLAIM_TTL_SECONDS, MAX_CLAIM_TTL_SECONDS, claimLink, claimThrottleKey, createClaimLink, newClaimToken } from "../claim-links";
import { assertConditionCompiles } from "../condition";
import { sha256Hex } from "../crypto";
import { KeyScopes, assertRoleExists, assertScopesExist, assertWithinCaller } from "../key-policy";
import { RETIRED_USER_ID, isRetired } from "../identity";
import { anyKeyExists } from "../key-store";
import { revokeKey } from "../key-revocation";
import { RoleName } from "../roles";
import { userIdSchema } from "../schemas";
import { clearFailures, recordFailure, throttleWait } from "../throttle";
import type { AppEnv } from "../../platform/http/app-env";
import { HttpError, badRequest, conflict, forbidden, tooManyRequests } from "../../platform/http/errors";
import { addPublicRoute, addRoute } from "../../platform/http/route";
import { clientIp, conditionSchema } from "./auth";

export const loginRouter = new Hono<AppEnv>();

/** The key a claim link carries: the fields of `POST /api/auth/api-keys` a link may set, and its TTL. */
export const ClaimLinkBody = z
  .object({
    user_id: userIdSchema,
    description: z.string().max(512).default(""),
    scopes: KeyScopes,
    condition: conditionSchema.optional(),
    role: RoleName.nullable().optional(),
    ttl_seconds: z.number().int().min(1).max(MAX_CLAIM_TTL_SECONDS).default(DEFAULT_CLAIM_TTL_SECONDS),
  })
  .strict();
export type ClaimLinkBody = z.infer<typeof ClaimLinkBody>;

export const ClaimLink = z.object({ token: z.string(), expires_at: z.string(), user_id: z.string() });
export type ClaimLink = z.infer<typeof ClaimLink>;

addRoute(
  loginRouter,
  {
    method: "post",
    path: "/api/auth/claim-links",
    summary: "Make a one-time claim link carrying a new key owned by the caller (the token is shown once)",
    description:
      "The key is minted when the link is claimed (`POST /api/login/claim`), owned by the caller, with the given scopes, condition and role. Who may make a link is who may mint keys: an owned key may not (403); a non-admin only with scopes within its own (403). Custom scope ids and the role must exist (400). `ttl_seconds` defaults to 600, at most 3600 (400 above). 409 when `user_id` names an existing key or one reserved by another open link; 409 (code `user-id-retired`) when a revoked key held it, whoever asks (an admin re-issues a retired user_id with the mint door). Only the SHA-256 of the `clm-` token is stored.",
    area: "auth",
    auth: { tag: "auth" },
    body: ClaimLinkBody,
    response: ClaimLink,
    errors: [409],
  },
  async (c, { body, principal: p }) => {
    const db = c.env.DB;
    // The mint door's rules (src/access-control/routes/auth.ts), with the owner forced to the caller.
    if (p.restricted) throw forbidden();
    assertWithinCaller(p, body.scopes);
    if (body.condition) await assertConditionCompiles(body.condition);
    await assertScopesExist(db, body.scopes);
    await assertRoleExists(db, body.role);
    const token = newClaimToken();
    const policy = {
      user_id: body.user_id,
      description: body.description,
      scopes: body.scopes,
      condition: body.condition ?? null,
      role: body.role ?? null,
      owner_user_id: p.key.user_id,
    };
    const created = await createClaimLink(db, policy, await sha256Hex(token), Date.now(), body.ttl_seconds);
    if (!created) {
      // Read only to word the refusal: the INSERT itself decided it.
      if (await isRetired(db, body.user_id)) throw new HttpError(409, RETIRED_USER_ID, "user-id-retired");
      throw conflict("user_id names an existing api key or one reserved by an open claim link");
    }
    return { token, expires_at: created.expires_at, user_id: body.user_id };
  },
);

addRoute(
  loginRouter,
  {
    method: "post",
    path: "/api/auth/logout",
    summary: "Revoke the calling key (and every key it owns)",
    description:
      "Any valid key. No body is needed: an empty body or `{}` revokes the calling key. An optional `user_id` is a confirmation and must then name the calling key (400 otherwise, nothing revoked); any other field is 400. The same effect as `DELETE /api/auth/api-keys/{user_id}` on the caller: the keys it owns (claim links' keys included) are revoked with it, its open claim links are dropped, each revoked user_id is retired (docs/access-control.md, \"Identities\"), and the revoke is recorded in each key's policy history. An admin may log out; when it is the last admin, nobody can manage keys any more (see docs/login.md).",
    area: "auth",
    auth: { authenticated: true },
    body: z.object({ user_id: userIdSchema.optional() }).strict(),
    bodyOptional: true,
    revokesCaller: true,
    response: z.object({ user_id: z.string(), revoked: z.literal(true) }),
  },
  async (c, { body, principal: p }) => {
    if (body.user_id !== undefined && body.user_id !== p.key.user_id) throw badRequest("user_id: must name the calling key when given");
    await revokeKey(c.env.DB, p.key.user_id, p.key.user_id, new Date().toISOString());
    return { user_id: p.key.user_id, revoked: true as const };
  },
);

export const LoginMethods = z.object({ methods: z.array(z.string()), bootstrap: z.boolean() });
export type LoginMethods = z.infer<typeof LoginMethods>;

/** How a client may get a key: present one, or claim a link. Bootstrap is reported on its own. */
export const LOGIN_METHODS = ["api-key", "claim-link"] as const;

addPublicRoute(
  loginRouter,
  {
    method: "get",
    path: "/api/login/methods",
    summary: "How a client can log in, and whether bootstrap is still open",
    description:
      "Public. `methods`: `api-key` (send a key as `x-api-key` or `Authorization: Bearer`) and `claim-link` (`POST /api/login/claim`). `bootstrap`: true while `POST /api/keys/bootstrap` can mint the first admin key (ACCESS_CONTROL_BOOTSTRAP_TOKEN is set to a token the Worker accepts, at least 32 characters and not a published value, and no key exists).",
    area: "login",
    auth: { public: true },
    response: LoginMethods,
  },
  async (c) => {
    const bootstrap = bootstrapTokenProblem(c.env.ACCESS_CONTROL_BOOTSTRAP_TOKEN) === null && !(await anyKeyExists(c.env.DB));
    return { methods: [...LOGIN_METHODS], bootstrap };
  },
);

const CLAIM_REFUSED = "claim token is invalid, expired or already used";

addPublicRoute(
  loginRouter,
  {
    method: "post",
    path: "/api/login/claim",
    summary: "Exchange a one-time claim token for its key (the raw key is shown once)",
    description:
      "Public. A token works once. Every refusal is the same 400 (unknown, expired, used, or a link that can no longer mint), and counts as a failed attempt of the client: like bootstrap, the client IP then backs off exponentially (429 with Retry-After, even with a good token).",
    area: "login",
    auth: { public: true },
    body: z.object({ token: z.string().min(1).max(256) }).strict(),
    response: z.object({ api_key: z.string(), user_id: z.string(), key_fingerprint: z.string() }),
    errors: [429],
  },
  async (c, { body }) => {
    const db = c.env.DB;
    const client = claimThrottleKey(clientIp(c.req.raw.headers));
    const now = Date.now();
    const wait = await throttleWait(db, client, now);
    if (wait > 0) throw tooManyRequests("too many failed claim attempts; retry later", wait);
    const outcome = await claimLink(db, body.token, now);
    if (!outcome.ok) {
      await recordFailure(db, client, now);
      throw badRequest(CLAIM_REFUSED);
    }
    await clearFailures(db, client);
    return { api_key: outcome.api_key, user_id: outcome.user_id, key_fingerprint: outcome.key_fingerprint };
  },
);

/** Access control doors (decisions §2): bootstrap, key minting and editing, `me`. */
import { Hono } from "hono";
import { z } from "zod";
import { assertConditionCompiles } from "../auth/condition";
import { constantTimeEqual, randomFingerprint, randomToken, sha256Hex } from "../auth/crypto";
import { type KeyRecord, anyKeyExists, findByUserId, insertKey, updateKey } from "../auth/key-store";
import type { Principal } from "../auth/principal";
import { userIdSchema } from "../auth/schemas";
import { isValidScope, scopeCovered } from "../auth/scopes";
import { clearFailures, recordFailure, throttleWait } from "../auth/throttle";
import type { AppEnv } from "../http/app-env";
import { HttpError, badRequest, forbidden, notConfigured, tooManyRequests } from "../http/errors";
import { addRoute } from "../http/route";

export const authRouter = new Hono<AppEnv>();

const scopesSchema = z
  .array(z.string())
  .max(64)
  .superRefine((scopes, ctx) => {
    scopes.forEach((s, i) => {
      if (!isValidScope(s)) ctx.addIssue({ code: "custom", path: [i], message: "not a valid scope (see the scope grammar)" });
    });
  });
const conditionSchema = z.string().min(1).max(4096).nullable();

export const keyView = z.object({
  user_id: z.string(),
  description: z.string(),
  scopes: z.array(z.string()),
  condition: z.string().nullable(),
  owner_user_id: z.string().nullable(),
  disabled: z.boolean(),
  key_fingerprint: z.string(),
  created_at: z.string(),
});

function view(k: KeyRecord): z.infer<typeof keyView> {
  return {
    user_id: k.user_id,
    description: k.description,
    scopes: k.scopes,
    condition: k.condition,
    owner_user_id: k.owner_user_id,
    disabled: k.disabled,
    key_fingerprint: k.key_fingerprint,
    created_at: k.created_at,
  };
}

function clientIp(headers: Headers): string {
  return headers.get("cf-connecting-ip") ?? headers.get("x-real-ip") ?? "unknown";
}

/** Requested scopes must each be covered by the caller's effective scopes (own ∩ owner's). */
function assertWithinCaller(p: Principal, scopes: readonly string[]): void {
  if (p.admin) return;
  for (const s of scopes) {
    if (!scopeCovered(p.key.scopes, s) || (p.owner && !scopeCovered(p.owner.scopes, s))) throw forbidden();
  }
}

/** Loads a key the caller may manage: admin any (404 when absent), others only keys they own
 * (uniform 403 whether absent or foreign). Owned keys manage nothing. */
async function manageable(db: D1Database, p: Principal, userId: string): Promise<KeyRecord> {
  if (p.restricted) throw forbidden();
  const k = await findByUserId(db, userId);
  if (p.admin) {
    if (!k) throw new HttpError(404, "api key not found");
    return k;
  }
  if (!k || k.owner_user_id !== p.key.user_id) throw forbidden();
  return k;
}

addRoute(
  authRouter,
  {
    method: "post",
    path: "/api/keys/bootstrap",
    summary: "Mint the first admin key with the deployment's bootstrap token",
    description:
      "Public. 501 when ACCESS_CONTROL_BOOTSTRAP_TOKEN is unset; 403 for a wrong token (then 429 with Retry-After while the client IP backs off exponentially); 409 once any key exists.",
    area: "auth",
    auth: { public: true },
    body: z
      .object({
        user_id: userIdSchema,
        description: z.string().max(512).default(""),
        bootstrap_token: z.string().min(1).max(1024),
      })
      .strict(),
    response: z.object({ token: z.string(), user_id: z.string() }),
    errors: [403, 409, 429, 501],
  },
  async (c, { body }) => {
    const expected = typeof c.env.ACCESS_CONTROL_BOOTSTRAP_TOKEN === "string" ? c.env.ACCESS_CONTROL_BOOTSTRAP_TOKEN : "";
    if (!expected) throw notConfigured("access-control", "bootstrap is not configured (set ACCESS_CONTROL_BOOTSTRAP_TOKEN)");
    const ip = clientIp(c.req.raw.headers);
    const now = Date.now();
    const wait = await throttleWait(c.env.DB, ip, now);
    if (wait > 0) throw tooManyRequests("too many failed bootstrap attempts; retry later", wait);
    if (!constantTimeEqual(body.bootstrap_token, expected)) {
      await recordFailure(c.env.DB, ip, now);
      throw forbidden();
    }
    await clearFailures(c.env.DB, ip);
    if (await anyKeyExists(c.env.DB)) throw new HttpError(409, "Already initialized");
    const token = `sk-${randomToken()}`;
    const iso = new Date(now).toISOString();
    const inserted = await insertKey(
      c.env.DB,
      {
        user_id: body.user_id,
        key_hash: await sha256Hex(token),
        description: body.description,
        scopes: ["*"],
        condition: null,
        owner_user_id: null,
        key_fingerprint: randomFingerprint(),
        now: iso,
      },
      true,
    );
    if (!inserted) throw new HttpError(409, "Already initialized");
    return { token, user_id: body.user_id };
  },
);

addRoute(
  authRouter,
  {
    method: "post",
    path: "/api/auth/api-keys",
    summary: "Mint an api key (the raw key is shown once)",
    description:
      "A non-admin may only mint keys it owns (owner_user_id defaults to the caller) with scopes within its own; an owned key cannot mint. Duplicate user_id is 409. `disabled: true` mints the key disabled (enable it later with PUT). Unknown fields are 400.",
    area: "auth",
    auth: { tag: "auth" },
    // Strict: a dropped field would mint something other than what was asked (`disabled: true`
    // silently giving an enabled key was issue 9, finding 6).
    body: z
      .object({
        user_id: userIdSchema,
        description: z.string().max(512).default(""),
        scopes: scopesSchema,
        condition: conditionSchema.optional(),
        owner_user_id: userIdSchema.nullable().optional(),
        disabled: z.boolean().default(false),
      })
      .strict(),
    response: z.object({ api_key: z.string(), key_fingerprint: z.string() }),
    errors: [409],
  },
  async (c, { body }) => {
    const p = c.get("principal")!;
    if (p.restricted) throw forbidden();
    let owner = body.owner_user_id ?? null;
    if (!p.admin) {
      owner ??= p.key.user_id;
      if (owner !== p.key.user_id) throw forbidden();
      assertWithinCaller(p, body.scopes);
    } else if (owner) {
      const o = await findByUserId(c.env.DB, owner);
      if (!o) throw badRequest("owner_user_id: no such api key");
      if (o.owner_user_id) throw badRequest("owner_user_id: an owned key cannot own keys");
    }
    if (owner === body.user_id) throw badRequest("owner_user_id: a key cannot own itself");
    if (body.condition) await assertConditionCompiles(body.condition);
    const apiKey = `sk-${randomToken()}`;
    const fingerprint = randomFingerprint();
    await insertKey(c.env.DB, {
      user_id: body.user_id,
      key_hash: await sha256Hex(apiKey),
      description: body.description,
      scopes: body.scopes,
      condition: body.condition ?? null,
      owner_user_id: owner,
      disabled: body.disabled,
      key_fingerprint: fingerprint,
      now: new Date().toISOString(),
    });
    return { api_key: apiKey, key_fingerprint: fingerprint };
  },
);

const userIdParams = z.object({ user_id: userIdSchema });

addRoute(
  authRouter,
  {
    method: "put",
    path: "/api/auth/api-keys/{user_id}",
    summary: "Edit an api key (partial): description, scopes, condition, disabled, owner (admin)",
    area: "auth",
    auth: { tag: "auth" },
    params: userIdParams,
    body: z
      .object({
        description: z.string().max(512).optional(),
        scopes: scopesSchema.optional(),
        condition: conditionSchema.optional(),
        disabled: z.boolean().optional(),
        owner_user_id: userIdSchema.nullable().optional(),
      })
      .strict(),
    response: keyView,
    errors: [404],
  },
  async (c, { params, body }) => {
    const p = c.get("principal")!;
    const target = await manageable(c.env.DB, p, params.user_id);
    if (body.owner_user_id !== undefined && !p.admin) throw forbidden();
    if (body.owner_user_id) {
      if (body.owner_user_id === target.user_id) throw badRequest("owner_user_id: a key cannot own itself");
      const o = await findByUserId(c.env.DB, body.owner_user_id);
      if (!o) throw badRequest("owner_user_id: no such api key");
      if (o.owner_user_id) throw badRequest("owner_user_id: an owned key cannot own keys");
    }
    if (body.scopes) assertWithinCaller(p, body.scopes);
    if (body.condition) await assertConditionCompiles(body.condition);
    await updateKey(c.env.DB, target.user_id, body, new Date().toISOString());
    return view((await findByUserId(c.env.DB, target.user_id))!);
  },
);

addRoute(
  authRouter,
  {
    method: "delete",
    path: "/api/auth/api-keys/{user_id}",
    summary: "Revoke an api key (and every key it owns)",
    area: "auth",
    auth: { tag: "auth" },
    params: userIdParams,
    response: z.object({ user_id: z.string(), revoked: z.literal(true) }),
    errors: [404],
  },
  async (c, { params }) => {
    const p = c.get("principal")!;
    const target = await manageable(c.env.DB, p, params.user_id);
    // Owned keys die with their owner: a later re-mint of the same user_id must not revive them.
    await c.env.DB.batch([
      c.env.DB.prepare("DELETE FROM api_keys WHERE owner_user_id = ?").bind(target.user_id),
      c.env.DB.prepare("DELETE FROM api_keys WHERE user_id = ?").bind(target.user_id),
    ]);
    return { user_id: target.user_id, revoked: true as const };
  },
);

addRoute(
  authRouter,
  {
    method: "post",
    path: "/api/auth/api-keys/{user_id}/scopes",
    summary: "Add and remove scopes on an api key",
    area: "auth",
    auth: { tag: "auth" },
    params: userIdParams,
    body: z.object({ add: scopesSchema.default([]), remove: scopesSchema.default([]) }).strict(),
    response: keyView,
    errors: [404],
  },
  async (c, { params, body }) => {
    const p = c.get("principal")!;
    const target = await manageable(c.env.DB, p, params.user_id);
    assertWithinCaller(p, body.add);
    const next = target.scopes.filter((s) => !body.remove.includes(s));
    for (const s of body.add) if (!next.includes(s)) next.push(s);
    await updateKey(c.env.DB, target.user_id, { scopes: next }, new Date().toISOString());
    return view((await findByUserId(c.env.DB, target.user_id))!);
  },
);

addRoute(
  authRouter,
  {
    method: "get",
    path: "/api/auth/me",
    summary: "The calling key's identity and grants",
    area: "auth",
    auth: { authenticated: true },
    response: z.object({
      user_id: z.string(),
      owner_user_id: z.string().nullable(),
      admin: z.boolean(),
      scopes: z.array(z.string()),
      key_fingerprint: z.string(),
    }),
  },
  (c) => {
    const p = c.get("principal")!;
    return {
      user_id: p.key.user_id,
      owner_user_id: p.key.owner_user_id,
      admin: p.admin,
      scopes: p.key.scopes,
      key_fingerprint: p.key.key_fingerprint,
    };
  },
);


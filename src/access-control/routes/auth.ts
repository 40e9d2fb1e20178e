/** Access control doors (decisions §2): bootstrap, key minting and editing, `me`. */
import { Hono } from "hono";
import { z } from "zod";
import { bootstrapTokenProblem } from "../bootstrap-token";
import { Capabilities, capabilities } from "../capabilities";
import { assertConditionCompiles } from "../condition";
import { constantTimeEqual, randomFingerprint, randomToken, sha256Hex } from "../crypto";
import { scopeIds } from "../custom-scopes";
import { RouteAccess, routesFor } from "../door-access";
import { anyKeyExists, findByUserId, insertKey, updateKey } from "../key-store";
import { KeyScopes, KeyView, assertRoleExists, assertScopesExist, assertWithinCaller, keyView, manageable } from "../key-policy";
import { revokeKey } from "../key-revocation";
import { type Principal, authorize, principalConditionsAllow, principalGrantsRun } from "../principal";
import { pinnedSet } from "../public-routes";
import { RoleName, roleNames } from "../roles";
import { userIdSchema } from "../schemas";
import { clearFailures, recordFailure, throttleWait } from "../throttle";
import type { TargetKind } from "../../shared/kinds";
import type { AppEnv } from "../../platform/http/app-env";
import { HttpError, badRequest, forbidden, notConfigured, tooManyRequests } from "../../platform/http/errors";
import { addPublicRoute, addRoute, registry } from "../../platform/http/route";
import { listAgents } from "../../targets/agents/run";
import { listToolNames } from "../../targets/tools/registry";
import { must } from "../../platform/must";

export const authRouter = new Hono<AppEnv>();

export const conditionSchema = z.string().min(1).max(4096).nullable();

export function clientIp(headers: Headers): string {
  return headers.get("cf-connecting-ip") ?? headers.get("x-real-ip") ?? "unknown";
}

addPublicRoute(
  authRouter,
  {
    method: "post",
    path: "/api/keys/bootstrap",
    summary: "Mint the first admin key with the deployment's bootstrap token",
    description:
      "Public. 501 `access-control-not-configured` when ACCESS_CONTROL_BOOTSTRAP_TOKEN is unset, shorter than 32 characters or a published value (the message says which); 403 for a wrong token (then 429 with Retry-After while the client IP backs off exponentially); 409 once any key exists.",
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
    const expected = c.env.ACCESS_CONTROL_BOOTSTRAP_TOKEN;
    // A weak token is no token: refused before the throttle and the comparison, so it never mints.
    const problem = bootstrapTokenProblem(expected);
    if (problem) throw notConfigured("access-control", `bootstrap is not configured: ${problem}; set a fresh random one (docs/deploy.md)`);
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

const roleField = RoleName.nullable();

addRoute(
  authRouter,
  {
    method: "post",
    path: "/api/auth/api-keys",
    summary: "Mint an api key (the raw key is shown once)",
    description:
      "A non-admin may only mint keys it owns (owner_user_id defaults to the caller) with scopes within its own; an owned key cannot mint. `scopes` may list custom scope ids (they must exist: 400 otherwise). `role` names an existing role (400 otherwise) that bounds the key in addition to its scopes; any caller that may mint may give any role, because a role only narrows. Duplicate user_id is 409. A user_id a revoked key held is retired: 409 (code `user-id-retired`) for anyone but an admin, and an admin's key under it starts a new lineage that inherits nothing keyed by the id (docs/access-control.md, \"Identities\"). `disabled: true` mints the key disabled (enable it later with PUT). Every mint is version 1 of the key's policy history. Unknown fields are 400.",
    area: "auth",
    auth: { tag: "auth" },
    // Strict: a dropped field would mint something other than what was asked (`disabled: true`,
    // dropped silently, would give an enabled key).
    body: z
      .object({
        user_id: userIdSchema,
        description: z.string().max(512).default(""),
        scopes: KeyScopes,
        condition: conditionSchema.optional(),
        owner_user_id: userIdSchema.nullable().optional(),
        role: roleField.optional(),
        disabled: z.boolean().default(false),
      })
      .strict(),
    response: z.object({ api_key: z.string(), key_fingerprint: z.string() }),
    errors: [409],
  },
  async (c, { body, principal: p }) => {
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
    await assertScopesExist(c.env.DB, body.scopes);
    await assertRoleExists(c.env.DB, body.role);
    const apiKey = `sk-${randomToken()}`;
    const fingerprint = randomFingerprint();
    await insertKey(
      c.env.DB,
      {
        user_id: body.user_id,
        key_hash: await sha256Hex(apiKey),
        description: body.description,
        scopes: body.scopes,
        condition: body.condition ?? null,
        owner_user_id: owner,
        role: body.role ?? null,
        disabled: body.disabled,
        key_fingerprint: fingerprint,
        now: new Date().toISOString(),
      },
      false,
      p.key.user_id,
      // A revoked key's user_id stays retired for everyone but an admin (docs/access-control.md, "Identities").
      p.admin,
    );
    return { api_key: apiKey, key_fingerprint: fingerprint };
  },
);

const userIdParams = z.object({ user_id: userIdSchema });

addRoute(
  authRouter,
  {
    method: "put",
    path: "/api/auth/api-keys/{user_id}",
    summary: "Edit an api key (partial): description, scopes, condition, role, disabled, owner (admin)",
    description:
      "Each edit appends a version to the key's policy history (`GET /api/auth/api-keys/{user_id}/policy/versions`). Custom scope ids and the role must exist (400).",
    area: "auth",
    auth: { tag: "auth" },
    params: userIdParams,
    body: z
      .object({
        description: z.string().max(512).optional(),
        scopes: KeyScopes.optional(),
        condition: conditionSchema.optional(),
        role: roleField.optional(),
        disabled: z.boolean().optional(),
        owner_user_id: userIdSchema.nullable().optional(),
      })
      .strict(),
    response: KeyView,
    errors: [404],
  },
  async (c, { params, body, principal: p }) => {
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
    if (body.scopes) await assertScopesExist(c.env.DB, body.scopes);
    await assertRoleExists(c.env.DB, body.role);
    await updateKey(c.env.DB, target.user_id, body, { actor: p.key.user_id, action: "edit", now: new Date().toISOString() });
    return keyView(must(await findByUserId(c.env.DB, target.user_id), "the key just edited"));
  },
);

addRoute(
  authRouter,
  {
    method: "delete",
    path: "/api/auth/api-keys/{user_id}",
    summary: "Revoke an api key (and every key it owns)",
    description:
      'The revoke is recorded as a last version of each revoked key\'s policy history (kept after the key is gone). Each revoked user_id is retired: only an admin may mint it again, as a new lineage that inherits nothing keyed by it (docs/access-control.md, "Identities"). The claim links the key made are dropped.',
    area: "auth",
    auth: { tag: "auth" },
    params: userIdParams,
    response: z.object({ user_id: z.string(), revoked: z.literal(true) }),
    errors: [404],
  },
  async (c, { params, principal: p }) => {
    const target = await manageable(c.env.DB, p, params.user_id);
    await revokeKey(c.env.DB, target.user_id, p.key.user_id, new Date().toISOString());
    return { user_id: target.user_id, revoked: true as const };
  },
);

addRoute(
  authRouter,
  {
    method: "post",
    path: "/api/auth/api-keys/{user_id}/scopes",
    summary: "Add and remove scopes on an api key",
    description: "Added custom scope ids must exist (400). The change appends a version to the key's policy history.",
    area: "auth",
    auth: { tag: "auth" },
    params: userIdParams,
    body: z.object({ add: KeyScopes.default([]), remove: KeyScopes.default([]) }).strict(),
    response: KeyView,
    errors: [404],
  },
  async (c, { params, body, principal: p }) => {
    const target = await manageable(c.env.DB, p, params.user_id);
    assertWithinCaller(p, body.add);
    await assertScopesExist(c.env.DB, body.add);
    const next = target.scopes.filter((s) => !body.remove.includes(s));
    for (const s of body.add) if (!next.includes(s)) next.push(s);
    await updateKey(c.env.DB, target.user_id, { scopes: next }, { actor: p.key.user_id, action: "scopes", now: new Date().toISOString() });
    return keyView(must(await findByUserId(c.env.DB, target.user_id), "the key just edited"));
  },
);

/**
 * What the caller may mint: the mint door's rules, with `can_mint` decided by the real authorizer
 * on the mint door itself (so a condition or role that refuses it shows here).
 */
export async function mintableFor(db: D1Database, p: Principal, now: Date): Promise<Capabilities> {
  let canMint = !p.restricted;
  if (canMint) {
    try {
      await authorize(p, { tag: "auth", action: "write" }, { method: "POST", path: "/api/auth/api-keys" }, now);
    } catch {
      canMint = false;
    }
  }
  if (!canMint) return capabilities(p, false, { roles: [], scopeIds: [], tools: [], agents: [] });
  const [roles, ids, tools, agents] = await Promise.all([roleNames(db), scopeIds(db), listToolNames(db), listAgents(db)]);
  return capabilities(p, true, { roles, scopeIds: ids, tools, agents: agents.map((a) => a.name) });
}

/**
 * The tools and agents the caller's key may run as an execution key: the live turn authorizer's
 * checks (src/access-control/pass-role.ts: run grants and role, own and owner's, then the conditions over
 * the request-less turn input).
 */
async function runnable(p: Principal, kind: TargetKind, names: readonly string[], now: Date): Promise<string[]> {
  const granted = names.filter((n) => principalGrantsRun(p, kind, n));
  if (granted.length === 0) return [];
  return (await principalConditionsAllow(p, now)) ? granted : [];
}

addRoute(
  authRouter,
  {
    method: "get",
    path: "/api/auth/me",
    summary: "The calling key's identity and grants",
    description:
      "Any valid key. `routes`: every door the key passes, computed by running the real authorizer on each door of the route table with its path template as the request path (public and pinned doors included), so it never lists a door that refuses the key. `tools`/`agents`: the names the key may run as an execution key (run grants, role, conditions without a request). `mintable`: as `GET /api/auth/capabilities`.",
    area: "auth",
    auth: { authenticated: true },
    response: z.object({
      user_id: z.string(),
      owner_user_id: z.string().nullable(),
      admin: z.boolean(),
      scopes: z.array(z.string()),
      key_fingerprint: z.string(),
      role: z.string().nullable(),
      routes: z.array(RouteAccess),
      tools: z.array(z.string()),
      agents: z.array(z.string()),
      mintable: Capabilities,
    }),
  },
  async (c, { principal: p }) => {
    const db = c.env.DB;
    const now = new Date();
    const [pins, toolNames, agents] = await Promise.all([pinnedSet(db), listToolNames(db), listAgents(db)]);
    return {
      user_id: p.key.user_id,
      owner_user_id: p.key.owner_user_id,
      admin: p.admin,
      scopes: p.key.scopes,
      key_fingerprint: p.key.key_fingerprint,
      role: p.key.role,
      routes: await routesFor(p, registry, pins, now),
      tools: await runnable(p, "tool", toolNames, now),
      agents: await runnable(
        p,
        "agent",
        agents.map((a) => a.name),
        now,
      ),
      mintable: await mintableFor(db, p, now),
    };
  },
);

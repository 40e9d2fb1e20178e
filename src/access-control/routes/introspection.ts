/**
 * Introspection doors (docs/access-control.md, "Introspection"): what the caller may
 * mint, the route table with what maps each door, the caller's condition input, and a condition
 * tester. None of them changes anything.
 */
import { Hono } from "hono";
import { z } from "zod";
import { Capabilities } from "../capabilities";
import { assertConditionCompiles, conditionInput } from "../condition";
import { allScopeUrls } from "../custom-scopes";
import { RouteMapping, routeMappings } from "../door-access";
import { pinnedSet } from "../public-routes";
import type { AppEnv } from "../../platform/http/app-env";
import { jsonObjectSchema } from "../../platform/http/bounded-json";
import { HttpError } from "../../platform/http/errors";
import { addRoute, registry } from "../../platform/http/route";
import { JqError, jqRun } from "../../platform/jq/engine";
import { mintableFor } from "./auth";

export const accessControlIntrospectionRouter = new Hono<AppEnv>();

const AREA = "auth";

addRoute(
  accessControlIntrospectionRouter,
  {
    method: "get",
    path: "/api/auth/capabilities",
    summary: "What the caller may mint: scopes, custom scopes, run grants, roles, owner",
    description:
      "`can_mint` is the real authorizer's answer for `POST /api/auth/api-keys` (false for owned keys). An admin may mint anything for any owner (`owner: any`); another key mints keys it owns (`owner: self`) with scopes covered by its own, and any role (a role only narrows).",
    area: AREA,
    auth: { tag: "auth" },
    response: Capabilities,
  },
  async (c, { principal }) => mintableFor(c.env.DB, principal, new Date()),
);

addRoute(
  accessControlIntrospectionRouter,
  {
    method: "get",
    path: "/api/auth/routes",
    summary: "Every HTTP door with its tag, action, admin flag and the scopes that map it",
    description:
      "Generated from the route table. `scopes` lists the scope strings that open the door: `*`, `<tag>`, `<tag>:write`, `<tag>:read` for reads, and the custom scope ids with a URL that can reach it; an admin-only door lists only `*`. `public` is true for declared public doors and for doors pinned now; `pinnable` says whether an admin may pin it.",
    area: AREA,
    auth: { tag: "auth" },
    response: z.array(RouteMapping),
  },
  async (c) => {
    const [pins, urls] = await Promise.all([pinnedSet(c.env.DB), allScopeUrls(c.env.DB)]);
    return routeMappings(registry, pins, urls);
  },
);

export const ConditionInputView = z.object({
  sub: z.string(),
  scopes: z.array(z.string()),
  identity: z.object({ owner_user_id: z.string().nullable() }),
  policy: z.object({ description: z.string(), disabled: z.boolean(), key_fingerprint: z.string(), role: z.string().nullable() }),
  request: z.object({ method: z.string(), path: z.string() }).optional(),
  system: z.object({ time: z.string() }),
});

addRoute(
  accessControlIntrospectionRouter,
  {
    method: "get",
    path: "/api/auth/tokens-payload",
    summary: "The caller's auth context exactly as a policy condition sees it",
    description:
      "Any valid key. The object a key's (or its role's) jq condition is evaluated over, for this request. At turn time the same object has no `request`.",
    area: AREA,
    auth: { authenticated: true },
    response: ConditionInputView,
  },
  (c, { principal }) => conditionInput(principal.key, new Date(), { method: c.req.method, path: c.req.path }),
);

addRoute(
  accessControlIntrospectionRouter,
  {
    method: "post",
    path: "/api/auth/validate-condition",
    summary: "Check a jq policy condition and evaluate it over a sample context",
    description:
      "400 when the program does not compile or exceeds the jq budget. Otherwise `{ok: true, result, allowed}`: `result` is the program's single boolean output, null when it raised an error or did not output exactly one boolean; `allowed` is whether the enforcer would allow (exactly `true`). Without `sample_context` the caller's own context (`GET /api/auth/tokens-payload`) is used.",
    area: AREA,
    auth: { tag: "auth", action: "read" },
    body: z.object({ condition: z.string().min(1).max(4096), sample_context: jsonObjectSchema.optional() }).strict(),
    response: z.object({ ok: z.literal(true), result: z.boolean().nullable(), allowed: z.boolean() }),
  },
  async (c, { body, principal }) => {
    await assertConditionCompiles(body.condition);
    const input = body.sample_context ?? conditionInput(principal.key, new Date(), { method: c.req.method, path: c.req.path });
    let outputs: unknown[];
    try {
      outputs = await jqRun(body.condition, input);
    } catch (err) {
      if (err instanceof JqError && err.kind === "budget") throw new HttpError(400, `invalid condition: ${err.message}`);
      if (err instanceof JqError) return { ok: true as const, result: null, allowed: false };
      throw err;
    }
    const result = outputs.length === 1 && typeof outputs[0] === "boolean" ? outputs[0] : null;
    return { ok: true as const, result, allowed: result === true };
  },
);

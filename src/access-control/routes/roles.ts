/**
 * Role doors (docs/access-control.md, "Roles"). Reads need `auth:read`; every write is
 * admin-only (a role bounds every key that names it). Each write appends a version.
 */
import { Hono } from "hono";
import { z } from "zod";
import { assertConditionCompiles } from "../condition";
import type { Principal } from "../principal";
import {
  Role,
  RoleConditionInput,
  RoleGrantsInput,
  RoleName,
  RoleVersion,
  createRole,
  deleteRole,
  editRole,
  getRole,
  getRoleVersion,
  listRoleVersions,
  listRoles,
  mergeRoleGrants,
  normalizeGrants,
  rollbackRole,
} from "../roles";
import type { AppEnv } from "../../platform/http/app-env";
import { HttpError, badRequest } from "../../platform/http/errors";
import { pageSchema, pagingQuery, toPage, toWindow } from "../../platform/http/paging";
import { addRoute } from "../../platform/http/route";

export const accessControlRolesRouter = new Hono<AppEnv>();

const AREA = "auth";
const nameParams = z.object({ name: RoleName });
const roleNotFound = () => new HttpError(404, "role not found");

/** Who made a change, for the version row. */
function actor(p: Principal): string {
  return p.key.user_id;
}

addRoute(
  accessControlRolesRouter,
  {
    method: "get",
    path: "/api/auth/roles",
    summary: "List roles",
    area: AREA,
    auth: { tag: "auth" },
    query: pagingQuery,
    response: pageSchema(Role),
  },
  async (c, { query }) => {
    const w = toWindow(query);
    const { items, total } = await listRoles(c.env.DB, w.offset, w.pageSize);
    return toPage(items, total, w);
  },
);

addRoute(
  accessControlRolesRouter,
  {
    method: "post",
    path: "/api/auth/roles",
    summary: "Create a role (admin)",
    description:
      '`grants` maps scope tags to "none" | "read" | "write" (absent = none; an unknown tag is 400). A key naming the role passes a door only when its scopes AND the role grant the door\'s (tag, action) AND the role\'s optional jq `condition` (same input as a key condition) outputs exactly true. 409 when the name exists.',
    area: AREA,
    auth: { tag: "auth", admin: true },
    body: z
      .object({
        name: RoleName,
        description: z.string().max(512).default(""),
        grants: RoleGrantsInput.default({}),
        condition: RoleConditionInput.nullable().optional(),
      })
      .strict(),
    response: Role,
    errors: [409],
  },
  async (c, { body, principal }) => {
    if (body.condition) await assertConditionCompiles(body.condition);
    return createRole(
      c.env.DB,
      { name: body.name, description: body.description, grants: normalizeGrants(body.grants), condition: body.condition ?? null },
      actor(principal),
      new Date().toISOString(),
    );
  },
);

addRoute(
  accessControlRolesRouter,
  {
    method: "put",
    path: "/api/auth/roles/{name}",
    summary: "Edit a role (admin): replace its grant map, description or condition",
    description:
      "Partial: the fields given replace the current ones (`grants` as a whole map; `condition: null` removes it). Every edit is a new version; keys naming the role see it on their next request.",
    area: AREA,
    auth: { tag: "auth", admin: true },
    params: nameParams,
    body: z
      .object({
        description: z.string().max(512).optional(),
        grants: RoleGrantsInput.optional(),
        condition: RoleConditionInput.nullable().optional(),
      })
      .strict(),
    response: Role,
    errors: [404],
  },
  async (c, { params, body, principal }) => {
    if (body.description === undefined && body.grants === undefined && body.condition === undefined)
      throw badRequest("invalid body: give description, grants or condition");
    if (body.condition) await assertConditionCompiles(body.condition);
    const role = await editRole(
      c.env.DB,
      params.name,
      { description: body.description, grants: body.grants ? normalizeGrants(body.grants) : undefined, condition: body.condition },
      actor(principal),
      new Date().toISOString(),
    );
    if (!role) throw roleNotFound();
    return role;
  },
);

addRoute(
  accessControlRolesRouter,
  {
    method: "post",
    path: "/api/auth/roles/{name}/grants",
    summary: "Change some grants of a role (admin)",
    description: 'Merges `grants` into the role\'s map: each tag given gets its level, `"none"` removes the tag; other tags stay. A new version.',
    area: AREA,
    auth: { tag: "auth", admin: true },
    params: nameParams,
    body: z.object({ grants: RoleGrantsInput }).strict(),
    response: Role,
    errors: [404],
  },
  async (c, { params, body, principal }) => {
    const role = await mergeRoleGrants(c.env.DB, params.name, body.grants, actor(principal), new Date().toISOString());
    if (!role) throw roleNotFound();
    return role;
  },
);

addRoute(
  accessControlRolesRouter,
  {
    method: "get",
    path: "/api/auth/roles/{name}/versions",
    summary: "A role's version history, newest first",
    description: "Kept after the role is deleted (the delete is its last version); 404 when the name has no history.",
    area: AREA,
    auth: { tag: "auth" },
    params: nameParams,
    query: pagingQuery,
    response: pageSchema(RoleVersion),
    errors: [404],
  },
  async (c, { params, query }) => {
    const w = toWindow(query);
    const { items, total } = await listRoleVersions(c.env.DB, params.name, w.offset, w.pageSize);
    if (total === 0) throw roleNotFound();
    return toPage(items, total, w);
  },
);

addRoute(
  accessControlRolesRouter,
  {
    method: "post",
    path: "/api/auth/roles/{name}/rollback",
    summary: "Restore an earlier version of a role as a new version (admin)",
    description:
      "The role's description, grants and condition become those of `version`, written as the next version (history is never rewritten). 404 for an unknown role or version.",
    area: AREA,
    auth: { tag: "auth", admin: true },
    params: nameParams,
    body: z.object({ version: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER) }).strict(),
    response: Role,
    errors: [404],
  },
  async (c, { params, body, principal }) => {
    if (!(await getRole(c.env.DB, params.name))) throw roleNotFound();
    if (!(await getRoleVersion(c.env.DB, params.name, body.version))) throw new HttpError(404, "role version not found");
    const role = await rollbackRole(c.env.DB, params.name, body.version, actor(principal), new Date().toISOString());
    if (!role) throw roleNotFound();
    return role;
  },
);

addRoute(
  accessControlRolesRouter,
  {
    method: "delete",
    path: "/api/auth/roles/{name}",
    summary: "Delete a role (admin)",
    description:
      "Refused with 409 (`role-in-use`) while an api key names the role, unless `?force=true`. Forced, the keys keep naming the deleted role and are denied everything (fail closed) until their role is changed or the name is created again.",
    area: AREA,
    auth: { tag: "auth", admin: true },
    params: nameParams,
    query: z.object({ force: z.enum(["true", "false"], { error: 'must be "true" or "false"' }).optional() }),
    response: z.object({ name: z.string(), removed: z.literal(true), keys_denied: z.number().int() }),
    errors: [404, 409],
  },
  async (c, { params, query, principal }) => {
    const { keys } = await deleteRole(c.env.DB, params.name, query.force === "true", actor(principal), new Date().toISOString());
    return { name: params.name, removed: true as const, keys_denied: keys };
  },
);

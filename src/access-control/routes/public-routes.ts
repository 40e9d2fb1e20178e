/**
 * Public pin doors (docs/access-control.md, "Public routes"). Listing needs `auth:read`
 * (the pins are public by definition); pinning and unpinning are admin-only.
 */
import { Hono } from "hono";
import { z } from "zod";
import { PublicRoute, listPins, pin, pinRefusal, unpin } from "../public-routes";
import type { AppEnv } from "../../platform/http/app-env";
import { HttpError, badRequest } from "../../platform/http/errors";
import { pageSchema, pagingQuery, toPage, toWindow } from "../../platform/http/paging";
import { type RouteSpec, addRoute, registry } from "../../platform/http/route";

export const accessControlPublicRoutesRouter = new Hono<AppEnv>();

const AREA = "auth";
const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const;

/** A door named by method (any case) and its OpenAPI path template, as in `GET /api/auth/routes`. */
const DoorRef = z.object({
  method: z
    .string()
    .max(16)
    .transform((m) => m.toUpperCase())
    .pipe(z.enum(METHODS, { error: "must be GET, POST, PUT, PATCH or DELETE" })),
  path: z.string().min(1).max(512),
});

function doorOf(method: string, path: string): RouteSpec | undefined {
  return registry.find((r) => r.method.toUpperCase() === method && r.path === path);
}

addRoute(
  accessControlPublicRoutesRouter,
  {
    method: "get",
    path: "/api/auth/public-routes",
    summary: "List the doors pinned public",
    area: AREA,
    auth: { tag: "auth" },
    query: pagingQuery,
    response: pageSchema(PublicRoute),
  },
  async (c, { query }) => {
    const w = toWindow(query);
    const { items, total } = await listPins(c.env.DB, w.offset, w.pageSize);
    return toPage(items, total, w);
  },
);

addRoute(
  accessControlPublicRoutesRouter,
  {
    method: "post",
    path: "/api/auth/public-routes",
    summary: "Pin a door public (admin): served without a credential",
    description:
      "`path` is the door's path template exactly as `GET /api/auth/routes` lists it (`/api/states/{name}`); 404 when the table has no such door. 400 for a door that can never be public: access-control doors (`/api/auth/*`, `/api/keys/*`), the bridge's write doors, run-tool, admin-only doors, doors that need a key by declaration, and non-GET doors that do not declare themselves pinnable. Idempotent (`created: false` when pinned already). A request without a key then enters as an anonymous caller with no grants; a request with a key is still authenticated, and a key whose grants refuse the door is let in as itself.",
    area: AREA,
    auth: { tag: "auth", admin: true },
    body: DoorRef.strict(),
    response: z.object({ method: z.string(), path: z.string(), pinned: z.literal(true), created: z.boolean() }),
    errors: [404],
  },
  async (c, { body, principal }) => {
    const door = doorOf(body.method, body.path);
    if (!door) throw new HttpError(404, "no such door in the route table");
    const refusal = pinRefusal(door);
    if (refusal) throw badRequest(`invalid body: this door cannot be pinned public: ${refusal}`);
    const { created } = await pin(c.env.DB, body.method, body.path, principal.key.user_id, new Date().toISOString());
    return { method: body.method, path: body.path, pinned: true as const, created };
  },
);

addRoute(
  accessControlPublicRoutesRouter,
  {
    method: "delete",
    path: "/api/auth/public-routes",
    summary: "Unpin a public door (admin)",
    description: "The door goes in the query: `?method=GET&path=/api/states/{name}` (URL-encoded). 404 when it was not pinned.",
    area: AREA,
    auth: { tag: "auth", admin: true },
    query: DoorRef,
    response: z.object({ method: z.string(), path: z.string(), removed: z.literal(true) }),
    errors: [404],
  },
  async (c, { query }) => {
    if (!(await unpin(c.env.DB, query.method, query.path))) throw new HttpError(404, "the door is not pinned");
    return { method: query.method, path: query.path, removed: true as const };
  },
);

/** Text resources: what TemplatedText `id` points at. Read via /api/resources, written via /api/storage. */
import { Hono } from "hono";
import { z } from "zod";
import type { AppEnv } from "../http/app-env";
import { HttpError } from "../http/errors";
import { addRoute } from "../http/route";
import { deleteTextResource, readTextResource, resourceContent, resourceId, writeTextResource } from "../store/text-resources";

export const resourcesRouter = new Hono<AppEnv>();

const resourceView = z.object({ id: z.string(), content: z.string(), created_at: z.string(), updated_at: z.string() });

async function read(db: D1Database, id: string) {
  const r = await readTextResource(db, id);
  if (!r) throw new HttpError(404, "resource not found");
  return r;
}

addRoute(
  resourcesRouter,
  {
    method: "get",
    path: "/api/resources/get",
    summary: "Read a stored text resource by id",
    area: "resources",
    auth: { tag: "resources" },
    query: z.object({ id: resourceId }),
    response: resourceView,
    errors: [404],
  },
  (c, { query }) => read(c.env.DB, query.id),
);

addRoute(
  resourcesRouter,
  {
    method: "post",
    path: "/api/resources/get",
    summary: "Read a stored text resource by id (body form)",
    area: "resources",
    auth: { tag: "resources", action: "read" },
    body: z.object({ id: resourceId }).strict(),
    response: resourceView,
    errors: [404],
  },
  (c, { body }) => read(c.env.DB, body.id),
);

addRoute(
  resourcesRouter,
  {
    method: "post",
    path: "/api/storage/resources",
    summary: "Create or replace a text resource (TemplatedText `id` source)",
    area: "storage",
    auth: { tag: "storage" },
    body: z.object({ id: resourceId.optional(), content: resourceContent }).strict(),
    response: z.object({ created: z.boolean(), resource: resourceView }),
  },
  async (c, { body }) => {
    const id = body.id ?? crypto.randomUUID();
    return writeTextResource(c.env.DB, id, body.content, new Date().toISOString());
  },
);

addRoute(
  resourcesRouter,
  {
    method: "delete",
    path: "/api/storage/resources/{resource_id}",
    summary: "Delete a text resource",
    area: "storage",
    auth: { tag: "storage" },
    params: z.object({ resource_id: resourceId }),
    response: z.object({ removed: z.literal(true), id: z.string() }),
    errors: [404],
  },
  async (c, { params }) => {
    if (!(await deleteTextResource(c.env.DB, params.resource_id))) throw new HttpError(404, "resource not found");
    return { removed: true as const, id: params.resource_id };
  },
);

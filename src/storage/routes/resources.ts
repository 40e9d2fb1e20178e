/**
 * Text resources: what a TemplatedText `id` points at (docs/storage.md "Text resources"). Read
 * here; written through the storage doors (src/storage/routes/storage.ts). An id resolves in the content
 * store first, then in the D1 text resources (src/storage/text-resources.ts).
 */
import { type Context, Hono } from "hono";
import { z } from "zod";
import type { AppEnv } from "../../platform/http/app-env";
import { HttpError } from "../../platform/http/errors";
import { intactIdentifier } from "../../platform/http/identifiers";
import { addRoute } from "../../platform/http/route";
import { bucketIn } from "../bucket";
import { STORAGE_PATH_MAX_BYTES } from "../paths";
import { resolveText } from "../text-resources";

export const resourcesRouter = new Hono<AppEnv>();

/** A resource id: a storage path or a D1 text resource id (the same spelling for both). */
const ResourceIdParam = intactIdentifier(z.string().min(1).max(STORAGE_PATH_MAX_BYTES));

const ResourceView = z
  .object({ id: z.string(), content: z.string(), created_at: z.string(), updated_at: z.string(), source: z.enum(["storage", "d1"]) })
  .strict();

async function read(c: Context<AppEnv>, id: string) {
  const bucket = bucketIn(c.env, c.get("settings").storage.bucketBinding);
  const r = await resolveText({ bucket, db: c.env.DB }, id);
  if (!r) throw new HttpError(404, "resource not found");
  return r;
}

const DESCRIPTION =
  "Resolves the id as a TemplatedText `id` does: the content store's object of that path first (UTF-8 text of at most 256 KiB, else 400), then the D1 text resource. `source` says which. 404 when neither holds it.";

addRoute(
  resourcesRouter,
  {
    method: "get",
    path: "/api/resources/get",
    summary: "Read a text resource by id",
    description: DESCRIPTION,
    area: "resources",
    auth: { tag: "resources" },
    query: z.object({ id: ResourceIdParam }),
    response: ResourceView,
    errors: [404],
  },
  (c, { query }) => read(c, query.id),
);

addRoute(
  resourcesRouter,
  {
    method: "post",
    path: "/api/resources/get",
    summary: "Read a text resource by id (body form)",
    description: DESCRIPTION,
    area: "resources",
    auth: { tag: "resources", action: "read" },
    body: z.object({ id: ResourceIdParam }).strict(),
    response: ResourceView,
    errors: [404],
  },
  (c, { body }) => read(c, body.id),
);

/**
 * Templates (docs/templates.md): mustache texts stored in the content store under
 * `templates/`, POST-style doors as the reference has them. Tagged `templates` (`POST /api/template`
 * and `/api/render-template` only read, so `templates:read` opens them). Every door that touches
 * the store answers 501 `storage-not-configured` without a bucket; rendering given `content`
 * and clearing the cache work without one.
 */
import { type Context, Hono } from "hono";
import { z } from "zod";
import type { AppEnv } from "../platform/http/app-env";
import { MAX_KWARGS_BYTES, boundedJsonObject } from "../platform/http/bounded-json";
import { notFound } from "../platform/http/errors";
import { addRoute } from "../platform/http/route";
import { requireBucket } from "../storage/bucket";
import { StorageDir, storagePathProblem } from "../storage/paths";
import { TemplateAnalysis } from "./inference";
import {
  TemplateDirPrefix,
  TemplateId,
  TemplateListing,
  TemplateMeta,
  TemplateView,
  UploadTemplateBody,
  clearTemplateCache,
  deleteTemplate,
  deleteTemplateDir,
  fetchTemplate,
  listTemplates,
  renderBounded,
  renderStored,
  templateKey,
  templateNotFound,
  uploadTemplate,
} from "./store";
import { must } from "../platform/must";

export const templatesRouter = new Hono<AppEnv>();

const DOOR = { area: "templates", auth: { tag: "templates" } } as const;
const GATED = { ...DOOR, store: "storage" } as const;

function bucketOf(c: Context<AppEnv>): R2Bucket {
  return requireBucket(c.env, c.get("settings").storage.bucketBinding);
}

addRoute(
  templatesRouter,
  {
    method: "get",
    path: "/api/templates",
    summary: "List templates, a page at a time",
    description:
      "Ids (paths below `templates/`) in lexicographic order, with `resource_id` (the storage path, also the TemplatedText `id`). `prefix` narrows by id; `limit` 1..1000 (default 100); `next_cursor` back as `cursor` for the next page.",
    ...GATED,
    query: z.object({
      prefix: TemplateDirPrefix.optional(),
      cursor: z.string().min(1).max(2048).optional(),
      limit: z
        .string()
        .regex(/^\d+$/, { message: "limit must be a positive integer" })
        .transform(Number)
        .refine((n) => n >= 1 && n <= 1000, { message: "limit must be between 1 and 1000" })
        .optional(),
    }),
    response: TemplateListing,
  },
  (c, { query }) => listTemplates(bucketOf(c), { prefix: query.prefix, cursor: query.cursor, limit: query.limit ?? 100 }),
);

addRoute(
  templatesRouter,
  {
    method: "post",
    path: "/api/template",
    summary: "Fetch a template: its text and the variables it references",
    description:
      "`variables` lists every name the template reads (with the sections around it); `schema` is the JSON Schema of the view they imply (inferred by parsing, docs/templates.md).",
    ...GATED,
    auth: { tag: "templates", action: "read" },
    body: z.object({ id: TemplateId }).strict(),
    response: TemplateView,
    errors: [404],
  },
  (c, { body }) => fetchTemplate(bucketOf(c), body.id),
);

addRoute(
  templatesRouter,
  {
    method: "post",
    path: "/api/upload-template",
    summary: "Upload (create or replace) a template",
    description: "`content` must parse as mustache (400) and be at most 256 KiB as UTF-8 (413). Stored at `templates/<id>` with content type text/x-mustache.",
    ...GATED,
    body: UploadTemplateBody,
    response: z.object({ created: z.boolean(), template: TemplateMeta.extend(TemplateAnalysis.shape) }).strict(),
    errors: [413],
  },
  (c, { body }) => uploadTemplate(bucketOf(c), body, new Date().toISOString()),
);

addRoute(
  templatesRouter,
  {
    method: "post",
    path: "/api/delete-template",
    summary: "Delete a template",
    ...GATED,
    body: z.object({ id: TemplateId }).strict(),
    response: z.object({ removed: z.literal(true), id: z.string() }).strict(),
    errors: [404],
  },
  async (c, { body }) => {
    if (!(await deleteTemplate(bucketOf(c), body.id))) throw templateNotFound();
    return { removed: true as const, id: body.id };
  },
);

addRoute(
  templatesRouter,
  {
    method: "post",
    path: "/api/delete-template-dir",
    summary: "Delete a directory of templates recursively",
    description: "Every template whose id starts with `<dir>/`, at most 10 000 per request (`complete: false`: repeat). 404 when the directory holds none.",
    ...GATED,
    body: z
      .object({ dir: StorageDir.refine((d) => storagePathProblem(templateKey(d)) === null, { message: "is too long or too deep below templates/" }) })
      .strict(),
    response: z.object({ removed: z.number().int(), dir: z.string(), complete: z.boolean() }).strict(),
    errors: [404],
  },
  async (c, { body }) => {
    const r = await deleteTemplateDir(bucketOf(c), body.dir);
    if (r.removed === 0) throw notFound("template directory not found");
    return { removed: r.removed, dir: body.dir, complete: r.complete };
  },
);

const RenderBody = z
  .object({
    id: TemplateId.nullable().optional(),
    content: z.string().nullable().optional(),
    kwargs: boundedJsonObject(MAX_KWARGS_BYTES).default({}),
  })
  .strict()
  .superRefine((b, ctx) => {
    const hasId = b.id !== undefined && b.id !== null;
    const hasContent = b.content !== undefined && b.content !== null;
    if (hasId === hasContent) ctx.addIssue({ code: "custom", message: "exactly one of id or content must be set" });
  });

addRoute(
  templatesRouter,
  {
    method: "post",
    path: "/api/render-template",
    summary: "Render a stored template (by id) or a given one (content) with kwargs",
    description:
      "Mustache without HTML escaping (the TemplatedText language); unknown names render empty. A stored template is read through this isolate's cache (by id and ETag). 400 when the text does not parse or renders past 1 MiB; by id without a bucket 501 storage-not-configured.",
    ...DOOR,
    auth: { tag: "templates", action: "read" },
    body: RenderBody,
    response: z.object({ rendered: z.string() }).strict(),
    errors: [404],
  },
  async (c, { body }) => {
    const rendered = body.id
      ? await renderStored(bucketOf(c), body.id, body.kwargs)
      : renderBounded(must(body.content, "content (the body names id or content)"), body.kwargs);
    return { rendered };
  },
);

addRoute(
  templatesRouter,
  {
    method: "post",
    path: "/api/clear-templates-cache",
    summary: "Clear this isolate's template render cache",
    description: "Per isolate: other isolates keep their caches, which never serve a changed template (each render compares ETags).",
    ...DOOR,
    body: z.object({}).strict(),
    bodyOptional: true,
    response: z.object({ cleared: z.number().int(), scope: z.literal("isolate") }).strict(),
  },
  () => ({ cleared: clearTemplateCache(), scope: "isolate" as const }),
);

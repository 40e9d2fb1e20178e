/**
 * The content store (docs/storage.md): objects in the R2 bucket `STORAGE_BUCKET` names,
 * addressed by storage path. Tagged `storage` (reads `storage:read`, writes `storage:write`);
 * writing under `plugins/` is admin-only, because the plugins' console doors serve those files as
 * pages of this origin. Every door but the identity answers 501 `storage-not-configured` without a
 * bucket. A path in the URL is one segment: its `/` travel as `%2F`.
 */
import { type Context, Hono } from "hono";
import { z } from "zod";
import type { Principal } from "../../access-control/principal";
import type { AppEnv } from "../../platform/http/app-env";
import { forbidden, notFound } from "../../platform/http/errors";
import { addRoute } from "../../platform/http/route";
import { bucketIn, requireBucket } from "../bucket";
import { download, resourceNotFound } from "../download";
import { DEFAULT_LIST_LIMIT, ListingView, MAX_LIST_LIMIT, ObjectView, deleteDir, deleteObject, listObjects, putObject, statObject } from "../objects";
import { ADMIN_ONLY_DIR, StorageDir, StoragePath, StoragePrefix, touchesAdminOnlyDir } from "../paths";
import { TEXT_RESOURCE_MAX_BYTES } from "../text-resources";
import { UploadBody, prepareUpload } from "../upload";
import { deleteTextResource, deleteTextResourcesUnder } from "../text-resources-d1";

export const storageRouter = new Hono<AppEnv>();

const DOOR = { area: "storage", auth: { tag: "storage" } } as const;
const GATED = { ...DOOR, store: "storage" } as const;

function bucketOf(c: Context<AppEnv>): R2Bucket {
  return requireBucket(c.env, c.get("settings").storage.bucketBinding);
}

/** Writes under `plugins/` are admin-only (docs/storage.md "Who may write"). */
function mayWrite(p: Principal, path: string): void {
  if (touchesAdminOnlyDir(path) && !p.admin) throw forbidden();
}

const resourceParams = z.object({ resource_id: StoragePath });

export const StorageIdentity = z
  .object({
    present: z.boolean(),
    provider: z.literal("r2").nullable(),
    binding: z.string().nullable(),
    max_upload_bytes: z.number().int(),
    text_resource_max_bytes: z.number().int(),
    admin_only_dir: z.string(),
    detail: z.string(),
  })
  .strict();
export type StorageIdentity = z.infer<typeof StorageIdentity>;

addRoute(
  storageRouter,
  {
    method: "get",
    path: "/api/storage",
    summary: "The content store's identity: whether a bucket is configured, and its limits",
    description: "Answers also when no bucket is configured (`present: false`); every other storage door then answers 501 storage-not-configured.",
    ...DOOR,
    response: StorageIdentity,
  },
  (c) => {
    const s = c.get("settings").storage;
    const present = bucketIn(c.env, s.bucketBinding) !== null;
    return {
      present,
      provider: present ? ("r2" as const) : null,
      binding: present ? s.bucketBinding : null,
      max_upload_bytes: s.maxUploadBytes,
      text_resource_max_bytes: TEXT_RESOURCE_MAX_BYTES,
      admin_only_dir: ADMIN_ONLY_DIR,
      detail: present
        ? "Cloudflare R2 (STORAGE_BUCKET configured); TemplatedText ids resolve here first, then in the D1 text resources"
        : "STORAGE_BUCKET not configured: the storage and template doors answer 501 storage-not-configured; TemplatedText ids resolve in the D1 text resources only",
    };
  },
);

addRoute(
  storageRouter,
  {
    method: "get",
    path: "/api/storage/resources",
    summary: "List stored objects under a prefix, a page at a time",
    description:
      'Keys in lexicographic (UTF-8 byte) order. `prefix` is "" or a path, optionally ending with `/`; `recursive=false` lists one level and names the sub-directories in `dirs`. `limit` 1..1000 (default 100); pass `next_cursor` back as `cursor` for the next page (null on the last).',
    ...GATED,
    query: z.object({
      prefix: StoragePrefix.optional(),
      cursor: z.string().min(1).max(2048).optional(),
      limit: z
        .string()
        .regex(/^\d+$/, { message: "limit must be a positive integer" })
        .transform(Number)
        .refine((n) => n >= 1 && n <= MAX_LIST_LIMIT, { message: `limit must be between 1 and ${MAX_LIST_LIMIT}` })
        .optional(),
      recursive: z.enum(["true", "false"], { error: 'must be "true" or "false"' }).optional(),
    }),
    response: ListingView,
    errors: [400],
  },
  (c, { query }) =>
    listObjects(bucketOf(c), {
      prefix: query.prefix ?? "",
      cursor: query.cursor,
      limit: query.limit ?? DEFAULT_LIST_LIMIT,
      recursive: query.recursive !== "false",
    }),
);

addRoute(
  storageRouter,
  {
    method: "post",
    path: "/api/storage/resources",
    summary: "Upload (create or replace) an object: text or base64",
    description:
      "`id` is the storage path (a random UUID when absent); `encoding` `text` (default, stored as UTF-8) or `base64`; `content_type` a media type (inferred from the extension when absent). The decoded content may be at most STORAGE_MAX_UPLOAD_BYTES (413 beyond); the request body at most 1 MiB. A replaced object keeps its `created_at`. Writing under `plugins/` is admin-only.",
    ...GATED,
    body: UploadBody,
    response: z.object({ created: z.boolean(), resource: ObjectView }).strict(),
    errors: [413],
  },
  async (c, { body, principal }) => {
    const bucket = bucketOf(c);
    const up = prepareUpload(body, c.get("settings").storage.maxUploadBytes, () => crypto.randomUUID());
    mayWrite(principal, up.id);
    return putObject(bucket, up.id, up.bytes, up.contentType, new Date().toISOString());
  },
);

addRoute(
  storageRouter,
  {
    method: "get",
    path: "/api/storage/resources/{resource_id}/stat",
    summary: "An object's size, content type, ETag and times",
    ...GATED,
    params: resourceParams,
    response: ObjectView,
    errors: [404],
  },
  async (c, { params }) => {
    const view = await statObject(bucketOf(c), params.resource_id);
    if (!view) throw resourceNotFound();
    return view;
  },
);

addRoute(
  storageRouter,
  {
    method: "get",
    path: "/api/storage/resources/{resource_id}/content",
    summary: "Download an object's bytes (raw, with byte ranges)",
    description:
      "Not enveloped: the bytes with the stored content type, `ETag`, `Accept-Ranges: bytes`, `x-content-type-options: nosniff` and `content-security-policy: default-src 'none'; sandbox`. `Content-Disposition` is `inline` for plain text, CSV, Markdown, JSON, raster images, audio, video and PDF, `attachment` for everything else. One `Range: bytes=a-b | a- | -n` answers 206 with `Content-Range`, an unsatisfiable one 416; `If-None-Match` with the current ETag 304.",
    ...GATED,
    params: resourceParams,
    produces: "application/octet-stream",
    alsoResponds: [
      { status: 206, description: "The requested byte range" },
      { status: 304, description: "Not modified (If-None-Match)" },
    ],
    errors: [404, 416],
  },
  (c, { params }) => download(bucketOf(c), params.resource_id, c.req.raw),
);

addRoute(
  storageRouter,
  {
    method: "delete",
    path: "/api/storage/resources/{resource_id}",
    summary: "Delete an object (and a D1 text resource of the same id)",
    description:
      "After it the id no longer resolves as a TemplatedText source. 404 when neither the bucket nor the D1 text resources hold it. Under `plugins/` admin-only.",
    ...GATED,
    params: resourceParams,
    response: z.object({ removed: z.literal(true), id: z.string() }).strict(),
    errors: [404],
  },
  async (c, { params, principal }) => {
    const bucket = bucketOf(c);
    mayWrite(principal, params.resource_id);
    const [inBucket, inD1] = await Promise.all([deleteObject(bucket, params.resource_id), deleteTextResource(c.env.DB, params.resource_id)]);
    if (!inBucket && !inD1) throw resourceNotFound();
    return { removed: true as const, id: params.resource_id };
  },
);

addRoute(
  storageRouter,
  {
    method: "delete",
    path: "/api/storage/dirs/{dir_path}",
    summary: "Delete a directory recursively (every object under it)",
    description:
      "Removes every object whose path starts with `{dir_path}/` (and the D1 text resources under it), at most 10 000 objects per request: `complete: false` says more remain, so repeat the request. 404 when the directory holds nothing. Under `plugins/` admin-only.",
    ...GATED,
    params: z.object({ dir_path: StorageDir }),
    response: z.object({ removed: z.number().int(), dir: z.string(), complete: z.boolean() }).strict(),
    errors: [404],
  },
  async (c, { params, principal }) => {
    const bucket = bucketOf(c);
    mayWrite(principal, params.dir_path);
    const [inBucket, inD1] = await Promise.all([deleteDir(bucket, params.dir_path), deleteTextResourcesUnder(c.env.DB, params.dir_path)]);
    const removed = inBucket.removed + inD1;
    if (removed === 0) throw notFound("directory not found");
    return { removed, dir: params.dir_path, complete: inBucket.complete };
  },
);

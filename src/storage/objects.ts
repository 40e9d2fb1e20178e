/**
 * The content store's operations over one R2 bucket (docs/storage.md). An object's key is its
 * storage path (src/storage/paths.ts). Each object carries its content type (R2 HTTP metadata)
 * and two times in its custom metadata: `created_at` (kept across replacements) and `updated_at`.
 * An object put into the bucket some other way (wrangler, the dashboard) has neither, and shows
 * R2's upload time for both.
 */
import { z } from "zod";
import { badRequest } from "../platform/http/errors";
import { OCTET_STREAM } from "./content-types";
import { must } from "../platform/must";

/** What the stat, list and upload doors say about an object (never its bytes). */
export const ObjectView = z
  .object({
    id: z.string(),
    size: z.number().int(),
    content_type: z.string(),
    etag: z.string(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .strict();
export type ObjectView = z.infer<typeof ObjectView>;

export function viewOf(o: R2Object): ObjectView {
  const uploaded = o.uploaded.toISOString();
  return {
    id: o.key,
    size: o.size,
    content_type: o.httpMetadata?.contentType ?? OCTET_STREAM,
    etag: o.httpEtag,
    created_at: o.customMetadata?.created_at ?? uploaded,
    updated_at: o.customMetadata?.updated_at ?? uploaded,
  };
}

/**
 * R2's list options with `include`, which the runtime honours (compatibility dates from 2022-08-04)
 * but the pinned types' default entry point does not declare.
 */
export type ListOptions = R2ListOptions & { include?: Array<"httpMetadata" | "customMetadata"> };

export const MAX_LIST_LIMIT = 1000;
export const DEFAULT_LIST_LIMIT = 100;

export interface ListRequest {
  prefix: string;
  cursor?: string;
  limit: number;
  /** false: one level, with the sub-directories as `dirs`. */
  recursive: boolean;
}

export const ListingView = z
  .object({
    items: z.array(ObjectView),
    dirs: z.array(z.string()),
    next_cursor: z.string().nullable(),
  })
  .strict();
export type ListingView = z.infer<typeof ListingView>;

/** One page of a listing, keys in lexicographic (UTF-8 byte) order. */
export async function listObjects(bucket: R2Bucket, req: ListRequest): Promise<ListingView> {
  let page: R2Objects;
  try {
    page = await bucket.list({
      prefix: req.prefix || undefined,
      cursor: req.cursor || undefined,
      limit: req.limit,
      delimiter: req.recursive ? undefined : "/",
      include: ["httpMetadata", "customMetadata"],
    } satisfies ListOptions as R2ListOptions);
  } catch (err) {
    // The one input R2 judges for itself is the cursor (an opaque token of an earlier page).
    if (req.cursor) throw badRequest("invalid query: cursor: not a cursor of this listing");
    throw err;
  }
  return {
    items: page.objects.map(viewOf),
    dirs: page.delimitedPrefixes.map((p) => p.replace(/\/$/, "")),
    next_cursor: page.truncated ? page.cursor : null,
  };
}

export async function statObject(bucket: R2Bucket, id: string): Promise<ObjectView | null> {
  const o = await bucket.head(id);
  return o ? viewOf(o) : null;
}

/** Creates or replaces an object; a replaced one keeps its `created_at`. */
export async function putObject(
  bucket: R2Bucket,
  id: string,
  bytes: Uint8Array,
  contentType: string,
  now: string,
): Promise<{ created: boolean; resource: ObjectView }> {
  const existing = await bucket.head(id);
  const created_at = existing ? viewOf(existing).created_at : now;
  const o = await bucket.put(id, bytes, { httpMetadata: { contentType }, customMetadata: { created_at, updated_at: now } });
  // put returns null only under a precondition (onlyIf), which this write does not set.
  return { created: !existing, resource: viewOf(must(o, "the object just stored")) };
}

/** Deletes one object; false when there was none. */
export async function deleteObject(bucket: R2Bucket, id: string): Promise<boolean> {
  const existing = await bucket.head(id);
  if (!existing) return false;
  await bucket.delete(id);
  return true;
}

/** Most objects one delete-dir request removes (ten R2 list-and-delete rounds). */
export const DIR_DELETE_BUDGET = 10 * MAX_LIST_LIMIT;

/**
 * Deletes every object under `dir/`, at most `budget` of them: a bigger directory answers
 * `complete: false` and the caller repeats the request (each round is bounded, so one request
 * never runs into the Worker's limits).
 */
export async function deleteDir(bucket: R2Bucket, dir: string, budget = DIR_DELETE_BUDGET): Promise<{ removed: number; complete: boolean }> {
  let removed = 0;
  for (;;) {
    const page = await bucket.list({ prefix: `${dir}/`, limit: Math.min(MAX_LIST_LIMIT, budget - removed) });
    const keys = page.objects.map((o) => o.key);
    if (keys.length) await bucket.delete(keys);
    removed += keys.length;
    if (!page.truncated) return { removed, complete: true };
    if (removed >= budget) return { removed, complete: false };
  }
}

/**
 * Text resources: what a TemplatedText `id` and `/api/resources/get` name (docs/storage.md "Text
 * resources"). An id resolves in two places, in this order:
 *
 *   1. the content store: the R2 object whose key is the id (when storage is configured and the id
 *      is a storage path). It must be UTF-8 text of at most 256 KiB, else the id is refused (400);
 *   2. the D1 text resources (`text_resources`): rows a backup import restores, and what builds
 *      before the content store wrote.
 *
 * So an upload through `POST /api/storage/resources` shadows a D1 row of the same id, and
 * `DELETE /api/storage/resources/{id}` removes both. The backup's `text-resources` section carries
 * the union, storage winning (src/backup/sections/text-resources.ts).
 */
import { HttpError } from "../platform/http/errors";
import { readTextResource } from "./text-resources-d1";
import { ambientBucket } from "./bucket";
import { isTextual } from "./content-types";
import { type ListOptions, viewOf } from "./objects";
import { ADMIN_ONLY_DIR, isWithin, storagePathProblem } from "./paths";

/** The largest text a resource may hold (the D1 rows' cap too). */
export const TEXT_RESOURCE_MAX_BYTES = 256 * 1024;

export interface ResolvedText {
  id: string;
  content: string;
  created_at: string;
  updated_at: string;
  /** Where the id resolved. */
  source: "storage" | "d1";
}

const notText = () => new HttpError(400, `resource is not a text resource (UTF-8 text of at most ${TEXT_RESOURCE_MAX_BYTES} bytes)`);

/** UTF-8 text of the bytes, or null when they are not. */
export function utf8Text(bytes: ArrayBuffer | Uint8Array): string | null {
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return null;
  }
}

/** The object `id` as text, null when there is none; 400 when it is too big or not UTF-8. */
export async function readStoredText(bucket: R2Bucket, id: string): Promise<ResolvedText | null> {
  if (storagePathProblem(id)) return null;
  const head = await bucket.head(id);
  if (!head) return null;
  if (head.size > TEXT_RESOURCE_MAX_BYTES) throw notText();
  const o = await bucket.get(id);
  if (!o) return null;
  const content = utf8Text(await o.arrayBuffer());
  if (content === null) throw notText();
  const v = viewOf(o);
  return { id, content, created_at: v.created_at, updated_at: v.updated_at, source: "storage" };
}

/** Resolves `id` in the content store (when given), then in D1. */
export async function resolveText(sources: { bucket: R2Bucket | null; db: D1Database }, id: string): Promise<ResolvedText | null> {
  if (sources.bucket) {
    const stored = await readStoredText(sources.bucket, id);
    if (stored) return stored;
  }
  const row = await readTextResource(sources.db, id);
  return row ? { ...row, source: "d1" } : null;
}

/** `resolveText` with the Worker's configured content store (TemplatedText, from any caller). */
export function resolveTextAnywhere(db: D1Database, id: string): Promise<ResolvedText | null> {
  return resolveText({ bucket: ambientBucket(), db }, id);
}

/** Most bytes of stored text one backup export reads (its document is read whole into memory). */
export const EXPORT_TEXT_BUDGET_BYTES = 16 * 1024 * 1024;

/**
 * The stored objects a backup's `text-resources` section carries, by id: textual content type, at
 * most 256 KiB, UTF-8, a key a backup row may hold (`rowId`), and not under the plugins' asset
 * directory (pages, not texts). Binary objects and bigger ones are not in any backup section: back
 * the bucket up with R2's own tools (docs/backup.md).
 */
export async function storedTextsForBackup(
  bucket: R2Bucket,
  rowId: (id: string) => boolean,
  maxRows: number,
): Promise<Map<string, Omit<ResolvedText, "source">>> {
  const out = new Map<string, Omit<ResolvedText, "source">>();
  let cursor: string | undefined;
  let bytes = 0;
  do {
    const page = await bucket.list({ cursor, limit: 1000, include: ["httpMetadata", "customMetadata"] } satisfies ListOptions as R2ListOptions);
    for (const o of page.objects) {
      const v = viewOf(o);
      if (v.size > TEXT_RESOURCE_MAX_BYTES || !isTextual(v.content_type) || isWithin(o.key, ADMIN_ONLY_DIR) || !rowId(o.key)) continue;
      if (out.size >= maxRows || bytes + v.size > EXPORT_TEXT_BUDGET_BYTES) {
        throw new HttpError(
          413,
          "text-resources: the content store holds more text than one backup document carries; back the bucket up with R2's own tools (docs/backup.md)",
        );
      }
      const body = await bucket.get(o.key);
      const content = body ? utf8Text(await body.arrayBuffer()) : null;
      if (content === null) continue;
      bytes += v.size;
      out.set(o.key, { id: o.key, content, created_at: v.created_at, updated_at: v.updated_at });
    }
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  return out;
}

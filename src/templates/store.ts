/**
 * Templates (docs/templates.md): mustache texts in the content store under `templates/`.
 * A template's id is its path below that directory (`support/welcome.mustache`); its storage path,
 * which is also its TemplatedText `id`, is `templates/<id>`. They live in R2 rather than D1 so that
 * one store holds every text a TemplatedText id can name, and the storage doors see them too.
 *
 * Rendering by id goes through a per-isolate cache of template texts keyed by id and ETag: a render
 * asks R2 for the object only if its ETag changed (a conditional get), so an unchanged template
 * costs no transfer. `clearTemplateCache` empties it (and mustache's parse cache) in this isolate
 * only; other isolates keep theirs, which is harmless, because a changed ETag is always re-read.
 */
import Mustache from "mustache";
import { z } from "zod";
import { HttpError, badRequest, notFound } from "../platform/http/errors";
import { type ListingView, type ObjectView, deleteDir, deleteObject, listObjects, putObject, viewOf } from "../storage/objects";
import { StoragePath, StoragePrefix, storagePathProblem, storagePrefixProblem } from "../storage/paths";
import { TEXT_RESOURCE_MAX_BYTES, utf8Text } from "../storage/text-resources";
import { renderTemplate } from "./templated-text";
import { type TemplateAnalysis, TemplateVariable, analyzeTemplate } from "./inference";
import { must } from "../platform/must";

export const TEMPLATES_DIR = "templates";
export const TEMPLATE_CONTENT_TYPE = "text/x-mustache; charset=utf-8";
/** The longest text a render may produce (a section over a long list multiplies the template). */
export const MAX_RENDERED_CHARS = 1024 * 1024;

export const templateKey = (id: string) => `${TEMPLATES_DIR}/${id}`;

/** A template id: a storage path that is still one below `templates/` (the prefix counts against the limits). */
export const TemplateId = StoragePath.refine((id) => storagePathProblem(templateKey(id)) === null, { message: "is too long or too deep below templates/" });
export const TemplateDirPrefix = StoragePrefix.refine((p) => p === "" || storagePrefixProblem(templateKey(p)) === null, {
  message: "is too long or too deep below templates/",
});
const idOfKey = (key: string) => key.slice(TEMPLATES_DIR.length + 1);

export const templateNotFound = () => notFound("template not found");

/** A template as listings show it. */
export const TemplateMeta = z
  .object({
    id: z.string(),
    resource_id: z.string(),
    size: z.number().int(),
    etag: z.string(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .strict();
export type TemplateMeta = z.infer<typeof TemplateMeta>;

/** A fetched template: its text and what it references. */
export const TemplateView = TemplateMeta.extend({
  content: z.string(),
  variables: z.array(TemplateVariable),
  schema: z.record(z.string(), z.unknown()),
}).strict();
export type TemplateView = z.infer<typeof TemplateView>;

function metaOf(v: ObjectView): TemplateMeta {
  return { id: idOfKey(v.id), resource_id: v.id, size: v.size, etag: v.etag, created_at: v.created_at, updated_at: v.updated_at };
}

export const TemplateListing = z.object({ items: z.array(TemplateMeta), next_cursor: z.string().nullable() }).strict();
export type TemplateListing = z.infer<typeof TemplateListing>;

export async function listTemplates(bucket: R2Bucket, q: { prefix?: string; cursor?: string; limit: number }): Promise<TemplateListing> {
  const page: ListingView = await listObjects(bucket, { prefix: templateKey(q.prefix ?? ""), cursor: q.cursor, limit: q.limit, recursive: true });
  return { items: page.items.map(metaOf), next_cursor: page.next_cursor };
}

const notATemplate = () => badRequest(`template is not UTF-8 text of at most ${TEXT_RESOURCE_MAX_BYTES} bytes`);

// --- the per-isolate cache ------------------------------------------------------------------

const CACHE_MAX = 256;
const cache = new Map<string, { etag: string; content: string }>();

function remember(id: string, entry: { etag: string; content: string }): void {
  cache.delete(id);
  cache.set(id, entry);
  // Oldest first: Map keeps insertion order, and a hit re-inserts.
  for (const oldest of cache.keys()) {
    if (cache.size <= CACHE_MAX) break;
    cache.delete(oldest);
  }
}

/** Entries dropped. */
export function clearTemplateCache(): number {
  const n = cache.size;
  cache.clear();
  Mustache.clearCache();
  return n;
}

/** How many templates this isolate holds (tests). */
export function cachedTemplateCount(): number {
  return cache.size;
}

/** The text of template `id` (cached by ETag), or null when there is none. */
export async function loadTemplateText(bucket: R2Bucket, id: string): Promise<{ content: string; etag: string; object: R2Object } | null> {
  const hit = cache.get(id);
  const o = await bucket.get(templateKey(id), hit ? { onlyIf: { etagDoesNotMatch: hit.etag } } : undefined);
  if (!o) {
    cache.delete(id);
    return null;
  }
  if (!("body" in o)) {
    // Not modified since cached (only a cached entry's etag asks that).
    const cached = must(hit, "the cached entry a not-modified answer confirms");
    remember(id, cached);
    return { ...cached, object: o };
  }
  if (o.size > TEXT_RESOURCE_MAX_BYTES) {
    await o.body.cancel();
    throw notATemplate();
  }
  const content = utf8Text(await o.arrayBuffer());
  if (content === null) throw notATemplate();
  remember(id, { etag: o.etag, content });
  return { content, etag: o.etag, object: o };
}

// --- doors' operations ----------------------------------------------------------------------

function analyzed(content: string): TemplateAnalysis {
  const a = analyzeTemplate(content);
  if (!a) throw badRequest("invalid body: content: does not parse as mustache");
  return a;
}

export async function fetchTemplate(bucket: R2Bucket, id: string): Promise<TemplateView> {
  const t = await loadTemplateText(bucket, id);
  if (!t) throw templateNotFound();
  const a = analyzeTemplate(t.content);
  if (!a) throw badRequest("template does not parse as mustache");
  return { ...metaOf(viewOf(t.object)), content: t.content, ...a };
}

export const UploadTemplateBody = z.object({ id: TemplateId, content: z.string() }).strict();
export type UploadTemplateBody = z.infer<typeof UploadTemplateBody>;

/** Stores a template after it parsed: 400 when it does not, 413 past the text resource cap. */
export async function uploadTemplate(
  bucket: R2Bucket,
  body: UploadTemplateBody,
  now: string,
): Promise<{ created: boolean; template: TemplateMeta & TemplateAnalysis }> {
  const bytes = new TextEncoder().encode(body.content);
  if (bytes.byteLength > TEXT_RESOURCE_MAX_BYTES) throw new HttpError(413, `content exceeds ${TEXT_RESOURCE_MAX_BYTES} bytes`);
  const a = analyzed(body.content);
  const { created, resource } = await putObject(bucket, templateKey(body.id), bytes, TEMPLATE_CONTENT_TYPE, now);
  cache.delete(body.id);
  return { created, template: { ...metaOf(resource), ...a } };
}

export async function deleteTemplate(bucket: R2Bucket, id: string): Promise<boolean> {
  cache.delete(id);
  return deleteObject(bucket, templateKey(id));
}

export async function deleteTemplateDir(bucket: R2Bucket, dir: string): Promise<{ removed: number; complete: boolean }> {
  for (const id of [...cache.keys()]) if (id.startsWith(`${dir}/`)) cache.delete(id);
  return deleteDir(bucket, templateKey(dir));
}

/** Renders a template text with kwargs (mustache, no HTML escaping), bounded in size. */
export function renderBounded(content: string, kwargs: Record<string, unknown>): string {
  const out = renderTemplate(content, kwargs);
  if (out.length > MAX_RENDERED_CHARS) throw badRequest(`rendered text exceeds ${MAX_RENDERED_CHARS} characters`);
  return out;
}

export async function renderStored(bucket: R2Bucket, id: string, kwargs: Record<string, unknown>): Promise<string> {
  const t = await loadTemplateText(bucket, id);
  if (!t) throw templateNotFound();
  return renderBounded(t.content, kwargs);
}

/**
 * TemplatedText (spec §2.6): `{content | id, kwargs}`, exactly one of content/id, rendered
 * with mustache. Rendering never HTML-escapes: the outputs are jq programs and plain text.
 */
import Mustache from "mustache";
import { z } from "zod";
import { MAX_KWARGS_BYTES, boundedJsonObject } from "../platform/http/bounded-json";
import { HttpError } from "../platform/http/errors";
import { intactIdentifier } from "../platform/http/identifiers";
import { resolveTextAnywhere } from "../storage/text-resources";
import { must } from "../platform/must";

export const templatedTextSchema = z
  .object({
    content: z.string().nullable().optional(),
    id: intactIdentifier(z.string().min(1).max(256)).nullable().optional(),
    // Bounded: kwargs are stored with the route and rendered on every turn, so an unbounded
    // value would break the route for good.
    kwargs: boundedJsonObject(MAX_KWARGS_BYTES).default({}),
  })
  .strict()
  .superRefine((t, ctx) => {
    const hasContent = t.content !== undefined && t.content !== null;
    const hasId = t.id !== undefined && t.id !== null;
    if (hasContent === hasId) ctx.addIssue({ code: "custom", message: "exactly one of content or id must be set" });
  });
export type TemplatedText = z.infer<typeof templatedTextSchema>;

/** Parsed templates kept per isolate: at most this many, the least recently used dropped first. */
export const MUSTACHE_CACHE_MAX_ENTRIES = 256;
/** ... and at most this many characters of template text over all of them. */
export const MUSTACHE_CACHE_MAX_CHARS = 1_000_000;
/** A longer template is parsed on every render and never kept (parsing is linear in its length). */
export const MUSTACHE_CACHE_MAX_TEMPLATE_CHARS = 64 * 1024;

/**
 * mustache's own cache keeps every template text it ever parsed, for the isolate's life: a render
 * door given `content`, and every upload it checks, would add one each. This one is bounded by
 * entries and by text, least recently used first.
 */
class BoundedTemplateCache implements NonNullable<typeof Mustache.templateCache> {
  private readonly entries = new Map<string, string>();
  private chars = 0;

  get size(): number {
    return this.entries.size;
  }

  get textChars(): number {
    return this.chars;
  }

  get(key: string): string | undefined {
    const hit = this.entries.get(key);
    if (hit !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, hit);
    }
    return hit;
  }

  set(key: string, value: string): void {
    if (key.length > MUSTACHE_CACHE_MAX_TEMPLATE_CHARS) return;
    if (this.entries.has(key)) this.chars -= key.length;
    this.entries.delete(key);
    this.entries.set(key, value);
    this.chars += key.length;
    for (const k of this.entries.keys()) {
      if (this.entries.size <= MUSTACHE_CACHE_MAX_ENTRIES && this.chars <= MUSTACHE_CACHE_MAX_CHARS) break;
      this.entries.delete(k);
      this.chars -= k.length;
    }
  }

  clear(): void {
    this.entries.clear();
    this.chars = 0;
  }
}

/** The isolate's parsed-template cache (tests read its size). */
export const mustacheCache = new BoundedTemplateCache();
Mustache.templateCache = mustacheCache;

/** Renders a template string with kwargs (pure). Unknown tags render empty, as mustache does. */
export function renderTemplate(template: string, kwargs: Record<string, unknown>): string {
  try {
    return Mustache.render(template, kwargs, {}, { escape: (v: unknown) => String(v) });
  } catch {
    throw new HttpError(400, "template does not parse as mustache");
  }
}

/**
 * Resolves `id` (404 when absent) and renders. An id resolves in the content store first (the R2
 * object of that key), then in the D1 text resources (src/storage/text-resources.ts).
 */
export async function renderTemplatedText(db: D1Database, t: TemplatedText): Promise<string> {
  let source: string;
  if (t.content !== undefined && t.content !== null) source = t.content;
  else {
    const res = await resolveTextAnywhere(db, must(t.id, "a templated text's id (it has content or id)"));
    if (!res) throw new HttpError(404, "templated text resource not found");
    source = res.content;
  }
  return renderTemplate(source, t.kwargs ?? {});
}

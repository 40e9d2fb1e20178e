/**
 * TemplatedText (spec §2.6): `{content | id, kwargs}`, exactly one of content/id, rendered
 * with mustache. Rendering never HTML-escapes: the outputs are jq programs and plain text.
 */
import Mustache from "mustache";
import { HttpError } from "../platform/http/errors";
import { resolveTextAnywhere } from "../storage/text-resources";
import { must } from "../platform/must";

export { type TemplatedText, templatedTextSchema } from "../shared/templated-text";
import type { TemplatedText } from "../shared/templated-text";

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

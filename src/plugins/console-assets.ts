/**
 * Plugins' console assets (docs/plugins.md): the static files of an installed plugin's
 * console panels, kept in the content store under `plugins/<namespace>/<name>/studio/` (written by
 * an admin: storage writes under `plugins/` are admin-only) and served by
 * `GET /api/plugins/{name}/studio/{path}` as pages of this origin.
 *
 * Because they are served inline, what is served is strict: only the file types of a static web
 * page (the type comes from the extension, never from what was uploaded), always with `nosniff`
 * and a content security policy that lets a page load its own scripts, styles, images and fonts
 * from this origin and nothing else (no inline script, no other origin, no plugins, no forms), and
 * lets only this origin's console frame it. Bundle contract `bridge-declarations` 1 carries no
 * assets, so a marketplace install never writes here.
 */
import { notFound } from "../platform/http/errors";
import { type ListOptions, viewOf } from "../storage/objects";
import { extensionOf, typeForExtension } from "../storage/content-types";
import { storagePathProblem } from "../storage/paths";

/**
 * The only files the studio door serves, by extension (the files of a static web page); each is
 * served as the type the content store gives its extension (src/storage/content-types.ts).
 */
export const STUDIO_EXTENSIONS: ReadonlySet<string> = new Set([
  "html",
  "js",
  "mjs",
  "css",
  "json",
  "map",
  "txt",
  "svg",
  "png",
  "jpg",
  "jpeg",
  "gif",
  "webp",
  "ico",
  "woff",
  "woff2",
]);

/** The type a studio file is served as, or null when the door does not serve its kind. */
export function studioType(path: string): string | null {
  return STUDIO_EXTENSIONS.has(extensionOf(path)) ? typeForExtension(path) : null;
}

export const STUDIO_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "object-src 'none'",
  "frame-ancestors 'self'",
].join("; ");

export const STUDIO_HEADERS: Readonly<Record<string, string>> = {
  "content-security-policy": STUDIO_CSP,
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cross-origin-resource-policy": "same-origin",
  "cross-origin-opener-policy": "same-origin",
  "cache-control": "private, no-cache",
};

export const studioDir = (ref: string) => `plugins/${ref}/studio`;

/** The door's URL of a studio file (the ref's `/` and the path's `/` percent-encoded: one segment each). */
export const studioUrl = (ref: string, path: string) => `/api/plugins/${encodeURIComponent(ref)}/studio/${encodeURIComponent(path)}`;

export const assetNotFound = () => notFound("studio asset not found");

export interface StudioPanel {
  /** The panel page's path below the studio directory. */
  path: string;
  /** Where the console loads it. */
  url: string;
}

/** A plugin's panels: the HTML pages at the top of its studio directory, by path. */
export async function studioPanels(bucket: R2Bucket, ref: string): Promise<StudioPanel[]> {
  const prefix = `${studioDir(ref)}/`;
  const page = await bucket.list({ prefix, delimiter: "/", limit: 100 } satisfies ListOptions);
  return page.objects
    .map((o) => o.key.slice(prefix.length))
    .filter((p) => extensionOf(p) === "html")
    .sort()
    .map((path) => ({ path, url: studioUrl(ref, path) }));
}

/** The studio file `path` of plugin `ref` as a response, or 404 (unknown, or not a servable type). */
export async function serveStudioAsset(bucket: R2Bucket, ref: string, path: string, request: Request): Promise<Response> {
  const type = studioType(path);
  const key = `${studioDir(ref)}/${path}`;
  if (!type || storagePathProblem(key)) throw assetNotFound();
  const head = await bucket.head(key);
  if (!head) throw assetNotFound();
  const headers = new Headers(STUDIO_HEADERS);
  headers.set("etag", viewOf(head).etag);
  if (request.headers.get("if-none-match") === head.httpEtag) return new Response(null, { status: 304, headers });
  const o = await bucket.get(key);
  if (!o) throw assetNotFound();
  headers.set("content-type", type);
  headers.set("content-length", String(o.size));
  headers.set("etag", o.httpEtag);
  return new Response(o.body, { status: 200, headers });
}

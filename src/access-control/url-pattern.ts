/**
 * The URL matching of custom scopes (pure; docs/access-control.md, "Custom URL scopes").
 *
 * A scope URL is a path (`/api/states/profile`), never a full URL or a query. Matching is by
 * `/`-separated segments after dropping one trailing `/` on both sides:
 *   exact (`pattern: false`)  the path equals the URL;
 *   pattern (`pattern: true`) a `*` segment matches exactly one non-empty segment, a final `**`
 *                             matches any rest (zero or more segments), other segments literally.
 * `*` is refused in exact URLs and inside a segment (`foo*`), and `{`/`}` are refused everywhere,
 * so an exact URL can never match a route's path template: `me` (which authorizes templates)
 * then never advertises a door a custom scope opens only for one concrete path.
 */

export const MAX_SCOPE_URL_LENGTH = 512;

const SEGMENT_CHARS = /^[A-Za-z0-9\-._~%!$&'()+,;=:@]+$/;

/** Why `url` is not a valid scope URL (naming the rule, never the value), or null. */
export function scopeUrlProblem(url: string, pattern: boolean): string | null {
  if (url.length === 0 || url.length > MAX_SCOPE_URL_LENGTH) return `url: must be 1-${MAX_SCOPE_URL_LENGTH} characters`;
  if (!url.startsWith("/")) return "url: must be a path starting with /";
  const segments = segmentsOf(url);
  for (let i = 0; i < segments.length; i++) {
    const s = segments[i];
    if (s === "") return "url: must not contain empty segments (//)";
    if (s === "." || s === "..") return "url: must not contain . or .. segments";
    if (s === "*" || s === "**") {
      if (!pattern) return "url: * is only allowed with pattern: true";
      if (s === "**" && i !== segments.length - 1) return "url: ** is only allowed as the last segment";
      continue;
    }
    if (s.includes("*")) return "url: * must be a whole segment (* or **)";
    if (!SEGMENT_CHARS.test(s)) return "url: segments may hold only letters, digits and - . _ ~ % ! $ & ' ( ) + , ; = : @";
  }
  return null;
}

/** The segments of a path after its leading `/`, with one trailing `/` dropped (`/` → []). */
export function segmentsOf(path: string): string[] {
  let p = path.startsWith("/") ? path.slice(1) : path;
  if (p.endsWith("/")) p = p.slice(0, -1);
  return p === "" ? [] : p.split("/");
}

/** Does the scope URL match the request path? */
export function scopeUrlMatches(url: string, pattern: boolean, path: string): boolean {
  const want = segmentsOf(url);
  const got = segmentsOf(path);
  if (!pattern) return want.length === got.length && want.every((s, i) => s === got[i]);
  for (let i = 0; i < want.length; i++) {
    const w = want[i];
    if (w === "**") return true;
    if (i >= got.length) return false;
    if (w === "*") {
      if (got[i] === "") return false;
      continue;
    }
    if (w !== got[i]) return false;
  }
  return want.length === got.length;
}

const PARAM = /^\{[A-Za-z0-9_]+\}$/;

/**
 * Could the scope URL match some concrete path of a route whose OpenAPI template is `template`
 * (`{name}` segments stand for any one segment)? Used to list the scopes that map a route.
 */
export function scopeUrlOverlapsTemplate(url: string, pattern: boolean, template: string): boolean {
  const want = segmentsOf(url);
  const got = segmentsOf(template);
  for (let i = 0; i < want.length; i++) {
    const w = want[i];
    if (pattern && w === "**") return true;
    if (i >= got.length) return false;
    if (PARAM.test(got[i])) continue; // a parameter takes any one segment, a literal or `*`
    if (pattern && w === "*") continue;
    if (w !== got[i]) return false;
  }
  return want.length === got.length;
}

/**
 * The web channel's browser files and its HTML (docs/web-channel-client.md): the chat page's shell,
 * the refusal page, and the built files of public/web/ (scripts/build-console.mjs), served by exact
 * name from the build's integrity manifest. Free of other areas' imports: the doors compose it.
 *
 * The page loads only its own script and stylesheet, both pinned by SRI, and nothing is inline, so
 * the page's policy (WEB_PAGE_CSP) needs no hash and no nonce. Everything that goes into the HTML
 * is escaped: the identity and the title come from configuration, never trusted as markup. The
 * page is written in the visitor's language (src/web-chat/strings/), and carries that language's
 * table for its script as a JSON data block, which the browser never runs, so the policy still
 * allows no inline script.
 */
import type { Env } from "../platform/env";
import type { StringKey } from "./strings/en";
import { STRING_TABLES, fill } from "./strings/index";
import { type Locale, isRtl } from "./strings/locales";
import { webAssetVersion } from "./asset-version";

/**
 * The chat page's policy: its own files only; images from any https origin (media cards) and
 * from `blob:` (the visitor's own uploads, fetched with the session and shown from memory). Trusted
 * Types are required and no policy may be made: the page builds its DOM from elements and text
 * nodes only (webchat/src/dom.ts, webchat/src/markdown.ts), so no HTML sink is ever fed a string.
 */
export const WEB_PAGE_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src https: data: blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'; require-trusted-types-for 'script'; trusted-types 'none'";

/** Where the doors serve the files the manifest names (`GET assets/{name}`). */
export const WEB_ASSETS_PATH = "/api/channels/web/assets/";

const MANIFEST_PATH = "/web/manifest.json";
// The ASSETS binding reads only the path; the host just makes the URL absolute.
const ASSETS_BASE = "https://assets.invalid";

let manifestOnce: Promise<Record<string, string>> | null = null;

/**
 * The build's manifest, `{file name: "sha384-…"}`, read once per isolate (the files change only
 * with a deploy, which starts new isolates). A missing or unreadable manifest is `{}` and is read
 * again next time, so a build that lands later is seen.
 */
export function webManifest(env: Env): Promise<Record<string, string>> {
  if (manifestOnce) return manifestOnce;
  const reading = readManifest(env);
  manifestOnce = reading;
  void reading.then((m) => {
    if (Object.keys(m).length === 0 && manifestOnce === reading) manifestOnce = null;
  });
  return reading;
}

async function readManifest(env: Env): Promise<Record<string, string>> {
  try {
    const res = await env.ASSETS.fetch(new Request(ASSETS_BASE + MANIFEST_PATH));
    if (!res.ok) {
      await res.body?.cancel();
      return {};
    }
    const body: unknown = await res.json();
    const out: Record<string, string> = {};
    if (body && typeof body === "object" && !Array.isArray(body)) {
      for (const [name, integrity] of Object.entries(body)) {
        if (typeof integrity === "string" && /^[a-z0-9][a-z0-9._-]*$/i.test(name)) out[name] = integrity;
      }
    }
    return out;
  } catch {
    return {};
  }
}

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  js: "text/javascript; charset=utf-8",
  css: "text/css; charset=utf-8",
};

/**
 * What host pages of other origins load: the widget's script, and the stylesheet the widget
 * fetches (with CORS: it holds nothing but the service's own styles).
 */
const CROSS_ORIGIN_FILES: ReadonlySet<string> = new Set(["widget.js", "chat.css"]);

/**
 * One built file by `name`, or null when the manifest does not name it. The name is compared
 * exactly with the manifest's keys, so no path, dot segment or encoding reaches ASSETS. `version`
 * (the widget's `?v=`) equal to the file's own makes the answer cacheable for good.
 */
export async function serveWebAsset(env: Env, name: string, version?: string): Promise<Response | null> {
  const manifest = await webManifest(env);
  if (!Object.hasOwn(manifest, name)) return null;
  const ext = name.slice(name.lastIndexOf(".") + 1);
  const type = CONTENT_TYPES[ext];
  if (!type) return null;
  const res = await env.ASSETS.fetch(new Request(`${ASSETS_BASE}/web/${name}`));
  if (!res.ok) {
    await res.body?.cancel();
    return null;
  }
  const crossOrigin = CROSS_ORIGIN_FILES.has(name);
  const current = version !== undefined && version === webAssetVersion(manifest[name]);
  const headers = new Headers({
    "content-type": type,
    "x-content-type-options": "nosniff",
    "cross-origin-resource-policy": crossOrigin ? "cross-origin" : "same-origin",
    // The page pins chat.js and chat.css by SRI in HTML it serves fresh, so they are revalidated on
    // every load (a stale copy after a deploy would fail its integrity check). The widget's snippet
    // carries no integrity and is fetched on every page view of a host site: a short shared cache.
    // The stylesheet the widget asks for by its version never changes under that name.
    "cache-control": current ? "public, max-age=31536000, immutable" : name === "widget.js" ? "public, max-age=300" : "no-cache",
  });
  if (name === "chat.css") headers.set("access-control-allow-origin", "*");
  const etag = res.headers.get("etag");
  if (etag) headers.set("etag", etag);
  return new Response(res.body, { status: 200, headers });
}

/** `text` safe inside HTML text and double-quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function integrityAttr(manifest: Record<string, string>, name: string): string {
  return Object.hasOwn(manifest, name) ? ` integrity="${escapeHtml(manifest[name])}"` : "";
}

/** `<html>`'s language attributes for `locale`. */
function langAttrs(locale: Locale): string {
  return `lang="${locale}" dir="${isRtl(locale) ? "rtl" : "ltr"}"`;
}

/** The page's table as a JSON data block's text: `<` escaped, so no `</script>` can close it early. */
function tableJson(locale: Locale): string {
  return JSON.stringify(STRING_TABLES[locale]).replace(/</g, "\\u003c");
}

/**
 * The chat page for one web identity, in `locale`. The script (webchat/src/page.ts) finds the
 * identity in the `tai-identity` meta and its strings in `#tai-strings`, and mounts on the elements
 * below by id. `title` null is the language's own "Chat". `embedded` marks a page shown inside
 * another surface (a frame of the operator's own site): a compact header, same behaviour.
 */
export function renderChatPage(o: { identity: string; title: string | null; manifest: Record<string, string>; embedded: boolean; locale: Locale }): string {
  const s = (key: StringKey) => escapeHtml(STRING_TABLES[o.locale][key]);
  const title = o.title === null ? s("title") : escapeHtml(o.title);
  return `<!doctype html>
<html ${langAttrs(o.locale)}${o.embedded ? ' class="tai-embedded"' : ""}>
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="referrer" content="no-referrer">
<meta name="tai-identity" content="${escapeHtml(o.identity)}">
<title>${title}</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="${WEB_ASSETS_PATH}chat.css"${integrityAttr(o.manifest, "chat.css")}>
<script type="application/json" id="tai-strings">${tableJson(o.locale)}</script>
<script type="module" src="${WEB_ASSETS_PATH}chat.js"${integrityAttr(o.manifest, "chat.js")}></script>
</head>
<body class="tai-page">
<main id="tai-chat" class="tai-chat" aria-labelledby="tai-title">
<header class="tai-head">
<h1 id="tai-title" class="tai-title">${title}</h1>
<button type="button" id="tai-new" class="tai-new">${s("new")}</button>
</header>
<ol id="tai-transcript" class="tai-list" aria-live="polite" aria-relevant="additions" aria-label="${s("transcript")}" aria-busy="true" tabindex="0"></ol>
<p id="tai-status" class="tai-status" role="status"></p>
<form id="tai-form" class="tai-form">
<label for="tai-input" class="tai-label">${s("message")}</label>
<textarea id="tai-input" class="tai-input" name="text" rows="2" maxlength="8000" required autocomplete="off" aria-describedby="tai-hint"></textarea>
<button type="submit" id="tai-send" class="tai-send">${s("send")}</button>
<p id="tai-hint" class="tai-hint">${s("hint")}</p>
</form>
<noscript><p>${s("page.noscript")}</p></noscript>
</main>
</body>
</html>
`;
}

/**
 * A refusal as a page, in `locale`: plain HTML, no script, no style (served under WEB_PAGE_CSP as
 * well). `title` null is the language's own "Chat"; `message` is a key, filled with `vars`.
 */
export function refusalPage(locale: Locale, title: string | null, message: StringKey, vars?: Record<string, string | number>): string {
  const table = STRING_TABLES[locale];
  const heading = title ?? table.title;
  return `<!doctype html>
<html ${langAttrs(locale)}>
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="referrer" content="no-referrer">
<title>${escapeHtml(heading)}</title>
<link rel="icon" href="data:,">
</head>
<body>
<main>
<h1>${escapeHtml(heading)}</h1>
<p>${escapeHtml(fill(table[message], vars))}</p>
</main>
</body>
</html>
`;
}

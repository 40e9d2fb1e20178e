#!/usr/bin/env node
// Build step of the operator console and the API reference (docs/console.md): writes the
// Worker's static assets into public/ (wrangler.toml [assets]), from npm packages only, offline:
//   - console/src/main.ts, bundled and minified by esbuild → public/console/console.js;
//   - console/console.css, minified by esbuild → public/console/console.css;
//   - console/index.html → public/console/index.html;
//   - Scalar's standalone browser bundle (@scalar/api-reference) → public/vendor/scalar-api-reference.js,
//     which GET /api/docs loads from this origin instead of a CDN;
//   - the web channel's client (docs/web-channel-client.md): webchat/src/page.ts → public/web/chat.js
//     (a module), webchat/src/widget.ts → public/web/widget.js (a classic script, so it can find its
//     own tag; it fetches the stylesheet of its own build, __TAI_CSS_V__, rather than carrying it),
//     webchat/chat.css → public/web/chat.css, and
//     public/web/manifest.json, `{file name: "sha384-…"}`, the SRI values the page pins them by and
//     the list of the only names the asset door serves (src/web-chat/assets.ts). Both scripts carry
//     the string tables' version (src/web-chat/strings/index.ts, __TAI_STRINGS_V__), which the
//     widget asks the strings door for, so a table is cached exactly as long as its scripts.
// The widget must stay under WIDGET_BUDGET gzipped (docs/web-channel-client.md): the build fails
// past it, naming the size, so a change that overgrows it is caught where it is made.
// A file is written only when its content changed, so a run with current outputs writes nothing.
// Runs on npm install (postinstall), at the start of `npm start` and before `npm run deploy`.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";
import { build, transform } from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(import.meta.url);
const out = join(root, "public");
const written = [];

function put(path, content) {
  const target = join(out, path);
  const bytes = typeof content === "string" ? Buffer.from(content, "utf8") : content;
  if (existsSync(target) && readFileSync(target).equals(bytes)) return bytes;
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, bytes);
  written.push(relative(root, target));
  return bytes;
}

const js = await build({
  entryPoints: [join(root, "console/src/main.ts")],
  bundle: true,
  minify: true,
  format: "esm",
  target: "es2022",
  platform: "browser",
  write: false,
  legalComments: "none",
  logLevel: "warning",
});
const jsBytes = put("console/console.js", js.outputFiles[0].contents);

const css = await transform(readFileSync(join(root, "console/console.css"), "utf8"), { loader: "css", minify: true, target: "chrome100" });
const cssBytes = put("console/console.css", css.code);
const htmlBytes = put("console/index.html", readFileSync(join(root, "console/index.html")));

const scalar = require.resolve("@scalar/api-reference/browser/standalone.js");
const scalarBytes = put("vendor/scalar-api-reference.js", readFileSync(scalar));

const WIDGET_BUDGET = 15 * 1024;

// The tables' version, computed exactly as the Worker computes it (the same digest of the same
// JSON), from the tables bundled here as a module.
const tablesModule = await build({
  entryPoints: [join(root, "src/web-chat/strings/index.ts")],
  bundle: true,
  format: "esm",
  platform: "neutral",
  write: false,
  logLevel: "warning",
});
const { stringsDigestInput } = await import(`data:text/javascript;base64,${Buffer.from(tablesModule.outputFiles[0].contents).toString("base64")}`);
const stringsVersion = createHash("sha256").update(stringsDigestInput(), "utf8").digest("hex").slice(0, 16);

/** A built file's version: the first 16 hex digits of its SHA-384, which its SRI value also carries (src/web-chat/assets.ts). */
const webVersion = (text) => createHash("sha384").update(text, "utf8").digest("hex").slice(0, 16);

const webCss = (await transform(readFileSync(join(root, "webchat/chat.css"), "utf8"), { loader: "css", minify: true, target: "chrome100" })).code;
async function bundle(entry, format, define = {}) {
  const r = await build({
    entryPoints: [join(root, entry)],
    bundle: true,
    minify: true,
    format,
    target: "es2022",
    platform: "browser",
    write: false,
    legalComments: "none",
    logLevel: "warning",
    define: { __TAI_STRINGS_V__: JSON.stringify(stringsVersion), ...define },
  });
  return r.outputFiles[0].contents;
}
const web = {
  "chat.js": put("web/chat.js", await bundle("webchat/src/page.ts", "esm")),
  "widget.js": put(
    "web/widget.js",
    await bundle("webchat/src/widget.ts", "iife", { __TAI_CSS_V__: JSON.stringify(webVersion(webCss)), __TAI_WEB_CSS__: JSON.stringify(webCss) }),
  ),
  "chat.css": put("web/chat.css", webCss),
};
const manifest = Object.fromEntries(Object.entries(web).map(([name, bytes]) => [name, `sha384-${createHash("sha384").update(bytes).digest("base64")}`]));
put("web/manifest.json", JSON.stringify(manifest, null, 2) + "\n");

const kb = (b) => `${(b.length / 1024).toFixed(1)} KiB (${(gzipSync(b).length / 1024).toFixed(1)} KiB gzip)`;
if (written.length || process.argv.includes("--sizes")) {
  console.log(`build-console: console.js ${kb(jsBytes)}, console.css ${kb(cssBytes)}, index.html ${kb(htmlBytes)}; API reference bundle ${kb(scalarBytes)}`);
  console.log(`build-console: web chat.js ${kb(web["chat.js"])}, widget.js ${kb(web["widget.js"])}, chat.css ${kb(web["chat.css"])}`);
}
const widgetGzip = gzipSync(web["widget.js"]).length;
console.log(`build-console: widget.js is ${widgetGzip} bytes gzipped (${(widgetGzip / 1024).toFixed(2)} of ${WIDGET_BUDGET / 1024} KiB)`);
if (widgetGzip > WIDGET_BUDGET) {
  console.error(`build-console: widget.js is ${widgetGzip} bytes gzipped, over its budget of ${WIDGET_BUDGET} (docs/web-channel-client.md)`);
  process.exit(1);
}

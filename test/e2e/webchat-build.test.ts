/**
 * The web channel's built client (scripts/build-console.mjs → public/web/): the files the page and
 * the widget load exist, the manifest's SRI values are those of the files (the page pins them, and
 * the asset door serves only the names it lists), each script stays within the budget of 40 KiB
 * gzipped and the widget within its own of 15 KiB (which the build itself enforces), no script
 * carries a string table, the widget carries the stylesheet (and names the stylesheet's version
 * for a browser that must link it), and the widget asks for the tables of the version the Worker
 * serves as current. A plain Node test: it reads the build's output, no server.
 */
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { stringsDigestInput } from "../../src/web-chat/strings/index";
import { webAssetVersion } from "../../src/web-chat/asset-version";

const WEB = join(import.meta.dirname, "../../public/web");
const FILES = ["chat.js", "widget.js", "chat.css"];
const BUDGET = 40 * 1024;
/** The widget's own budget (scripts/build-console.mjs WIDGET_BUDGET): host pages load it on every view. */
const WIDGET_BUDGET = 15 * 1024;

describe("the web channel's built client", () => {
  it("has every file the page and the widget load", () => {
    for (const name of [...FILES, "manifest.json"])
      expect(existsSync(join(WEB, name)), `run \`node scripts/build-console.mjs\`: public/web/${name}`).toBe(true);
  });

  it("lists exactly its files in the manifest, each with the SRI value of its bytes", () => {
    const manifest: Record<string, string> = JSON.parse(readFileSync(join(WEB, "manifest.json"), "utf8"));
    expect(Object.keys(manifest).sort()).toEqual([...FILES].sort());
    for (const name of FILES) {
      const digest = createHash("sha384")
        .update(readFileSync(join(WEB, name)))
        .digest("base64");
      expect(manifest[name], name).toBe(`sha384-${digest}`);
    }
  });

  it("keeps each script under 40 KiB gzipped", () => {
    for (const name of ["chat.js", "widget.js"]) {
      const gz = gzipSync(readFileSync(join(WEB, name))).length;
      expect(gz, `${name}: ${gz} bytes gzipped`).toBeLessThan(BUDGET);
    }
  });

  it("keeps the widget under 15 KiB gzipped", () => {
    const gz = gzipSync(readFileSync(join(WEB, "widget.js"))).length;
    expect(gz, `widget.js: ${gz} bytes gzipped`).toBeLessThanOrEqual(WIDGET_BUDGET);
  });

  it("bundles no string table, and the widget asks for the tables' current version", () => {
    for (const name of ["chat.js", "widget.js"])
      expect(readFileSync(join(WEB, name), "utf8").includes("Enter sends; Shift+Enter starts a new line."), name).toBe(false);
    const version = createHash("sha256").update(stringsDigestInput(), "utf8").digest("hex").slice(0, 16);
    expect(readFileSync(join(WEB, "widget.js"), "utf8").includes(`v=${version}`), `widget.js asks for v=${version}`).toBe(true);
  });

  it("inlines the stylesheet into the widget, so a host page needs no style-src for it and the launcher is styled at once", () => {
    const widget = readFileSync(join(WEB, "widget.js"), "utf8");
    expect(widget).not.toContain("__TAI_WEB_CSS__");
    expect(widget).toContain(".tai-launcher{");
    expect(widget).toContain("adoptedStyleSheets");
    // The fallback <link> of a browser without constructed stylesheets names this build's copy.
    const manifest: Record<string, string> = JSON.parse(readFileSync(join(WEB, "manifest.json"), "utf8"));
    const version = webAssetVersion(manifest["chat.css"]);
    expect(version).toMatch(/^[0-9a-f]{16}$/);
    expect(widget.includes(`assets/chat.css?v=${version}`), `widget.js names chat.css?v=${version}`).toBe(true);
  });
});

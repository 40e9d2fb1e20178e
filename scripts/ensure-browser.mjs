#!/usr/bin/env node
// The browser the console's browser tests drive (docs/console.md "Browser tests"): Debian's
// Chromium, through the system's package manager, never a browser download of a test tool's own
// (`npx playwright install` fetches from outside the package registries and fails here).
//
// Runs on `npm install` (postinstall). When Chromium is already there (CHROMIUM_PATH, or
// /usr/bin/chromium), it does nothing. Otherwise, as root with apt-get, it installs Debian's
// `chromium` package (running `apt-get update` first when the package is not found). When it
// cannot (not root, no apt-get, no network), it says exactly what to install and still exits 0:
// the install of everything else must not fail for it. The browser tests then fail loudly with the
// same instructions (test/browser/support/chromium.ts); they are never skipped.
// CONSOLE_BROWSER_INSTALL=skip turns this step off (a deploy machine that runs no browser test).
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";

const CANDIDATES = [process.env.CHROMIUM_PATH, "/usr/bin/chromium", "/usr/bin/chromium-browser"].filter(Boolean);
const found = () => CANDIDATES.find((p) => existsSync(p));
const INSTRUCTIONS =
  "ensure-browser: the console's browser tests need Chromium. Install Debian's package as root:\n" +
  "    apt-get update && apt-get install -y --no-install-recommends chromium\n" +
  "or point CHROMIUM_PATH at a Chromium binary, then run `npm test` again.";

if (process.env.CONSOLE_BROWSER_INSTALL === "skip") process.exit(0);
if (found()) process.exit(0);

const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
const hasApt = spawnSync("sh", ["-c", "command -v apt-get"], { stdio: "ignore" }).status === 0;
if (!isRoot || !hasApt) {
  console.warn(INSTRUCTIONS);
  process.exit(0);
}

const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
const apt = (...args) => spawnSync("apt-get", args, { stdio: ["ignore", "inherit", "inherit"], env }).status === 0;
console.log("ensure-browser: installing Debian's chromium for the console's browser tests (apt-get)…");
if (!apt("install", "-y", "--no-install-recommends", "chromium")) {
  // A fresh machine's package lists may be empty or old.
  apt("update");
  apt("install", "-y", "--no-install-recommends", "chromium");
}
if (found()) console.log(`ensure-browser: Chromium is at ${found()}`);
else console.warn(INSTRUCTIONS);

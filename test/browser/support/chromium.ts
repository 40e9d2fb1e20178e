/**
 * Debian's Chromium under Playwright (playwright-core, which downloads nothing): the binary comes
 * from `npm install` (scripts/ensure-browser.mjs installs the system package). A missing browser is
 * a loud failure with the install command, never a skipped test.
 */
import { existsSync } from "node:fs";
import { type BrowserServer, chromium } from "playwright-core";

export function chromiumPath(): string {
  const found = [process.env.CHROMIUM_PATH, "/usr/bin/chromium", "/usr/bin/chromium-browser"].find((p): p is string => !!p && existsSync(p));
  if (!found) {
    throw new Error(
      "The console's browser tests need Chromium, and none was found (CHROMIUM_PATH, /usr/bin/chromium). " +
        "`npm install` installs it as root (scripts/ensure-browser.mjs); otherwise run " +
        "`apt-get update && apt-get install -y --no-install-recommends chromium` as root, or set CHROMIUM_PATH.",
    );
  }
  return found;
}

/**
 * Headless Chromium as a server that the browser files connect to (test/browser/support/shared.ts):
 * one browser process for the run, each file in fresh contexts of its own (Playwright gives every
 * context its own profile). The flags keep it off the network it has no business with: this
 * machine refuses those connections, and a test must not depend on them.
 */
export async function launchChromiumServer(): Promise<BrowserServer> {
  return chromium.launchServer({
    executablePath: chromiumPath(),
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

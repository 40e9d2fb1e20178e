/**
 * The browser files' side of the project's shared Chromium and shared `wrangler dev`
 * (test/browser/support/shared-server.ts starts each on the first file's request).
 *
 * Every browser file connects to the one Chromium (`sharedChromium`) and opens fresh contexts of
 * its own in it (test/browser/support/pages.ts). Closing the connection in `afterAll` closes the
 * file's contexts and leaves the browser to the others.
 *
 * A file uses the shared server (`sharedServer`, signed in as its admin `root`, and
 * `sharedProviders` for what the channels sent) instead of starting its own when all of these hold:
 *   - it needs no vars or start flags beyond test/browser/support/shared-vars.ts, and never
 *     restarts or stops the server; it does not bootstrap nor change runtime settings;
 *   - it names its routes, web identities, tools, agents, keys and labels with names no other
 *     browser file uses, and sets conversation configs only on targets of its own (a config is the
 *     target's, server-wide: console.browser's agent `echo` is multichannel with a greeting);
 *   - the server has one Telegram bot, and console.browser's route `support` holds it; another
 *     file's channel routes are WhatsApp routes on a phone number id of their own (any number of
 *     them may exist), or web routes;
 *   - it asserts nothing another file could change: no totals over the whole server (runs,
 *     metrics, notifications, every route or waiting thread a key sees), only its own records, and
 *     reads the fake providers' sends by its own addresses or texts (they hold every file's).
 * inbox.browser.test.ts keeps a server of its own: its operators see every route of the server and
 * every waiting thread, and its alert time is 5 s.
 *
 * Adding a browser file costs its tests only: no server, browser or bundle build of its own.
 */
import { request } from "node:http";
import { type Browser, chromium } from "playwright-core";
import { inject } from "vitest";
import type { ProviderSend } from "../../e2e/support/fake-providers";

declare module "vitest" {
  export interface ProvidedContext {
    /** The loopback URL of test/browser/support/shared-server.ts, which starts and hands out what is shared. */
    browserShared: string;
  }
}

export interface SharedServer {
  baseUrl: string;
  /** An admin key of the shared server (its bootstrap key, `root`). */
  adminKey: string;
}

async function ask<T>(path: string): Promise<T> {
  const res = await fetch(`${inject("browserShared")}${path}`, { method: "POST" });
  if (!res.ok) throw new Error(`the shared ${path.slice(1)} did not start:\n${await res.text()}`);
  return (await res.json()) as T;
}

/** A connection to the run's one Chromium; `close()` ends the file's contexts, not the browser. */
export async function sharedChromium(): Promise<Browser> {
  const { wsEndpoint } = await ask<{ wsEndpoint: string }>("/chromium");
  return chromium.connect(wsEndpoint);
}

/** The shared server, started by the first file that asks; the others wait for the same one. */
export function sharedServer(): Promise<SharedServer> {
  return ask<SharedServer>("/server");
}

export interface SharedProviders {
  /** Every send the shared server's channels made, this file's and the others', in order; kept current. */
  sends: ProviderSend[];
  close: () => void;
}

/** Follows the shared fake providers' sends (read them in a poll: each arrives a moment after it is made). */
export function sharedProviders(): Promise<SharedProviders> {
  const sends: ProviderSend[] = [];
  return new Promise((resolve, reject) => {
    const req = request(`${inject("browserShared")}/sends`, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`following the shared providers' sends failed: ${res.statusCode}`));
      res.setEncoding("utf8");
      let pending = "";
      res.on("data", (chunk: string) => {
        pending += chunk;
        const lines = pending.split("\n");
        pending = lines.pop() ?? "";
        for (const line of lines) if (line) sends.push(JSON.parse(line) as ProviderSend);
      });
      res.on("error", () => undefined);
      resolve({ sends, close: () => req.destroy() });
    });
    req.on("error", reject);
    req.end();
  });
}

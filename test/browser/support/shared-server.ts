/**
 * Global setup of the browser project: what every browser file would otherwise start for itself,
 * started once and handed to the files (test/browser/support/shared.ts is their side and lists the
 * rules for sharing):
 *
 *   - the console and web chat bundles, built once from console/ and webchat/ as they are now
 *     (scripts/build-console.mjs), before any page or server;
 *   - one headless Chromium, as a Playwright browser server the files connect to;
 *   - one `wrangler dev` (the harness's, from the migrated template, with the vars of
 *     test/browser/support/shared-vars.ts), its admin key `root`, and the fake providers its
 *     channels send to.
 *
 * Each starts on the first file's request, not here: vitest runs every project's global setup
 * before any file of the run, so starting them here would hold every slot back. This setup only
 * opens a small loopback endpoint and hands its URL to the files (`provide`):
 *   - `POST /chromium` answers `{ wsEndpoint }`;
 *   - `POST /server` answers `{ baseUrl, adminKey }`;
 *   - `GET /sends` streams the fake providers' sends as JSON lines, those so far and then each new
 *     one as it is recorded.
 * Everything stops after the last file.
 */
import { spawn } from "node:child_process";
import { type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import type { BrowserServer } from "playwright-core";
import type { TestProject } from "vitest/node";
import { BOOTSTRAP_TOKEN, type DevServer, ROOT, http, startDev } from "../../e2e/harness";
import { type FakeProviders, type ProviderSend, startFakeProviders } from "../../e2e/support/fake-providers";
import { launchChromiumServer } from "./chromium";
import type { SharedServer } from "./shared";
import { sharedServerVars } from "./shared-vars";

/** Builds the console and web chat bundles into public/ (what `npm install` did, from today's sources). */
function buildBundles(): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(ROOT, "scripts", "build-console.mjs")], { cwd: ROOT, stdio: ["ignore", "ignore", "pipe"] });
    let err = "";
    child.stderr.on("data", (d) => (err += d));
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`build-console failed (${code}): ${err}`))));
  });
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let built: Promise<void> | null = null;
  let chromium: Promise<BrowserServer> | null = null;
  let server: Promise<SharedServer> | null = null;
  let dev: DevServer | null = null;
  let fake: FakeProviders | null = null;
  const followers = new Set<ServerResponse>();

  const build = () => (built ??= buildBundles());

  async function startChromium(): Promise<BrowserServer> {
    await build();
    return launchChromiumServer();
  }

  async function startServer(): Promise<SharedServer> {
    await build();
    fake = await startFakeProviders({
      onSend: (send: ProviderSend) => {
        for (const res of followers) res.write(`${JSON.stringify(send)}\n`);
      },
    });
    const providers = fake;
    dev = await startDev({ vars: sharedServerVars((channel) => providers.base(channel)) });
    const boot = await http(dev.baseUrl, "POST", "/api/keys/bootstrap", {
      body: { user_id: "root", description: "the shared browser server's admin", bootstrap_token: BOOTSTRAP_TOKEN },
    });
    if (boot.status !== 200) throw new Error(`bootstrapping the shared browser server failed: ${boot.status} ${JSON.stringify(boot.body)}`);
    return { baseUrl: dev.baseUrl, adminKey: boot.body.data.token };
  }

  function answer(res: ServerResponse, value: Promise<unknown>): void {
    value.then(
      (v) => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify(v));
      },
      (err: unknown) => {
        res.writeHead(500, { "content-type": "text/plain" });
        res.end(err instanceof Error ? err.message : String(err));
      },
    );
  }

  const control = createServer((req, res) => {
    req.resume();
    if (req.method === "POST" && req.url === "/chromium") {
      chromium ??= startChromium();
      return answer(
        res,
        chromium.then((b) => ({ wsEndpoint: b.wsEndpoint() })),
      );
    }
    if (req.method === "POST" && req.url === "/server") {
      server ??= startServer();
      return answer(res, server);
    }
    if (req.method === "GET" && req.url === "/sends") {
      res.writeHead(200, { "content-type": "application/x-ndjson" });
      for (const send of fake?.sends ?? []) res.write(`${JSON.stringify(send)}\n`);
      followers.add(res);
      res.on("close", () => followers.delete(res));
      // The headers go out now: the follower knows it is following before any send.
      res.flushHeaders();
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve, reject) => {
    control.once("error", reject);
    control.listen(0, "127.0.0.1", resolve);
  });
  project.provide("browserShared", `http://127.0.0.1:${(control.address() as AddressInfo).port}`);

  /** Stops whatever started; the next request starts it afresh. */
  async function stop(): Promise<void> {
    const [startingChromium, startingServer] = [chromium, server];
    chromium = null;
    server = null;
    built = null;
    for (const res of followers) res.end();
    followers.clear();
    await Promise.all([startingChromium?.then((b) => b.close()).catch(() => undefined), startingServer?.catch(() => undefined)]);
    await dev?.close();
    await fake?.close();
    dev = null;
    fake = null;
  }
  // A rerun in watch mode starts from a fresh server and browser, as the files' first run did.
  project.onTestsRerun(stop);

  return async () => {
    control.closeAllConnections();
    await new Promise<void>((resolve) => control.close(() => resolve()));
    await stop();
  };
}

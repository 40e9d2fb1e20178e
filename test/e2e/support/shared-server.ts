/**
 * Global setup of the e2e project: one `wrangler dev`, started by the harness like any other (a
 * copy of the migrated template, E2E_DEFAULT_VARS and this process's E2E_SECRETS), shared by the
 * files that need no settings of their own and assert nothing another such file could change
 * (test/e2e/support/shared-dev.ts lists them and explains the rules).
 *
 * The server starts on the first file's request, not here: a run that selects none of those files
 * pays nothing for it. This setup only opens a small loopback endpoint and hands its URL to the
 * files (`provide`); the first POST to it starts the server and bootstraps an admin key, and every
 * POST answers `{ baseUrl, adminKey }` once both are there. The server stops after the last file.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { TestProject } from "vitest/node";
import { BOOTSTRAP_TOKEN, type DevServer, http, startDev } from "../harness";
import type { SharedDev } from "./shared-dev";

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  let dev: DevServer | null = null;
  let ready: Promise<SharedDev> | null = null;

  async function start(): Promise<SharedDev> {
    dev = await startDev();
    const boot = await http(dev.baseUrl, "POST", "/api/keys/bootstrap", {
      body: { user_id: "root", description: "the shared e2e server's admin", bootstrap_token: BOOTSTRAP_TOKEN },
    });
    if (boot.status !== 200) throw new Error(`bootstrapping the shared e2e server failed: ${boot.status} ${JSON.stringify(boot.body)}`);
    return { baseUrl: dev.baseUrl, adminKey: boot.body.data.token };
  }

  const control = createServer((req, res) => {
    req.resume();
    ready ??= start();
    ready.then(
      (shared) => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify(shared));
      },
      (err: unknown) => {
        res.writeHead(500, { "content-type": "text/plain" });
        res.end(err instanceof Error ? err.message : String(err));
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    control.once("error", reject);
    control.listen(0, "127.0.0.1", resolve);
  });
  project.provide("e2eSharedServer", `http://127.0.0.1:${(control.address() as AddressInfo).port}`);

  /** Stops the server, if one started; the next request starts a fresh one. */
  async function stop(): Promise<void> {
    const starting = ready;
    ready = null;
    await starting?.catch(() => undefined);
    await dev?.close();
    dev = null;
  }
  // A rerun in watch mode starts from a fresh server, as the files' first run did.
  project.onTestsRerun(stop);

  return async () => {
    // The files' fetches may keep a connection alive; close waits for none of them.
    control.closeAllConnections();
    await new Promise<void>((resolve) => control.close(() => resolve()));
    await stop();
  };
}

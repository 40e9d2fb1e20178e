#!/usr/bin/env node
// The server `npm start` runs by default: the same local runtime as `wrangler dev` (wrangler's
// programmatic dev API over workerd, local persistence, `.dev.vars` secrets, rebuild on change),
// without the DevTools inspector. `wrangler dev` always attaches its inspector proxy, which enables
// the runtime's Network domain and hands every subrequest (each D1 query, each Durable Object
// call) to wrangler's Node process as an event to format and log: a development-tool cost of
// several milliseconds per message that a deployed Worker never pays. `npm start -- --inspect`
// runs `wrangler dev` itself, inspector included, for debugging.
//
// Options (scripts/start.mjs parses and checks them): one JSON argument with `config`, `ip`,
// `port`, `persistTo`, `logLevel` and `vars` (name → value, added as plain-text bindings on top of
// wrangler.toml's `[vars]`, as `--var` does).
import { realpathSync } from "node:fs";
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

// Loaded through require: an ESM import of wrangler's CommonJS bundle first has Node scan the whole
// bundle for its export names, which adds most of a second of CPU to every start.
const { unstable_startWorker } = createRequire(import.meta.url)("wrangler");

/**
 * Starts the Worker as `npm start` serves it, from the options above. `watch: false` leaves out the
 * rebuild on change (the test run's dev server factory, test/e2e/support/dev-factory.mjs, serves
 * a fixed checkout). Resolves once the worker is ready; `dispose()` stops it.
 */
export async function startServer(opts, { watch } = {}) {
  const worker = await unstable_startWorker({
    config: opts.config,
    dev: {
      server: { hostname: opts.ip, port: opts.port },
      inspector: false,
      persist: opts.persistTo,
      logLevel: opts.logLevel,
      ...(watch === false ? { watch: false } : {}),
    },
    bindings: Object.fromEntries(Object.entries(opts.vars ?? {}).map(([name, value]) => [name, { type: "plain_text", value }])),
  });
  try {
    await worker.ready;
  } catch (err) {
    // A start that failed (its port taken, say) leaves nothing running behind.
    await worker.dispose().catch(() => {});
    throw err;
  }
  return worker;
}

// Run as a script (scripts/start.mjs spawns it), not imported: serve the one Worker until a signal.
if (process.argv[1] && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  const worker = await startServer(JSON.parse(process.argv[2] ?? "{}"));
  console.log("npm start: serving without the DevTools inspector (npm start -- --inspect serves through wrangler dev with it)");

  let stopping = false;
  async function stop() {
    if (stopping) return;
    stopping = true;
    await worker.dispose().catch(() => {});
    process.exit(0);
  }
  for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => void stop());
}

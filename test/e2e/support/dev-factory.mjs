#!/usr/bin/env node
/**
 * The test run's dev server factory: one Node process that serves many Workers side by side, each
 * started by scripts/serve.mjs's own `startServer` (the server `npm start` runs) with its own port,
 * persistence directory, vars and runtime. The harness (test/e2e/harness.ts) asks it for the e2e
 * and browser servers it can (test/e2e/support/dev-factory.ts starts it and says which).
 *
 * A server through `npm start` is three Node processes (start.mjs, the jq step, serve.mjs) that
 * each load their modules, wrangler among them, before wrangler bundles the Worker: about 7 s of
 * CPU. Here Node and wrangler are loaded once for the run, and a start costs about 3 s.
 *
 * Control, JSON over loopback HTTP:
 *   POST /start {port, persistTo, vars, env?} → 200 once the Worker is ready, else 500 with the error
 *   POST /stop {port}                          → 200 once it stopped
 * `env` (e.g. SSL_CERT_FILE for a test CA) is what the server's runtime process starts with: set
 * on this process for the start only, one such start at a time. Every server runs without the
 * rebuild on change. Its first line on stdout is `listening <port>`.
 */
import { createServer } from "node:http";
import { join } from "node:path";
import { startServer } from "../../../scripts/serve.mjs";

const ROOT = join(import.meta.dirname, "..", "..", "..");

/** Running servers by port. */
const workers = new Map();
/** Starts that set process env run one at a time. */
let envTurn = Promise.resolve();

async function withEnv(env, fn) {
  const entries = Object.entries(env ?? {});
  if (entries.length === 0) return fn();
  const previous = envTurn;
  let release = () => {};
  envTurn = new Promise((resolve) => (release = resolve));
  await previous;
  const saved = entries.map(([name]) => [name, process.env[name]]);
  for (const [name, value] of entries) process.env[name] = value;
  try {
    return await fn();
  } finally {
    for (const [name, value] of saved) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
    release();
  }
}

/** Waits for the Worker's health door: wrangler starts the Worker's own runtime on the first request. */
async function healthy(port) {
  const deadline = Date.now() + 90_000;
  for (;;) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/api/health`)).status === 200) return;
    } catch {
      /* not up yet */
    }
    if (Date.now() > deadline) throw new Error(`the server on port ${port} did not become healthy in time`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function start({ port, persistTo, vars, env }) {
  if (workers.has(port)) throw new Error(`a server already runs on port ${port}`);
  // The env must reach the Worker's runtime process, which starts on the first request.
  await withEnv(env, async () => {
    const worker = await startServer({ config: join(ROOT, "wrangler.toml"), ip: "127.0.0.1", port, persistTo, logLevel: "warn", vars }, { watch: false });
    workers.set(port, worker);
    await healthy(port);
  });
}

async function stop({ port }) {
  const worker = workers.get(port);
  workers.delete(port);
  await worker?.dispose();
}

function body(req) {
  return new Promise((resolve, reject) => {
    let text = "";
    req.setEncoding("utf8");
    req.on("data", (d) => (text += d));
    req.on("end", () => resolve(text ? JSON.parse(text) : {}));
    req.on("error", reject);
  });
}

const control = createServer(async (req, res) => {
  try {
    const input = await body(req);
    if (req.method === "POST" && req.url === "/start") await start(input);
    else if (req.method === "POST" && req.url === "/stop") await stop(input);
    else {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { "content-type": "application/json" }).end("{}");
  } catch (err) {
    res.writeHead(500, { "content-type": "text/plain" }).end(err instanceof Error ? `${err.message}\n${err.stack ?? ""}` : String(err));
  }
});

async function shutdown() {
  control.close();
  await Promise.allSettled([...workers.keys()].map((port) => stop({ port })));
  process.exit(0);
}
for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => void shutdown());

control.listen(0, "127.0.0.1", () => {
  const address = control.address();
  console.log(`listening ${typeof address === "object" && address ? address.port : 0}`);
});

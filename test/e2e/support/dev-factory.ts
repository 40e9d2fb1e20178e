/**
 * Global setup of the e2e and browser projects: the run's dev server factory
 * (test/e2e/support/dev-factory.mjs), one Node process that starts the Workers the harness asks
 * for at about a third of the CPU of a start through `npm start`. Its URL goes to the harness in
 * DEV_FACTORY_VAR; the harness uses it for every server it can and starts the others through
 * `npm start` as before:
 *   - a server of its own persistence directory, start arguments (`--config`), local secrets or
 *     inspector port goes through `npm start`, and so does one started with `npmStart: true`;
 *   - a factory server's output is the factory's, shared by all of its servers: `logs()` throws,
 *     so a test that reads a server's output starts it with `npmStart: true`.
 * What `npm start` itself does (its output, .dev.vars, the migrations step, restarts) is checked
 * by test/e2e/first-start.e2e.test.ts and test/e2e/logs.e2e.test.ts through `npm start`.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { DEV_FACTORY_VAR, ROOT } from "../harness";

/**
 * The env `npm start` gives wrangler (scripts/start.mjs): no `Request.cf` download, update check,
 * experimental notice or telemetry. The harness's own start env adds CI.
 */
const WRANGLER_QUIET = {
  CLOUDFLARE_CF_FETCH_ENABLED: "false",
  WRANGLER_DISABLE_EXPERIMENTAL_WARNING: "true",
  WRANGLER_HIDE_BANNER: "true",
  WRANGLER_SEND_METRICS: "false",
  WRANGLER_SEND_ERROR_REPORTS: "false",
  CI: "true",
};

/** What the factory printed last (its servers' warnings), for the error when it stops unasked. */
const KEEP = 64 * 1024;

export default async function setup(): Promise<() => Promise<void>> {
  // Both projects list this setup and vitest runs each project's: the second finds the factory running.
  if (process.env[DEV_FACTORY_VAR]) return async () => {};
  const child = spawn(process.execPath, [join(ROOT, "test", "e2e", "support", "dev-factory.mjs")], {
    cwd: ROOT,
    env: { ...process.env, ...WRANGLER_QUIET },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  let stopping = false;
  const keep = (d: Buffer) => {
    output = (output + d.toString()).slice(-KEEP);
  };
  child.stderr.on("data", keep);
  const port = await new Promise<string>((resolve, reject) => {
    let first = "";
    const onData = (d: Buffer) => {
      first += d.toString();
      const m = /^listening (\d+)\n/.exec(first);
      if (!m) return;
      child.stdout.off("data", onData);
      child.stdout.on("data", keep);
      resolve(m[1]);
    };
    child.stdout.on("data", onData);
    child.once("exit", (code) => reject(new Error(`the dev server factory exited (${code}) before it listened:\n${first}${output}`)));
  });
  child.on("exit", (code, signal) => {
    if (!stopping) process.stderr.write(`the dev server factory stopped (${code ?? signal}); its last output:\n${output}\n`);
  });
  process.env[DEV_FACTORY_VAR] = `http://127.0.0.1:${port}`;
  return async () => {
    stopping = true;
    if (child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      child.once("exit", () => resolve());
      child.kill("SIGTERM");
      setTimeout(() => child.kill("SIGKILL"), 10_000).unref();
    });
  };
}

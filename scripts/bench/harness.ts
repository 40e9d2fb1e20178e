/**
 * The harness the bench and the end-to-end suites share (test/e2e/harness.ts re-exports it): runs the real `npm start` path (scripts/start.mjs → D1 migrations →
 * `wrangler dev`) on free ports with its own persistence directory, and talks HTTP to it. A
 * directory copied from the migrated template skips the migrations step. In a test run, the
 * servers it can start in the run's dev server factory (DEV_FACTORY_VAR) start there instead: the
 * same server code, without `npm start`'s processes around it.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { must } from "../../src/platform/must";

export const ROOT = join(import.meta.dirname, "..", "..");

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const addr = srv.address();
      srv.close(() => resolve(typeof addr === "object" && addr ? addr.port : 0));
    });
  });
}

export interface DevServer {
  baseUrl: string;
  persistDir: string;
  logs: () => string;
  /** The server's process group (its launcher, wrangler and workerd), while it runs. */
  pid: () => number | undefined;
  stop: () => Promise<void>;
  /** Stops and starts again on the same port and persistence directory. */
  restart: () => Promise<void>;
  /** Stops for good and removes the persistence directory the harness created (not one passed in). */
  close: () => Promise<void>;
}

export interface DevOptions {
  vars?: Record<string, string>;
  env?: Record<string, string>;
  persistDir?: string;
  /** Listen on this port (default: a free one); lets callers build URLs, e.g. a public webhook origin, up front. */
  port?: number;
  /** Leave out E2E_DEFAULT_VARS: the server runs with `npm start`'s own defaults. */
  noDefaultVars?: boolean;
  /** Leave out E2E_SECRETS: the server runs with the secrets in the .dev.vars `npm start` writes. */
  localSecrets?: boolean;
  /** More arguments for scripts/start.mjs (e.g. `--config` of a copy of wrangler.toml). */
  args?: string[];
  /** The DevTools inspector's port under `--inspect` (default: a free one), so a caller can attach to it. */
  inspectorPort?: number;
  /**
   * Start through `npm start` in processes of its own even when the run's dev server factory could
   * start it: for a test that reads the server's output (`logs()`).
   */
  npmStart?: boolean;
}

/**
 * Vars every e2e server gets (a test's own `vars` win): the receivers, tool servers and fake LLMs
 * listen on 127.0.0.1, which the outbound address guard refuses by default; the suites' env
 * references predate the `SECRET_*` scope (decisions §14); and each referenced name may be sent
 * to those local servers, on whatever port each test's server got (`:*`, docs/security.md).
 */
export const E2E_DEFAULT_VARS: Record<string, string> = {
  OUTBOUND_ALLOW_PRIVATE_HOSTS: "true",
  SECRET_REFERENCE_ALLOWLIST: "TOOL_E2E_TOKEN,FAKE_LLM_KEY",
  SECRET_REFERENCE_ORIGINS: JSON.stringify(
    Object.fromEntries(["TOOL_E2E_TOKEN", "FAKE_LLM_KEY", "SECRET_EXAMPLE_MCP"].map((name) => [name, ["http://127.0.0.1:*"]])),
  ),
};

/**
 * The secrets wrangler.toml declares, fresh for each test process and the same for every server it
 * starts (a restart or a second server on the same persistence directory opens what the first
 * sealed). They go in as `--var`, which wins over the checkout's .dev.vars, so no suite depends on
 * the local secrets `npm start` wrote. A test's own `vars` win over these.
 */
export const E2E_SECRETS: Record<string, string> = {
  ACCESS_CONTROL_BOOTSTRAP_TOKEN: randomBytes(32).toString("base64url"),
  SETTINGS_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
  CONNECTORS_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
};

/** The bootstrap token every server this process starts accepts. */
export const BOOTSTRAP_TOKEN = E2E_SECRETS.ACCESS_CONTROL_BOOTSTRAP_TOKEN;

/**
 * Names a directory holding local state with every migration applied (test/e2e/support/migrated-state.ts,
 * the suites' global setup). A server the harness gives a fresh persistence directory starts from a
 * copy of it, unless it runs another wrangler config; unset (the bench), each start applies them.
 */
export const MIGRATED_STATE_VAR = "E2E_MIGRATED_STATE";

/**
 * Names the URL of the test run's dev server factory (test/e2e/support/dev-factory.ts), which
 * starts a server from a copy of the template with scripts/serve.mjs's own code in one long-lived
 * Node process. Unset (the bench), every server starts through `npm start`.
 */
export const DEV_FACTORY_VAR = "E2E_DEV_FACTORY";

/** Asks the run's dev server factory at `factory` to do `what`; its refusal is the error's message. */
async function askFactory(factory: string, what: "start" | "stop", body: Record<string, unknown>): Promise<void> {
  const res = await fetch(`${factory}/${what}`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`the dev server factory could not ${what} the server on port ${body.port}:\n${await res.text()}`);
}

export async function startDev(opts: DevOptions = {}): Promise<DevServer> {
  let port = opts.port ?? (await freePort());
  const persistDir = opts.persistDir ?? mkdtempSync(join(tmpdir(), "bridge-e2e-"));
  const template = process.env[MIGRATED_STATE_VAR];
  const ownConfig = (opts.args ?? []).some((a) => a === "--config" || a === "-c" || a.startsWith("--config="));
  // A copy of the template is current: its server skips start.mjs's migrations step, which would
  // start a local runtime only to find nothing to apply (test/e2e/first-start.e2e.test.ts and the
  // servers given their own directory still run it).
  const seeded = Boolean(template && !opts.persistDir && !ownConfig);
  if (seeded) cpSync(must(template, "template"), persistDir, { recursive: true });
  // The factory serves a copy of the template with the checkout's wrangler.toml and the harness's
  // secrets; anything else, or a caller that reads the output, goes through `npm start`.
  const factory = process.env[DEV_FACTORY_VAR];
  const viaFactory =
    factory && seeded && !opts.npmStart && !opts.localSecrets && opts.inspectorPort === undefined && !(opts.args ?? []).length ? factory : null;
  let child: ChildProcess | null = null;
  let running = false;
  let log = "";

  function devVars(): Record<string, string> {
    return { ...(opts.localSecrets ? {} : E2E_SECRETS), ...(opts.noDefaultVars ? {} : E2E_DEFAULT_VARS), ...(opts.vars ?? {}) };
  }

  async function launch(): Promise<void> {
    if (viaFactory) {
      await askFactory(viaFactory, "start", { port, persistTo: persistDir, vars: devVars(), env: opts.env ?? {} });
      running = true;
      return;
    }
    const inspector = opts.inspectorPort ?? (await freePort());
    const args = [
      "scripts/start.mjs",
      "--port",
      String(port),
      "--inspector-port",
      String(inspector),
      "--persist-to",
      persistDir,
      "--show-interactive-dev-session=false",
      "--log-level",
      "warn",
      ...(seeded ? ["--skip-migrations"] : []),
      ...(opts.args ?? []),
    ];
    for (const [k, v] of Object.entries(devVars())) args.push("--var", `${k}:${v}`);
    child = spawn(process.execPath, args, {
      cwd: ROOT,
      env: { ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false", ...(opts.env ?? {}) },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    child.stdout?.on("data", (d) => (log += d.toString()));
    child.stderr?.on("data", (d) => (log += d.toString()));
    // A start that runs the migrations step first (a first start applies every migration, one
    // local runtime each) gets longer: on a loaded 2-CPU machine it has taken more than 90 s.
    const deadline = Date.now() + (seeded ? 90_000 : 150_000);
    while (Date.now() < deadline) {
      if (child.exitCode !== null) throw new Error(`wrangler dev exited early:\n${log}`);
      try {
        const r = await fetch(`http://127.0.0.1:${port}/api/health`);
        if (r.status === 200) return;
      } catch {
        /* not up yet */
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`wrangler dev did not become healthy in time:\n${log}`);
  }

  async function stop(): Promise<void> {
    if (viaFactory) {
      if (!running) return;
      running = false;
      // A factory already gone (the run's end) took its servers with it.
      await askFactory(viaFactory, "stop", { port }).catch(() => undefined);
      return;
    }
    const c = child;
    if (!c || c.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        try {
          process.kill(-must(c.pid, "c.pid"), "SIGKILL");
        } catch {
          /* gone */
        }
      }, 5_000);
      c.once("exit", () => {
        clearTimeout(timer);
        resolve();
      });
      try {
        process.kill(-must(c.pid, "c.pid"), "SIGTERM"); // the whole group: node, wrangler and workerd
      } catch {
        resolve();
      }
    });
    child = null;
  }

  // A port found free can be taken by another process before wrangler binds it (the suites start
  // servers side by side): a first start on ports of our own choosing tries fresh ones.
  for (let attempt = 1; ; attempt++) {
    try {
      await launch();
      break;
    } catch (err) {
      const taken = err instanceof Error && err.message.includes("Address already in use");
      if (!taken || opts.port !== undefined || attempt >= 3) throw err;
      log = "";
      port = await freePort();
    }
  }
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    persistDir,
    logs: () => {
      if (viaFactory)
        throw new Error(
          "this server runs in the test run's dev server factory, whose output all its servers share: start it with npmStart: true to read its own",
        );
      return log;
    },
    pid: () => child?.pid,
    stop,
    restart: async () => {
      await stop();
      await launch();
    },
    close: async () => {
      await stop();
      if (!opts.persistDir) rmSync(persistDir, { recursive: true, force: true });
    },
  };
}

export interface Reply<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

/** JSON over HTTP with an optional api key. */
export async function http<T = any>(
  base: string,
  method: string,
  path: string,
  opts: { key?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<Reply<T>> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.key) headers["x-api-key"] = opts.key;
  if (opts.body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(`${base}${path}`, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  const text = await res.text();
  let body: unknown = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    /* not JSON */
  }
  return { status: res.status, body: body as T, headers: res.headers };
}

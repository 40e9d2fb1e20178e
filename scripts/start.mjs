#!/usr/bin/env node
// `npm start`: make sure the local secrets exist (.dev.vars), run the jq build step, apply D1
// migrations to the local database, then serve the Worker on 127.0.0.1:8787 with local
// persistence: without the DevTools inspector (scripts/serve.mjs) unless `--inspect` asks for
// `wrangler dev` itself. Options: `--ip`, `--port`, `--persist-to DIR` (honoured by every step),
// `--config`, `--var NAME:VALUE`, `--log-level`; with `--inspect`, any wrangler dev argument.
import { spawn, spawnSync } from "node:child_process";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { createDevOutputFilter } from "./dev-output-filter.mjs";
import { REQUIRED_SECRETS, ensureDevVars, readDevVars } from "./dev-vars.mjs";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const wrangler = join(root, "node_modules", "wrangler", "bin", "wrangler.js");
// `--skip-migrations` is this script's own flag (wrangler dev has none of that name): it leaves out
// step 3 for a persistence directory known to be current, such as the end-to-end suites' copies of
// an already-migrated template, where the step would start a local runtime only to find nothing to do.
const skipMigrations = process.argv.includes("--skip-migrations");
// `--inspect` is this script's too: serve through `wrangler dev` with its DevTools inspector.
const inspect = process.argv.includes("--inspect");
const args = process.argv.slice(2).filter((a) => a !== "--skip-migrations" && a !== "--inspect");

function optionValue(name) {
  for (let i = 0; i < args.length; i++) {
    if (args[i] === name) return args[i + 1];
    if (args[i].startsWith(`${name}=`)) return args[i].slice(name.length + 1);
  }
  return undefined;
}
const has = (name) => args.some((a) => a === name || a.startsWith(`${name}=`));

/**
 * The options of the default (inspector-off) server, from `--var`, `--ip`, `--port`,
 * `--persist-to`, `--config` and `--log-level`. `--inspector-port` and
 * `--show-interactive-dev-session` mean nothing without an inspector or a terminal session, so they
 * are accepted and left unused; any other wrangler dev argument needs `--inspect`.
 */
function serveOptions(list) {
  const opts = { config: resolve(root, configPath ?? "wrangler.toml"), ip: "127.0.0.1", port: 8787, vars: {} };
  for (let i = 0; i < list.length; i++) {
    const [flag, inline] =
      list[i].startsWith("--") && list[i].includes("=")
        ? [list[i].slice(0, list[i].indexOf("=")), list[i].slice(list[i].indexOf("=") + 1)]
        : [list[i], undefined];
    const value = () => inline ?? list[++i];
    if (flag === "--var") {
      const v = value() ?? "";
      const colon = v.indexOf(":");
      if (colon < 1) fail(`--var expects NAME:VALUE`);
      opts.vars[v.slice(0, colon)] = v.slice(colon + 1);
    } else if (flag === "--ip") opts.ip = value();
    else if (flag === "--port") opts.port = Number(value());
    else if (flag === "--persist-to") opts.persistTo = resolve(process.cwd(), value());
    else if (flag === "--config" || flag === "-c") value();
    else if (flag === "--log-level") opts.logLevel = value();
    else if (flag === "--inspector-port") value();
    else if (flag === "--show-interactive-dev-session") {
      if (inline === undefined && (list[i + 1] === "true" || list[i + 1] === "false")) i++;
    } else fail(`${flag} is a wrangler dev option this server does not take; run npm start -- --inspect ${flag} … to pass it to wrangler dev`);
  }
  if (!Number.isInteger(opts.port) || opts.port < 0 || opts.port > 65535) fail("--port expects a port number");
  return opts;
}

function fail(message) {
  console.error(`npm start: ${message}`);
  process.exit(2);
}

const persistTo = optionValue("--persist-to");
const configPath = optionValue("--config") ?? optionValue("-c");
const extra = [...(persistTo ? ["--persist-to", persistTo] : []), ...(configPath ? ["--config", configPath] : [])];

// Wrangler's own network chatter, off for this command (a value set by the caller wins). Each
// reaches the network on every start; offline, the first printed a `getaddrinfo ENOTFOUND` stack
// trace, and the others add a notice or an "update available" line:
//   - CLOUDFLARE_CF_FETCH_ENABLED: miniflare downloads a `Request.cf` sample from
//     workers.cloudflare.com (local requests get a built-in placeholder instead);
//   - WRANGLER_HIDE_BANNER: the banner is what runs the npm update check (wrangler 4 has no
//     separate switch for it);
//   - WRANGLER_SEND_METRICS / WRANGLER_SEND_ERROR_REPORTS: usage telemetry and crash reports.
//   - WRANGLER_DISABLE_EXPERIMENTAL_WARNING: wrangler.toml's `[secrets]` is marked experimental in
//     the pinned wrangler, a notice on every command (docs/deploy.md says what is relied on).
const env = {
  CLOUDFLARE_CF_FETCH_ENABLED: "false",
  WRANGLER_DISABLE_EXPERIMENTAL_WARNING: "true",
  WRANGLER_HIDE_BANNER: "true",
  WRANGLER_SEND_METRICS: "false",
  WRANGLER_SEND_ERROR_REPORTS: "false",
  ...process.env,
};

// The local secrets: on first run, .dev.vars (git-ignored, next to the wrangler config) gets random
// values for every secret wrangler.toml declares; a value already there is never changed.
const configDir = configPath ? dirname(resolve(root, configPath)) : root;
let devVars;
try {
  devVars = await ensureDevVars(configDir);
} catch (err) {
  console.error(`npm start: could not write the local secrets: ${err instanceof Error ? err.message : err}`);
  process.exit(1);
}
// wrangler dev loads only the declared secrets from .dev.vars (wrangler.toml `[secrets]`), so the
// file's other entries (channel secrets, OUTBOUND_ALLOW_PRIVATE_HOSTS, SECRET_* values, …) are
// passed as --var, ahead of the caller's own arguments, which win.
const declared = new Set(REQUIRED_SECRETS.map((s) => s.name));
const optional = Object.entries(readDevVars(devVars.path)).flatMap(([name, value]) => (declared.has(name) ? [] : ["--var", `${name}:${value}`]));

// The jq build step runs here, before wrangler starts, rather than as wrangler's [build] command:
// wrangler dev runs a custom build once at start and again when its watcher on src/ is ready, and
// once more whenever the step writes its outputs into src/platform/jq/generated under that watcher. Here it
// runs once (and writes nothing when its outputs are current); wrangler then bundles once.
const extract = spawnSync(process.execPath, [join(root, "scripts", "extract-jq-wasm.mjs")], { cwd: root, stdio: ["ignore", "inherit", "inherit"], env });
if (extract.status !== 0) {
  console.error("npm start: the jq build step (scripts/extract-jq-wasm.mjs) failed");
  process.exit(extract.status ?? 1);
}

const migrate = skipMigrations
  ? { status: 0 }
  : spawnSync(process.execPath, [wrangler, "d1", "migrations", "apply", "DB", "--local", ...extra], {
      cwd: root,
      stdio: ["ignore", "inherit", "inherit"],
      env: { ...env, CI: env.CI ?? "true" },
    });
if (migrate.status !== 0) {
  console.error("npm start: applying D1 migrations failed");
  process.exit(migrate.status ?? 1);
}

// Said after the migrations' long first-run listing, so it is on screen when the server is ready.
const shown = relative(process.cwd(), devVars.path) || devVars.path;
if (devVars.created) {
  console.log(`npm start: wrote ${shown} (git-ignored) with random local secrets.`);
  console.log(`npm start: the bootstrap token for POST /api/keys/bootstrap is ACCESS_CONTROL_BOOTSTRAP_TOKEN in ${shown} (README, "First walk-through").`);
} else if (devVars.added.length) {
  console.log(`npm start: added ${devVars.added.join(", ")} to ${shown}.`);
}

const defaults = [...(has("--ip") ? [] : ["--ip", "127.0.0.1"]), ...(has("--port") ? [] : ["--port", "8787"])];
// workerd's internal reports for outbound DNS/TLS failures are filtered out (see
// scripts/dev-output-filter.mjs); START_RAW_OUTPUT=1 shows wrangler's output as it is.
const raw = env.START_RAW_OUTPUT === "1";
const devEnv = raw || !process.stdout.isTTY ? env : { FORCE_COLOR: "1", ...env }; // piped output keeps its colours
const command = inspect
  ? [wrangler, "dev", ...defaults, ...optional, ...args]
  : [join(root, "scripts", "serve.mjs"), JSON.stringify(serveOptions([...optional, ...args]))];
const dev = spawn(process.execPath, command, {
  cwd: root,
  stdio: raw ? "inherit" : ["inherit", "pipe", "pipe"],
  env: devEnv,
});
const filters = raw
  ? []
  : [
      [dev.stdout, createDevOutputFilter((l) => process.stdout.write(l))],
      [dev.stderr, createDevOutputFilter((l) => process.stderr.write(l))],
    ];
for (const [stream, filter] of filters) {
  stream.setEncoding("utf8");
  stream.on("data", (d) => filter.push(d));
}
for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => dev.kill(sig));
dev.on("exit", (code, signal) => {
  for (const [, filter] of filters) filter.end();
  process.exit(code ?? (signal ? 1 : 0));
});

#!/usr/bin/env node
// `npm start`: make sure the local secrets exist (.dev.vars), run the jq build step, apply D1
// migrations to the local database, then run `wrangler dev` on 127.0.0.1:8787 with local
// persistence. Extra arguments pass through to wrangler dev (`npm start -- --port 9000 --var
// NAME:VALUE`); `--persist-to DIR` is honoured by both steps.
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
const args = process.argv.slice(2).filter((a) => a !== "--skip-migrations");

function optionValue(name) {
  for (let i = 0; i < args.length; i++) {
    if (args[i] === name) return args[i + 1];
    if (args[i].startsWith(`${name}=`)) return args[i].slice(name.length + 1);
  }
  return undefined;
}
const has = (name) => args.some((a) => a === name || a.startsWith(`${name}=`));

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
const dev = spawn(process.execPath, [wrangler, "dev", ...defaults, ...optional, ...args], {
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

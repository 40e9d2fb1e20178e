/**
 * `npm run deploy [-- --secrets-file FILE] [wrangler deploy options]`: the preflight, then the
 * build steps, then `wrangler deploy` with the remaining options (docs/deploy.md).
 *
 * The required secrets (wrangler.toml `[secrets] required`) are read, in this order, from:
 *   1. `--secrets-file FILE` (JSON object or dotenv lines, as `wrangler deploy --secrets-file`);
 *   2. the process environment (how CI hands secrets over);
 *   3. for a real deploy only, the names `wrangler secret list` reports for the Worker (values
 *      set with `wrangler secret put` cannot be read back, so only their presence is checked).
 * The preflight refuses (exit 1, naming each problem) when one is unset, equals a development
 * value (the local .dev.vars, or a published one) or is malformed, and, for a real deploy, when
 * the D1 database id is the placeholder. A dry run (`-- --dry-run`) asks no network and refuses
 * the same way. Values from the file and the environment are uploaded with the deploy through a
 * private temporary `--secrets-file`, removed afterwards.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { unstable_readConfig } from "wrangler";
import { preflight } from "./deploy-preflight";
import { REQUIRED_SECRETS, parseDevVars, readDevVars } from "./dev-vars.mjs";

const root = join(import.meta.dirname, "..");
const wrangler = join(root, "node_modules", "wrangler", "bin", "wrangler.js");
// The pinned wrangler marks `[secrets]` experimental and says so whenever it reads the config;
// docs/deploy.md names what this project relies on.
process.env.WRANGLER_DISABLE_EXPERIMENTAL_WARNING ??= "true";

const argv = process.argv.slice(2);
const passthrough: string[] = [];
let secretsFilePath: string | undefined;
for (let i = 0; i < argv.length; i++) {
  const a = argv[i];
  if (a === "--secrets-file") secretsFilePath = argv[++i];
  else if (a.startsWith("--secrets-file=")) secretsFilePath = a.slice("--secrets-file=".length);
  else passthrough.push(a);
}
function option(...names: string[]): string | undefined {
  for (let i = 0; i < passthrough.length; i++) {
    for (const n of names) {
      if (passthrough[i] === n) return passthrough[i + 1];
      if (passthrough[i].startsWith(`${n}=`)) return passthrough[i].slice(n.length + 1);
    }
  }
  return undefined;
}
const dryRun = passthrough.some((a) => a === "--dry-run" || a === "--dry-run=true");
const configPath = resolve(process.cwd(), option("--config", "-c") ?? join(root, "wrangler.toml"));
const envName = option("--env", "-e");

function fail(lines: string[]): never {
  console.error("npm run deploy: refused before anything was built or uploaded:");
  for (const l of lines) console.error(`  - ${l}`);
  process.exit(1);
}

const config = unstable_readConfig({ config: configPath, env: envName });

let secretsFile: Record<string, string> | null = null;
if (secretsFilePath !== undefined) {
  if (!secretsFilePath) fail(["--secrets-file needs a file"]);
  let text: string;
  try {
    text = readFileSync(resolve(process.cwd(), secretsFilePath), "utf8");
  } catch {
    fail([`--secrets-file ${secretsFilePath} cannot be read`]);
  }
  secretsFile = parseSecretsFile(text);
  if (!secretsFile) fail([`--secrets-file ${secretsFilePath} is neither a JSON object of strings nor NAME=value lines`]);
}

const devVarsDir = dirname(configPath);
const devVars = { ...readDevVars(join(devVarsDir, ".dev.vars")), ...(envName ? readDevVars(join(devVarsDir, `.dev.vars.${envName}`)) : {}) };
const declared = config.secrets?.required;

// For a real deploy, what the file and the environment lack may already be set on the Worker.
let remoteNames: Set<string> | null = null;
const wanted = [...new Set([...REQUIRED_SECRETS.map((s) => s.name), ...(declared ?? [])])];
const lacking = wanted.filter((n) => !secretsFile?.[n] && !process.env[n]);
if (!dryRun && lacking.length) {
  const listed = spawnSync(process.execPath, [wrangler, "secret", "list", "--format", "json", "--config", configPath, ...(envName ? ["--env", envName] : [])], {
    cwd: root,
    encoding: "utf8",
    env: process.env,
  });
  remoteNames = new Set();
  if (listed.status === 0) {
    try {
      for (const s of JSON.parse(listed.stdout) as Array<{ name?: unknown }>) if (typeof s.name === "string") remoteNames.add(s.name);
    } catch {
      /* not JSON: no names */
    }
  } else {
    console.error(
      `npm run deploy: wrangler secret list failed, so no secret is taken as set on the Worker:\n${(listed.stderr || listed.stdout).trim().split("\n").slice(-3).join("\n")}`,
    );
  }
}

const result = preflight({
  config: { vars: (config.vars ?? {}) as Record<string, unknown>, secretsRequired: declared, d1Databases: config.d1_databases ?? [] },
  secretsFile,
  secretsFileName: secretsFilePath,
  env: process.env,
  remoteNames,
  devVars,
  dryRun,
});
for (const w of result.warnings) console.warn(`npm run deploy: warning: ${w}`);
if (result.problems.length) fail(result.problems);
console.log(
  `npm run deploy: preflight passed (${result.checked.map((c) => `${c.name} from ${c.source === "worker" ? "the Worker" : c.source === "file" ? "the secrets file" : "the environment"}`).join(", ")})`,
);

const run = (args: string[], env: NodeJS.ProcessEnv = process.env) => spawnSync(process.execPath, args, { cwd: root, stdio: "inherit", env }).status ?? 1;
for (const step of ["extract-jq-wasm.mjs", "build-console.mjs"]) {
  const status = run([join(root, "scripts", step)]);
  if (status !== 0) {
    console.error(`npm run deploy: the build step scripts/${step} failed`);
    process.exit(status);
  }
}

let tmp: string | null = null;
const secretArgs: string[] = [];
if (result.upload) {
  tmp = mkdtempSync(join(tmpdir(), "bridge-deploy-"));
  const file = join(tmp, "secrets.json");
  writeFileSync(file, JSON.stringify(result.upload), { mode: 0o600 });
  secretArgs.push("--secrets-file", file);
}
let status: number;
try {
  status = run([wrangler, "deploy", ...passthrough, ...secretArgs]);
} finally {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
}
process.exit(status);

/** A secrets file as wrangler reads one: a JSON object of strings, or dotenv lines. */
function parseSecretsFile(text: string): Record<string, string> | null {
  try {
    const parsed: unknown = JSON.parse(text);
    if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) return null;
    const entries = Object.entries(parsed as Record<string, unknown>);
    return entries.every(([, v]) => typeof v === "string") ? Object.fromEntries(entries as Array<[string, string]>) : null;
  } catch {
    const parsed = parseDevVars(text);
    return Object.keys(parsed).length ? parsed : null;
  }
}

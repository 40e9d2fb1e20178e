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
 * private temporary `--secrets-file`, removed afterwards. The checks are scripts/deploy-check.ts.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { WRANGLER_BIN, checkDeploy } from "./deploy-check";

const root = join(import.meta.dirname, "..");
// The pinned wrangler marks `[secrets]` experimental and says so whenever it reads the config;
// docs/deploy.md names what this project relies on.
process.env.WRANGLER_DISABLE_EXPERIMENTAL_WARNING ??= "true";

const plan = checkDeploy({ argv: process.argv.slice(2), env: process.env, cwd: process.cwd() });
if (!plan) process.exit(1);

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
if (plan.upload) {
  tmp = mkdtempSync(join(tmpdir(), "bridge-deploy-"));
  const file = join(tmp, "secrets.json");
  writeFileSync(file, JSON.stringify(plan.upload), { mode: 0o600 });
  secretArgs.push("--secrets-file", file);
}
let status: number;
try {
  status = run([WRANGLER_BIN, "deploy", ...plan.passthrough, ...secretArgs]);
} finally {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
}
process.exit(status);

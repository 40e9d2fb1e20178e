/**
 * The part of `npm run deploy` that runs before anything is built or uploaded (scripts/deploy.ts
 * runs it, then the build steps and `wrangler deploy`; docs/deploy.md): it reads the arguments, the
 * config as wrangler reads it, the secret sources and the local `.dev.vars`, runs the preflight
 * (scripts/deploy-preflight.ts) and says why it refuses or what the deploy will upload.
 *
 * The arguments, the environment, the working directory and where the messages go are parameters,
 * so that the refusals can be checked in one process (test/deploy/preflight.test.ts) exactly as the
 * command makes them, without starting a process and loading wrangler for each.
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { unstable_readConfig } from "wrangler";
import { type PreflightResult, preflight } from "./deploy-preflight";
import { REQUIRED_SECRETS, parseDevVars, readDevVars } from "./dev-vars.mjs";

const root = join(import.meta.dirname, "..");
export const WRANGLER_BIN = join(root, "node_modules", "wrangler", "bin", "wrangler.js");

/** Where the messages go: the console for the command. */
export type DeployOutput = Pick<Console, "log" | "warn" | "error">;

export interface DeployRequest {
  /** The arguments after `npm run deploy --`. */
  argv: readonly string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  out?: DeployOutput;
}

/** What the deploy goes on with once the checks passed. */
export interface DeployPlan {
  /** The arguments that go to `wrangler deploy` (all but `--secrets-file`). */
  passthrough: string[];
  /** What goes to `wrangler deploy --secrets-file`, or null for nothing. */
  upload: PreflightResult["upload"];
}

/** The command's checks: null when it refuses (the reasons are already said), else what to deploy. */
export function checkDeploy({ argv, env, cwd, out = console }: DeployRequest): DeployPlan | null {
  const refuse = (lines: string[]): null => {
    out.error("npm run deploy: refused before anything was built or uploaded:");
    for (const l of lines) out.error(`  - ${l}`);
    return null;
  };

  const passthrough: string[] = [];
  let secretsFilePath: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--secrets-file") secretsFilePath = argv[++i];
    else if (a.startsWith("--secrets-file=")) secretsFilePath = a.slice("--secrets-file=".length);
    else passthrough.push(a);
  }
  const option = (...names: string[]): string | undefined => {
    for (let i = 0; i < passthrough.length; i++) {
      for (const n of names) {
        if (passthrough[i] === n) return passthrough[i + 1];
        if (passthrough[i].startsWith(`${n}=`)) return passthrough[i].slice(n.length + 1);
      }
    }
    return undefined;
  };
  const dryRun = passthrough.some((a) => a === "--dry-run" || a === "--dry-run=true");
  const configPath = resolve(cwd, option("--config", "-c") ?? join(root, "wrangler.toml"));
  const envName = option("--env", "-e");

  const config = unstable_readConfig({ config: configPath, env: envName });

  let secretsFile: Record<string, string> | null = null;
  if (secretsFilePath !== undefined) {
    if (!secretsFilePath) return refuse(["--secrets-file needs a file"]);
    let text: string;
    try {
      text = readFileSync(resolve(cwd, secretsFilePath), "utf8");
    } catch {
      return refuse([`--secrets-file ${secretsFilePath} cannot be read`]);
    }
    secretsFile = parseSecretsFile(text);
    if (!secretsFile) return refuse([`--secrets-file ${secretsFilePath} is neither a JSON object of strings nor NAME=value lines`]);
  }

  const devVarsDir = dirname(configPath);
  const devVars = { ...readDevVars(join(devVarsDir, ".dev.vars")), ...(envName ? readDevVars(join(devVarsDir, `.dev.vars.${envName}`)) : {}) };
  const declared = config.secrets?.required;

  // For a real deploy, what the file and the environment lack may already be set on the Worker.
  let remoteNames: Set<string> | null = null;
  const wanted = [...new Set([...REQUIRED_SECRETS.map((s) => s.name), ...(declared ?? [])])];
  const lacking = wanted.filter((n) => !secretsFile?.[n] && !env[n]);
  if (!dryRun && lacking.length) {
    const listed = spawnSync(
      process.execPath,
      [WRANGLER_BIN, "secret", "list", "--format", "json", "--config", configPath, ...(envName ? ["--env", envName] : [])],
      {
        cwd: root,
        encoding: "utf8",
        env,
      },
    );
    remoteNames = new Set();
    if (listed.status === 0) {
      try {
        for (const s of JSON.parse(listed.stdout) as Array<{ name?: unknown }>) if (typeof s.name === "string") remoteNames.add(s.name);
      } catch {
        /* not JSON: no names */
      }
    } else {
      out.error(
        `npm run deploy: wrangler secret list failed, so no secret is taken as set on the Worker:\n${(listed.stderr || listed.stdout).trim().split("\n").slice(-3).join("\n")}`,
      );
    }
  }

  const result = preflight({
    config: { vars: (config.vars ?? {}) as Record<string, unknown>, secretsRequired: declared, d1Databases: config.d1_databases ?? [] },
    secretsFile,
    secretsFileName: secretsFilePath,
    env,
    remoteNames,
    devVars,
    dryRun,
  });
  for (const w of result.warnings) out.warn(`npm run deploy: warning: ${w}`);
  if (result.problems.length) return refuse(result.problems);
  // A bucket the account lacks fails `wrangler deploy` itself, after the build: say which ones
  // must exist before it gets there (an upgrade may bind a new one).
  const buckets = (config.r2_buckets ?? []).flatMap((b: { bucket_name?: string }) => (b.bucket_name ? [b.bucket_name] : []));
  if (buckets.length)
    out.log(
      `npm run deploy: this deploy binds the R2 buckets ${buckets.join(", ")}; create each one the account lacks first (npx wrangler r2 bucket create <name>; docs/deploy.md, "1. The resources")`,
    );
  out.log(
    `npm run deploy: preflight passed (${result.checked.map((c) => `${c.name} from ${c.source === "worker" ? "the Worker" : c.source === "file" ? "the secrets file" : "the environment"}`).join(", ")})`,
  );
  return { passthrough, upload: result.upload };
}

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

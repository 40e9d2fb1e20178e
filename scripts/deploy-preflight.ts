/**
 * The deploy's preflight (`npm run deploy`, scripts/deploy.ts; docs/deploy.md): what must hold
 * before anything is uploaded. Pure: the caller reads the config, the secret sources and the local
 * `.dev.vars`, and this decides. Problems stop the deploy (a dry run too, so the refusal can be
 * checked offline); warnings are printed and let it go on. Messages name settings, never values.
 */
import { bootstrapTokenProblem, PUBLISHED_BOOTSTRAP_TOKENS } from "../src/access-control/bootstrap-token";
import { normalizeKey } from "../src/platform/settings/sealing-keys";
import { REQUIRED_SECRETS } from "./dev-vars.mjs";

/** Sealing keys that have been public (committed in this repository's wrangler.toml). */
export const PUBLISHED_SEALING_KEYS: readonly string[] = ["zz5k0PF+v9BM+Tr542g390zL1PlhPNyXeWZFw2SMiDc=", "3XhHnBmwYdkJbA9QQXWUvdhCK4AaqxkeK4K/RPEp44w="];

/** The D1 id wrangler.toml ships with: a placeholder, never a database. */
export const PLACEHOLDER_DATABASE_ID = "00000000-0000-0000-0000-000000000000";

export interface PreflightConfig {
  /** wrangler.toml `[vars]` (as wrangler reads them). */
  vars: Record<string, unknown>;
  /** wrangler.toml `[secrets] required`; undefined when the section is missing. */
  secretsRequired: readonly string[] | undefined;
  d1Databases: ReadonlyArray<{ binding: string; database_id?: string }>;
}

export interface PreflightInput {
  config: PreflightConfig;
  /** The `--secrets-file` entries, or null without one. */
  secretsFile: Record<string, string> | null;
  /** Where the file came from, for messages. */
  secretsFileName?: string;
  /** The process environment. */
  env: Record<string, string | undefined>;
  /** The names `wrangler secret list` reports for the Worker, or null when it was not asked (a dry run, or nothing missing). */
  remoteNames: ReadonlySet<string> | null;
  /** The local `.dev.vars` entries (development values). */
  devVars: Record<string, string>;
  dryRun: boolean;
}

export interface PreflightResult {
  problems: string[];
  warnings: string[];
  /** The required secrets whose values were checked, with where each came from. */
  checked: Array<{ name: string; source: "file" | "env" | "worker" }>;
  /** What to hand `wrangler deploy --secrets-file`: the file's entries plus required values taken from the environment; null when there is nothing to upload. */
  upload: Record<string, string> | null;
}

const kindOf = new Map(REQUIRED_SECRETS.map((s) => [s.name, s.kind] as const));

/** A value compared in one form: sealing keys as standard base64, so a url-safe copy of a known key is still known. */
function canonical(name: string, value: string): string {
  return kindOf.get(name) === "sealing-key" ? (normalizeKey(value) ?? value.trim()) : value.trim();
}

export function preflight(input: PreflightInput): PreflightResult {
  const problems: string[] = [];
  const warnings: string[] = [];
  const checked: PreflightResult["checked"] = [];
  const fileName = input.secretsFileName ?? "the secrets file";

  const declared = input.config.secretsRequired;
  if (!declared) problems.push("wrangler.toml has no [secrets] required list; it must name the secrets every deployment needs (docs/deploy.md)");
  const names = [...new Set([...REQUIRED_SECRETS.map((s) => s.name), ...(declared ?? [])])];
  for (const s of REQUIRED_SECRETS) {
    if (declared && !declared.includes(s.name)) problems.push(`wrangler.toml [secrets] required must list ${s.name}`);
  }

  // A secret in [vars] would ship as a plain variable, readable in the dashboard and in every
  // `wrangler deploy` listing.
  for (const name of names) {
    if (name in input.config.vars)
      problems.push(`wrangler.toml [vars] sets ${name}: a secret must not be a plain variable; remove the line and set it as a secret`);
  }
  for (const name of secretLookingVars(input.config.vars)) {
    if (!names.includes(name))
      warnings.push(`wrangler.toml [vars] ${name} looks like a secret; a plain variable ships readable (set it with wrangler secret put instead)`);
  }

  const published = new Set([...PUBLISHED_BOOTSTRAP_TOKENS, ...PUBLISHED_SEALING_KEYS].flatMap((v) => [v, normalizeKey(v) ?? v]));
  const upload: Record<string, string> = { ...(input.secretsFile ?? {}) };
  const values = new Map<string, string>();
  for (const name of names) {
    const fromFile = input.secretsFile?.[name];
    const fromEnv = input.env[name];
    if (fromFile && fromEnv && fromFile !== fromEnv) warnings.push(`${name} is set both in ${fileName} and in the environment; the file's value is used`);
    const value = fromFile || fromEnv;
    if (!value) {
      if (input.remoteNames?.has(name)) {
        checked.push({ name, source: "worker" });
        warnings.push(`${name} is taken from the secret already set on the Worker; its value cannot be read back, so only its presence was checked`);
        continue;
      }
      const where = input.dryRun ? "a dry run does not ask Cloudflare for the Worker's secrets" : "and the Worker has no such secret";
      problems.push(`${name} is not set: pass it in --secrets-file or the environment (${where}; docs/deploy.md)`);
      continue;
    }
    checked.push({ name, source: fromFile ? "file" : "env" });
    if (!fromFile) upload[name] = value;
    values.set(name, value);

    const form = canonical(name, value);
    if (published.has(value) || published.has(form)) {
      problems.push(`${name} is a published development value (committed in the repository or printed in its docs); generate a fresh one`);
      continue;
    }
    const local = Object.entries(input.devVars).find(([n, v]) => v.trim() !== "" && (v === value || canonical(name, v) === form || canonical(n, v) === form));
    if (local) {
      problems.push(`${name} equals a value in the local .dev.vars (${local[0]}), a development value; generate a fresh one`);
      continue;
    }
    const kind = kindOf.get(name);
    if (kind === "sealing-key" && !normalizeKey(value)) problems.push(`${name} must be 32 random bytes in base64 (e.g. openssl rand -base64 32)`);
    if (kind === "token") {
      const problem = bootstrapTokenProblem(value);
      if (problem) problems.push(`${problem}; the Worker would refuse bootstrap with it`);
    }
  }
  const settingsKey = values.get("SETTINGS_ENCRYPTION_KEY");
  const connectorsKey = values.get("CONNECTORS_ENCRYPTION_KEY");
  if (settingsKey && connectorsKey && canonical("SETTINGS_ENCRYPTION_KEY", settingsKey) === canonical("CONNECTORS_ENCRYPTION_KEY", connectorsKey)) {
    problems.push("SETTINGS_ENCRYPTION_KEY and CONNECTORS_ENCRYPTION_KEY are the same key; generate one for each");
  }

  for (const db of input.config.d1Databases) {
    if (!db.database_id || db.database_id === PLACEHOLDER_DATABASE_ID) {
      const what = `the D1 database ${db.binding} has the placeholder id; create it (wrangler d1 create) and put its id in wrangler.toml`;
      if (input.dryRun) warnings.push(`${what} (a real deploy stops here)`);
      else problems.push(what);
    }
  }

  return { problems, warnings, checked, upload: Object.keys(upload).length ? upload : null };
}

/** Names that say "secret" (KEY, TOKEN, SECRET, PASSWORD, …). */
const SECRET_NAME = /KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|PRIVATE/i;

function entropyBitsPerChar(s: string): number {
  const counts = new Map<string, number>();
  for (const ch of s) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  let bits = 0;
  for (const n of counts.values()) bits -= (n / s.length) * Math.log2(n / s.length);
  return bits;
}

/**
 * Whether a plain value carries something that looks like a key: a run of 16 or more hex digits
 * (letters and digits mixed), or of 16 or more base64 characters mixing upper case, lower case and
 * digits with high entropy (random 16 bytes in base64 carry about 4.2 bits a character; words,
 * paths and URLs stay below 3.5 or lack a class).
 */
export function looksLikeSecretValue(value: string): boolean {
  for (const run of value.match(/[0-9a-fA-F]{16,}/g) ?? []) {
    if (/[0-9]/.test(run) && /[a-fA-F]/.test(run)) return true;
  }
  for (const run of value.match(/[A-Za-z0-9+/_-]{16,}={0,2}/g) ?? []) {
    if (/[A-Z]/.test(run) && /[a-z]/.test(run) && /[0-9]/.test(run) && entropyBitsPerChar(run) >= 3.5) return true;
  }
  return false;
}

/**
 * The service's own settings whose names sound secret but which hold none (the settings registry
 * declares them `secret: false`): which env vars `{"env"}` references may name, and the origins each
 * may be sent to. They are judged by their value only.
 */
export const PLAIN_SECRET_NAMED_SETTINGS: ReadonlySet<string> = new Set(["SECRET_REFERENCE_ALLOWLIST", "SECRET_REFERENCE_ORIGINS"]);

/** The `[vars]` that look like secrets: a secret-sounding name with a value, or a key-like value. */
export function secretLookingVars(vars: Record<string, unknown>): string[] {
  const out: string[] = [];
  for (const [name, raw] of Object.entries(vars)) {
    const value = typeof raw === "string" ? raw : JSON.stringify(raw);
    if (!value) continue;
    if ((!PLAIN_SECRET_NAMED_SETTINGS.has(name) && SECRET_NAME.test(name)) || looksLikeSecretValue(value)) out.push(name);
  }
  return out;
}

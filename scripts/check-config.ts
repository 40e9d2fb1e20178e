/**
 * `npm run check-config`: validates the CONVERSATIONS_* and checkpoint settings exactly as the
 * Worker does (same parseSettings), from wrangler.toml [vars], then .dev.vars, then the
 * process environment, then `--var NAME:VALUE` arguments (later wins, as with wrangler dev).
 * Exit code 0 when valid, 1 when not.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { unstable_readConfig } from "wrangler";
import { parseSettings } from "../src/settings/settings";

const root = join(import.meta.dirname, "..");
const config = unstable_readConfig({ config: join(root, "wrangler.toml") });
const env: Record<string, unknown> = { ...(config.vars ?? {}) };
for (const db of config.d1_databases ?? []) env[db.binding] = {};
for (const b of config.r2_buckets ?? []) env[b.binding] = {};

const devVars = join(root, ".dev.vars");
if (existsSync(devVars)) {
  for (const line of readFileSync(devVars, "utf8").split("\n")) {
    const m = line.match(/^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)\s*$/);
    if (m) env[m[1]] = m[2].replace(/^"(.*)"$/, "$1");
  }
}
for (const [k, v] of Object.entries(process.env)) {
  if (k.startsWith("CONVERSATIONS_") || k.startsWith("LLM_PROVIDER_CHECKPOINT") || k === "OUTBOUND_ALLOW_PRIVATE_HOSTS" || k === "SECRET_REFERENCE_ALLOWLIST") env[k] = v;
}
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === "--var" && argv[i + 1]) {
    const [name, ...rest] = argv[++i].split(":");
    env[name] = rest.join(":");
  }
}

const result = parseSettings(env);
if (result.ok) {
  const c = result.settings.conversations;
  console.log("configuration OK");
  console.log(`  store: ${c.storeUrl ?? "(none: conversation routing answers 501)"}`);
  console.log(`  checkpoint provider: ${result.settings.checkpoint.provider}, ttl: ${result.settings.checkpoint.ttlMinutes ?? "keep forever"}`);
  console.log(`  outbound to private hosts: ${result.settings.outbound.allowPrivateHosts ? "allowed (OUTBOUND_ALLOW_PRIVATE_HOSTS=true; local development only)" : "refused"}`);
  console.log(`  secret references: SECRET_* and ${result.settings.secretReferences.allowlist.length} allowlisted name(s)`);
  process.exit(0);
} else {
  console.error("configuration INVALID:");
  for (const e of result.errors) console.error(`  - ${e}`);
  process.exit(1);
}

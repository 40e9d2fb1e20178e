/**
 * `npm run check-config`: validates every setting exactly as the Worker does (same parseSettings),
 * from wrangler.toml [vars], then .dev.vars, then the process environment (the names the setting
 * definitions know), then `--var NAME:VALUE` arguments (later wins, as with wrangler dev).
 * It also says whether the Worker would accept ACCESS_CONTROL_BOOTSTRAP_TOKEN (the same rule as
 * POST /api/keys/bootstrap). Exit code 0 when the settings are valid, 1 when not.
 */
import { join } from "node:path";
import { unstable_readConfig } from "wrangler";
import { bootstrapTokenProblem } from "../src/access-control/bootstrap-token";
import { settingDefinition } from "../src/platform/settings/registry";
import { parseSettings } from "../src/platform/settings/settings";
import { readDevVars } from "./dev-vars.mjs";

const root = join(import.meta.dirname, "..");
process.env.WRANGLER_DISABLE_EXPERIMENTAL_WARNING ??= "true";
const config = unstable_readConfig({ config: join(root, "wrangler.toml") });
const env: Record<string, unknown> = { ...(config.vars ?? {}) };
for (const db of config.d1_databases ?? []) env[db.binding] = {};
for (const b of config.r2_buckets ?? []) env[b.binding] = {};

Object.assign(env, readDevVars(join(root, ".dev.vars")));
// Every variable a setting definition names (src/platform/settings/registry.ts) may come from the
// shell too, as it would through `wrangler dev`'s environment.
for (const [k, v] of Object.entries(process.env)) {
  if (settingDefinition(k)) env[k] = v;
}
const argv = process.argv.slice(2);
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === "--var" && argv[i + 1]) {
    const [name, ...rest] = argv[++i].split(":");
    env[name] = rest.join(":");
  }
}

const result = parseSettings(env);
const bootstrapProblem = bootstrapTokenProblem(env.ACCESS_CONTROL_BOOTSTRAP_TOKEN);
const bootstrapLine = bootstrapProblem
  ? `  bootstrap: refused: ${bootstrapProblem}; POST /api/keys/bootstrap answers 501 until a fresh random token of at least 32 characters is set (npm start writes one into .dev.vars; docs/deploy.md)`
  : "  bootstrap: the token is accepted (POST /api/keys/bootstrap mints the first admin key while no key exists)";
if (result.ok) {
  const c = result.settings.conversations;
  console.log("configuration OK");
  console.log(`  store: ${c.storeUrl ?? "(none: conversation routing answers 501)"}`);
  console.log(`  checkpoint provider: ${result.settings.checkpoint.provider}, ttl: ${result.settings.checkpoint.ttlMinutes ?? "keep forever"}`);
  console.log(
    `  outbound to private hosts: ${result.settings.outbound.allowPrivateHosts ? "allowed (OUTBOUND_ALLOW_PRIVATE_HOSTS=true; local development only)" : "refused"}`,
  );
  console.log(`  secret references: SECRET_* and ${result.settings.secretReferences.allowlist.length} allowlisted name(s)`);
  const bound = Object.keys(result.settings.referenceOrigins);
  console.log(
    `  secret reference origins: ${bound.length ? `${bound.length} name(s) bound (${bound.join(", ")})` : 'none bound: no {"env"} reference is sent anywhere'}`,
  );
  console.log(bootstrapLine);
  process.exit(0);
} else {
  console.error("configuration INVALID:");
  for (const e of result.errors) console.error(`  - ${e}`);
  console.error(bootstrapLine);
  process.exit(1);
}

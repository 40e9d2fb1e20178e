/**
 * What may leave the service and what one evaluation may use: the outbound address guard's switch,
 * the scope and origins of `{"env"}` secret references (secret-references.ts, docs/security.md),
 * and the jq budget (src/platform/jq/engine.ts).
 */
import { DEFAULT_JQ_BUDGET, JQ_MAX_MEMORY_MB, JQ_MAX_STEPS, JQ_MIN_MEMORY_MB, JQ_MIN_STEPS, type JqBudget } from "../jq/budget";
import { ALLOW_PRIVATE_HOSTS_SETTING } from "../net/address-guard";
import { type EnvVars, defineSetting, envString, wholeNumber } from "./define";
import {
  ENV_NAME,
  type ReferenceOrigins,
  SECRET_REFERENCE_ALLOWLIST_SETTING,
  SECRET_REFERENCE_ORIGINS_SETTING,
  isForbiddenReference,
  parseReferenceOrigins,
  splitAllowlist,
} from "./secret-references";

export const OUTBOUND_ALLOW_PRIVATE_HOSTS = defineSetting({
  name: ALLOW_PRIVATE_HOSTS_SETTING,
  area: "outbound",
  type: "boolean",
  default: false,
  secret: false,
  overlay: true,
  description:
    "true lets callbacks, tools, agents and LLM endpoints reach loopback, private and local hosts (local development); cloud metadata stays refused.",
  read(env, errors): boolean {
    const raw = envString(env, ALLOW_PRIVATE_HOSTS_SETTING)?.trim().toLowerCase();
    if (raw === "true") return true;
    if (raw !== undefined && raw !== "" && raw !== "false") errors.push(`${ALLOW_PRIVATE_HOSTS_SETTING} must be true or false`);
    return false;
  },
});

// Env only: it decides which of the deployment's env secrets admins may send to URLs they
// declare, so an admin key may not widen it (naming, say, a connector's client secret variable).
export const SECRET_REFERENCE_ALLOWLIST = defineSetting({
  name: SECRET_REFERENCE_ALLOWLIST_SETTING,
  area: "outbound",
  type: "list",
  default: null,
  secret: false,
  overlay: false,
  description:
    'Comma-separated env var names {"env"} references may resolve besides SECRET_*; never a service setting, binding, channel secret or connector client credential. Env only: it is the operator\'s delegation of env secrets to declarations.',
  read(env, errors): string[] {
    const allowlist = splitAllowlist(envString(env, SECRET_REFERENCE_ALLOWLIST_SETTING));
    if (allowlist.some((name) => !ENV_NAME.test(name))) {
      errors.push(`${SECRET_REFERENCE_ALLOWLIST_SETTING} must be a comma-separated list of env var names`);
    } else if (allowlist.some((name) => isForbiddenReference(name, env))) {
      // Never names the entry: the rule is enough to find it, and settings errors echo no values.
      errors.push(
        `${SECRET_REFERENCE_ALLOWLIST_SETTING} names a variable that is never referenceable (the service's own settings, its bindings, CHANNEL_* secrets)`,
      );
    }
    return allowlist;
  },
});

// Env only: it decides where each delegated env secret may be sent, so an admin key that could
// set it could add its own host and receive the secret.
export const SECRET_REFERENCE_ORIGINS = defineSetting({
  name: SECRET_REFERENCE_ORIGINS_SETTING,
  area: "outbound",
  type: "json-object",
  default: null,
  secret: false,
  overlay: false,
  description:
    'JSON object binding each env var name {"env"} references may name to the origins its value may be sent to, e.g. {"SECRET_WEATHER_TOKEN": ["https://api.weather.example"]}; https, or http for 127.0.0.1/localhost/[::1]; :* for any port. A name it does not bind goes nowhere. Env only: it is the operator\'s choice of where delegated secrets may go.',
  read: (env, errors): ReferenceOrigins => parseReferenceOrigins(env[SECRET_REFERENCE_ORIGINS_SETTING], env, errors),
});

export const JQ_BUDGET_STEPS = wholeNumber("JQ_BUDGET_STEPS", {
  area: "jq",
  default: DEFAULT_JQ_BUDGET.steps,
  min: JQ_MIN_STEPS,
  max: JQ_MAX_STEPS,
  description: "Metered steps one jq evaluation may use before it fails with jq budget exceeded.",
});

export const JQ_BUDGET_MEMORY_MB = wholeNumber("JQ_BUDGET_MEMORY_MB", {
  area: "jq",
  default: DEFAULT_JQ_BUDGET.memoryMb,
  min: JQ_MIN_MEMORY_MB,
  max: JQ_MAX_MEMORY_MB,
  description: "Largest heap (MiB) one jq evaluation may grow to.",
});

export const OUTBOUND_SETTINGS = [
  OUTBOUND_ALLOW_PRIVATE_HOSTS,
  SECRET_REFERENCE_ALLOWLIST,
  SECRET_REFERENCE_ORIGINS,
  JQ_BUDGET_STEPS,
  JQ_BUDGET_MEMORY_MB,
] as const;

export function parseJqBudget(env: EnvVars, errors: string[]): JqBudget {
  return { steps: JQ_BUDGET_STEPS.read(env, errors), memoryMb: JQ_BUDGET_MEMORY_MB.read(env, errors) };
}

/**
 * The `CONVERSATIONS_*` settings of spec §8 and the checkpoint settings, read from the
 * Worker's env (wrangler [vars], secrets, .dev.vars, `--var`). Pure: shared by the Worker
 * and `npm run check-config`, so both give the same verdict.
 */
import { DEFAULT_JQ_BUDGET, JQ_MAX_MEMORY_MB, JQ_MAX_STEPS, JQ_MIN_MEMORY_MB, JQ_MIN_STEPS, type JqBudget } from "../jq/budget";
import { ALLOW_PRIVATE_HOSTS_SETTING } from "../net/address-guard";
import { type ConfigSettings, parseConfigSettings } from "./config-settings";
import { type ConnectorSettings, parseConnectorSettings } from "./connector-settings";
import { type HookSettings, parseHookSettings } from "./hook-settings";
import { type InteractionSettings, parseInteractionSettings } from "./interaction-settings";
import { type MarketplaceSettings, parseMarketplaceSettings } from "./marketplace-settings";
import { type McpSettings, parseMcpSettings } from "./mcp-settings";
import { type NotificationSettings, parseNotificationSettings } from "./notification-settings";
import { type RunsSettings, parseRunsSettings } from "./runs-settings";
import { type ScheduleSettings, parseScheduleSettings } from "./schedule-settings";
import { type StorageSettings, type ToolMetaSettings, parseStorageSettings, parseToolMetaSettings } from "./storage-settings";
import {
  ENV_NAME,
  type ReferenceOrigins,
  SECRET_REFERENCE_ALLOWLIST_SETTING,
  SECRET_REFERENCE_ORIGINS_SETTING,
  isForbiddenReference,
  parseReferenceOrigins,
  splitAllowlist,
} from "./secret-references";
import { d1StoreUrl } from "./store-url";
import { type ToolRunSettings, parseToolRunSettings } from "./tool-run-settings";

export interface ConversationSettings {
  storeUrl: string | null;
  storeSocketConnectTimeout: number;
  storeSocketTimeout: number;
  prefix: string;
  maxConcurrentTurns: number;
  threadQueueDepth: number;
  perAddressTurnsPerHour: number;
  addressBucketMaxEntries: number;
  syncWaitMaxSeconds: number;
  intakeClaimLeaseSeconds: number;
  intakeClaimRefreshSeconds: number;
  /** Runs a turn gets before it settles with the error outcome (a run that kills its object counts). */
  turnMaxAttempts: number;
  deliveryMaxAttempts: number;
  deliveryBackoffBaseSeconds: number;
  deliveryBackoffMaxSeconds: number;
  deliveryClaimLeaseSeconds: number;
  deliverySendTimeoutSeconds: number;
  deliveryCallbackTimeoutSeconds: number;
  deliverySweepIntervalSeconds: number;
  deliveryGraceSeconds: number;
  maxMessageChars: Record<string, number>;
  maxOutboundChunks: number;
  inboundDedupeTtlSeconds: number;
  answerRetentionTtlSeconds: number;
  /** Pushed listing updates an IndexShard collects before it writes them to D1 in one batch (at least 10). */
  indexFlushBatch: number;
  /** The longest a pushed listing update waits in an IndexShard before it is written to D1. */
  indexFlushLagSeconds: number;
}

export type CheckpointProvider = "kv" | "d1" | "postgres" | "memory";

export interface Settings {
  conversations: ConversationSettings;
  /** `STATES_STORE_URL` (d1://BINDING): the states area's store; unset, its doors answer 501 `states-not-configured`. */
  states: { storeUrl: string | null };
  /** The notifications sink (`INTERACTIONS_STORE_URL`, feed caps): src/platform/settings/notification-settings.ts. */
  notifications: NotificationSettings;
  /** `CONNECTORS_*`: src/platform/settings/connector-settings.ts. */
  connectors: ConnectorSettings;
  /** `MARKETPLACE_*`: src/platform/settings/marketplace-settings.ts. */
  marketplace: MarketplaceSettings;
  checkpoint: { provider: CheckpointProvider; ttlMinutes: number | null };
  /** `TOOL_RUNS_*`: background tool runs (src/platform/settings/tool-run-settings.ts). */
  toolRuns: ToolRunSettings;
  /** `SCHEDULES_*`: the schedules' catch-up rule (src/platform/settings/schedule-settings.ts). */
  schedules: ScheduleSettings;
  /** `HOOKS_*`: the public trigger doors' verifier tolerance and replay window (src/platform/settings/hook-settings.ts). */
  hooks: HookSettings;
  /** `INTERACTIONS_*`: ask_user interactions (src/platform/settings/interaction-settings.ts); the store switch is `notifications.storeUrl`. */
  interactions: InteractionSettings;
  /** `RUNS_*`: run traces (src/platform/settings/runs-settings.ts). */
  runs: RunsSettings;
  /** `STORAGE_*`: the R2 content store (src/platform/settings/storage-settings.ts). */
  storage: StorageSettings;
  /** `TOOL_META_STORE_URL`: the tool metadata overlay (src/platform/settings/storage-settings.ts). */
  toolMeta: ToolMetaSettings;
  /** `MCP_*`: MCP servers as tool sources (src/platform/settings/mcp-settings.ts). */
  mcp: McpSettings;
  /** `JQ_BUDGET_STEPS`, `JQ_BUDGET_MEMORY_MB`: what one jq run may use (src/platform/jq/engine.ts). */
  jq: JqBudget;
  /** `OUTBOUND_ALLOW_PRIVATE_HOSTS`: the outbound address guard lets private hosts through (src/platform/net/address-guard.ts). */
  outbound: { allowPrivateHosts: boolean };
  /** `SECRET_REFERENCE_ALLOWLIST`: names `{"env"}` references may resolve besides `SECRET_*` (src/platform/settings/secret-references.ts). */
  secretReferences: { allowlist: string[] };
  /** `SECRET_REFERENCE_ORIGINS`: the origins each referenceable name's value may be sent to (src/platform/settings/secret-references.ts). */
  referenceOrigins: ReferenceOrigins;
  /** `SETTINGS_*`: how the runtime overlay is sealed and re-checked (src/platform/settings/config-settings.ts). */
  config: ConfigSettings;
}

export const DEFAULT_MAX_MESSAGE_CHARS: Readonly<Record<string, number>> = Object.freeze({
  twilio: 1600,
  whatsapp: 4096,
  slack: 40000,
  telegram: 4096,
});

type NumericKey = Exclude<keyof ConversationSettings, "storeUrl" | "prefix" | "maxMessageChars">;

/** Env name, default and kind of each numeric setting. `int` settings must be whole numbers;
 * durations may be fractional (handy for fast end-to-end runs). */
export const NUMERIC_SETTINGS: ReadonlyArray<{ key: NumericKey; env: string; def: number; int: boolean }> = [
  { key: "storeSocketConnectTimeout", env: "CONVERSATIONS_STORE_SOCKET_CONNECT_TIMEOUT", def: 5, int: false },
  { key: "storeSocketTimeout", env: "CONVERSATIONS_STORE_SOCKET_TIMEOUT", def: 5, int: false },
  { key: "maxConcurrentTurns", env: "CONVERSATIONS_MAX_CONCURRENT_TURNS", def: 10, int: true },
  { key: "threadQueueDepth", env: "CONVERSATIONS_THREAD_QUEUE_DEPTH", def: 20, int: true },
  { key: "perAddressTurnsPerHour", env: "CONVERSATIONS_PER_ADDRESS_TURNS_PER_HOUR", def: 20, int: true },
  { key: "addressBucketMaxEntries", env: "CONVERSATIONS_ADDRESS_BUCKET_MAX_ENTRIES", def: 50000, int: true },
  { key: "syncWaitMaxSeconds", env: "CONVERSATIONS_SYNC_WAIT_MAX_SECONDS", def: 120, int: false },
  { key: "intakeClaimLeaseSeconds", env: "CONVERSATIONS_INTAKE_CLAIM_LEASE_SECONDS", def: 120, int: false },
  { key: "intakeClaimRefreshSeconds", env: "CONVERSATIONS_INTAKE_CLAIM_REFRESH_SECONDS", def: 30, int: false },
  { key: "turnMaxAttempts", env: "CONVERSATIONS_TURN_MAX_ATTEMPTS", def: 2, int: true },
  { key: "deliveryMaxAttempts", env: "CONVERSATIONS_DELIVERY_MAX_ATTEMPTS", def: 8, int: true },
  { key: "deliveryBackoffBaseSeconds", env: "CONVERSATIONS_DELIVERY_BACKOFF_BASE_SECONDS", def: 60, int: false },
  { key: "deliveryBackoffMaxSeconds", env: "CONVERSATIONS_DELIVERY_BACKOFF_MAX_SECONDS", def: 900, int: false },
  { key: "deliveryClaimLeaseSeconds", env: "CONVERSATIONS_DELIVERY_CLAIM_LEASE_SECONDS", def: 120, int: false },
  { key: "deliverySendTimeoutSeconds", env: "CONVERSATIONS_DELIVERY_SEND_TIMEOUT_SECONDS", def: 60, int: false },
  { key: "deliveryCallbackTimeoutSeconds", env: "CONVERSATIONS_DELIVERY_CALLBACK_TIMEOUT_SECONDS", def: 15, int: false },
  { key: "deliverySweepIntervalSeconds", env: "CONVERSATIONS_DELIVERY_SWEEP_INTERVAL_SECONDS", def: 60, int: false },
  { key: "deliveryGraceSeconds", env: "CONVERSATIONS_DELIVERY_GRACE_SECONDS", def: 3600, int: false },
  { key: "maxOutboundChunks", env: "CONVERSATIONS_MAX_OUTBOUND_CHUNKS", def: 10, int: true },
  { key: "inboundDedupeTtlSeconds", env: "CONVERSATIONS_INBOUND_DEDUPE_TTL_SECONDS", def: 172800, int: false },
  { key: "answerRetentionTtlSeconds", env: "CONVERSATIONS_ANSWER_RETENTION_TTL_SECONDS", def: 2592000, int: false },
  { key: "indexFlushBatch", env: "CONVERSATIONS_INDEX_FLUSH_BATCH", def: 20, int: true },
  { key: "indexFlushLagSeconds", env: "CONVERSATIONS_INDEX_FLUSH_LAG_SECONDS", def: 1, int: false },
];

export type SettingsResult = { ok: true; settings: Settings } | { ok: false; errors: string[] };

function str(env: Record<string, unknown>, name: string): string | undefined {
  const v = env[name];
  if (v === undefined || v === null) return undefined;
  return typeof v === "string" ? v : JSON.stringify(v);
}

/**
 * Parses and validates the settings. Errors name env vars and the rule broken, never values
 * (a misplaced secret in the wrong variable must not be echoed).
 */
export function parseSettings(env: Record<string, unknown>): SettingsResult {
  const errors: string[] = [];
  const c = {} as ConversationSettings;

  const storeUrl = str(env, "CONVERSATIONS_STORE_URL")?.trim();
  c.storeUrl = storeUrl ? storeUrl : null;
  if (c.storeUrl && !/^d1:\/\/[A-Za-z_][A-Za-z0-9_]*$/.test(c.storeUrl)) {
    errors.push("CONVERSATIONS_STORE_URL must name a D1 binding as d1://BINDING");
  } else if (c.storeUrl && !(c.storeUrl.slice(5) in env)) {
    errors.push("CONVERSATIONS_STORE_URL names a D1 binding that is not bound");
  }
  c.prefix = str(env, "CONVERSATIONS_PREFIX")?.trim() || "conversations";
  const states = { storeUrl: d1StoreUrl(env, "STATES_STORE_URL", errors) };

  for (const s of NUMERIC_SETTINGS) {
    const raw = str(env, s.env);
    if (raw === undefined || raw.trim() === "") {
      c[s.key] = s.def;
      continue;
    }
    const n = Number(raw.trim());
    if (!Number.isFinite(n) || n <= 0) {
      errors.push(`${s.env} must be a number greater than 0`);
      c[s.key] = s.def;
    } else if (s.int && !Number.isInteger(n)) {
      errors.push(`${s.env} must be a whole number`);
      c[s.key] = s.def;
    } else {
      c[s.key] = n;
    }
  }
  // Under load a shard writes D1 at most once per this many settled turns.
  if (c.indexFlushBatch < 10) {
    errors.push("CONVERSATIONS_INDEX_FLUSH_BATCH must be at least 10");
    c.indexFlushBatch = 20;
  }
  if (c.indexFlushLagSeconds > 60) {
    errors.push("CONVERSATIONS_INDEX_FLUSH_LAG_SECONDS must be at most 60");
    c.indexFlushLagSeconds = 1;
  }

  c.maxMessageChars = { ...DEFAULT_MAX_MESSAGE_CHARS };
  const mmc = env["CONVERSATIONS_MAX_MESSAGE_CHARS"];
  if (mmc !== undefined && mmc !== null && mmc !== "") {
    let parsed: unknown = mmc;
    if (typeof mmc === "string") {
      try {
        parsed = JSON.parse(mmc);
      } catch {
        parsed = undefined;
        errors.push("CONVERSATIONS_MAX_MESSAGE_CHARS must be a JSON object of channel name to characters");
      }
    }
    if (parsed !== undefined) {
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
        errors.push("CONVERSATIONS_MAX_MESSAGE_CHARS must be a JSON object of channel name to characters");
      } else {
        const map: Record<string, number> = {};
        for (const [name, v] of Object.entries(parsed)) {
          if (typeof v !== "number" || !Number.isInteger(v) || v <= 0) {
            errors.push(`CONVERSATIONS_MAX_MESSAGE_CHARS entry for a channel must be a whole number greater than 0`);
          } else {
            map[name] = v;
          }
        }
        c.maxMessageChars = map;
      }
    }
  }

  if (!(c.intakeClaimRefreshSeconds < c.intakeClaimLeaseSeconds)) {
    errors.push("CONVERSATIONS_INTAKE_CLAIM_REFRESH_SECONDS must be below CONVERSATIONS_INTAKE_CLAIM_LEASE_SECONDS");
  }
  if (!(c.deliverySendTimeoutSeconds < c.deliveryClaimLeaseSeconds)) {
    errors.push("CONVERSATIONS_DELIVERY_SEND_TIMEOUT_SECONDS must be below CONVERSATIONS_DELIVERY_CLAIM_LEASE_SECONDS");
  }
  if (!(c.deliveryCallbackTimeoutSeconds < c.deliveryClaimLeaseSeconds)) {
    errors.push("CONVERSATIONS_DELIVERY_CALLBACK_TIMEOUT_SECONDS must be below CONVERSATIONS_DELIVERY_CLAIM_LEASE_SECONDS");
  }
  if (!(c.deliveryBackoffBaseSeconds <= c.deliveryBackoffMaxSeconds)) {
    errors.push("CONVERSATIONS_DELIVERY_BACKOFF_BASE_SECONDS must not exceed CONVERSATIONS_DELIVERY_BACKOFF_MAX_SECONDS");
  }

  const providerRaw = (str(env, "LLM_PROVIDER_CHECKPOINT")?.trim() || "kv").toLowerCase();
  let provider: CheckpointProvider = "kv";
  if (providerRaw === "kv" || providerRaw === "d1" || providerRaw === "memory") {
    provider = providerRaw;
  } else if (providerRaw === "postgres") {
    errors.push("LLM_PROVIDER_CHECKPOINT=postgres is not available in this build; use kv, d1 or memory");
  } else {
    errors.push("LLM_PROVIDER_CHECKPOINT must be one of kv, d1, memory");
  }
  let ttlMinutes: number | null = null;
  const ttlRaw = str(env, "LLM_PROVIDER_CHECKPOINT_TTL_MINUTES")?.trim();
  if (ttlRaw) {
    const n = Number(ttlRaw);
    if (!Number.isFinite(n) || n <= 0) errors.push("LLM_PROVIDER_CHECKPOINT_TTL_MINUTES must be a number greater than 0");
    else ttlMinutes = n;
  }

  const outbound = { allowPrivateHosts: false };
  const allowRaw = str(env, ALLOW_PRIVATE_HOSTS_SETTING)?.trim().toLowerCase();
  if (allowRaw === "true") outbound.allowPrivateHosts = true;
  else if (allowRaw !== undefined && allowRaw !== "" && allowRaw !== "false") errors.push(`${ALLOW_PRIVATE_HOSTS_SETTING} must be true or false`);

  const allowlist = splitAllowlist(str(env, SECRET_REFERENCE_ALLOWLIST_SETTING));
  if (allowlist.some((name) => !ENV_NAME.test(name))) {
    errors.push(`${SECRET_REFERENCE_ALLOWLIST_SETTING} must be a comma-separated list of env var names`);
  } else if (allowlist.some((name) => isForbiddenReference(name, env))) {
    // Never names the entry: the rule is enough to find it, and settings errors echo no values.
    errors.push(
      `${SECRET_REFERENCE_ALLOWLIST_SETTING} names a variable that is never referenceable (the service's own settings, its bindings, CHANNEL_* secrets)`,
    );
  }

  const referenceOrigins = parseReferenceOrigins(env[SECRET_REFERENCE_ORIGINS_SETTING], env, errors);

  const jq = parseJqBudget(env, errors);
  const notifications = parseNotificationSettings(env, errors);
  const connectors = parseConnectorSettings(env, errors);
  const marketplace = parseMarketplaceSettings(env, errors);
  const config = parseConfigSettings(env, errors);
  const toolRuns = parseToolRunSettings(env, errors);
  const schedules = parseScheduleSettings(env, errors);
  const hooks = parseHookSettings(env, errors);
  const interactions = parseInteractionSettings(env, errors);
  const runs = parseRunsSettings(env, errors);
  const storage = parseStorageSettings(env, errors);
  const toolMeta = parseToolMetaSettings(env, errors);
  const mcp = parseMcpSettings(env, errors);

  if (errors.length) return { ok: false, errors };
  return {
    ok: true,
    settings: {
      jq,
      conversations: c,
      states,
      notifications,
      connectors,
      marketplace,
      checkpoint: { provider, ttlMinutes },
      outbound,
      secretReferences: { allowlist },
      referenceOrigins,
      config,
      toolRuns,
      schedules,
      hooks,
      interactions,
      runs,
      storage,
      toolMeta,
      mcp,
    },
  };
}

/** The jq budget settings: whole numbers within the bounds the engine can honour. */
function parseJqBudget(env: Record<string, unknown>, errors: string[]): JqBudget {
  const out: JqBudget = { ...DEFAULT_JQ_BUDGET };
  const fields = [
    { key: "steps", env: "JQ_BUDGET_STEPS", min: JQ_MIN_STEPS, max: JQ_MAX_STEPS },
    { key: "memoryMb", env: "JQ_BUDGET_MEMORY_MB", min: JQ_MIN_MEMORY_MB, max: JQ_MAX_MEMORY_MB },
  ] as const;
  for (const f of fields) {
    const raw = str(env, f.env)?.trim();
    if (!raw) continue;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < f.min || n > f.max) errors.push(`${f.env} must be a whole number from ${f.min} to ${f.max}`);
    else out[f.key] = n;
  }
  return out;
}

const cache = new WeakMap<object, SettingsResult>();

/** parseSettings memoised per env object (stable for an isolate's lifetime). */
export function settingsFor(env: object): SettingsResult {
  let r = cache.get(env);
  if (!r) {
    r = parseSettings(env as Record<string, unknown>);
    cache.set(env, r);
  }
  return r;
}

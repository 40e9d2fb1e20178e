/**
 * Every setting the service reads, parsed and validated from the Worker's env (wrangler [vars],
 * secrets, .dev.vars, `--var`, the runtime overlay) into one typed object. Each area's parser reads
 * its settings through their definitions (define.ts) and adds the rules that tie them together.
 * Pure: shared by the Worker and `npm run check-config`, so both give the same verdict.
 */
import { EPOCH_LAYOUT, type EpochLayout } from "./epoch-settings";
import type { JqBudget } from "../jq/budget";
import { type ConfigSettings, parseConfigSettings } from "./config-settings";
import { type ConnectorSettings, parseConnectorSettings } from "./connector-settings";
import {
  type CheckpointProvider,
  type ConversationSettings,
  LLM_PROVIDER_CHECKPOINT,
  LLM_PROVIDER_CHECKPOINT_TTL_MINUTES,
  parseConversationSettings,
} from "./conversation-settings";
import type { EnvVars } from "./define";
import { type HookSettings, parseHookSettings } from "./hook-settings";
import { type InteractionSettings, parseInteractionSettings } from "./interaction-settings";
import { type MarketplaceSettings, parseMarketplaceSettings } from "./marketplace-settings";
import { type McpSettings, parseMcpSettings } from "./mcp-settings";
import { type NotificationSettings, parseNotificationSettings } from "./notification-settings";
import { OUTBOUND_ALLOW_PRIVATE_HOSTS, SECRET_REFERENCE_ALLOWLIST, SECRET_REFERENCE_ORIGINS, parseJqBudget } from "./outbound-settings";
import { type RunsSettings, parseRunsSettings } from "./runs-settings";
import { type ScheduleSettings, parseScheduleSettings } from "./schedule-settings";
import type { ReferenceOrigins } from "./secret-references";
import { STATES_STORE_URL } from "./states-settings";
import { type StorageSettings, type ToolMetaSettings, parseStorageSettings, parseToolMetaSettings } from "./storage-settings";
import { type ToolRunSettings, parseToolRunSettings } from "./tool-run-settings";
import { type WebSettings, parseWebSettings } from "./web-settings";

export type { CheckpointProvider, ConversationSettings } from "./conversation-settings";
export { DEFAULT_MAX_MESSAGE_CHARS, NUMERIC_SETTINGS } from "./conversation-settings";

export interface Settings {
  conversations: ConversationSettings;
  /** `STATES_STORE_URL` (d1://BINDING): the states area's store; unset, its doors answer 501 `states-not-configured`. */
  states: { storeUrl: string | null };
  /** The notifications sink (`INTERACTIONS_STORE_URL`, feed caps). */
  notifications: NotificationSettings;
  connectors: ConnectorSettings;
  marketplace: MarketplaceSettings;
  checkpoint: { provider: CheckpointProvider; ttlMinutes: number | null };
  /** Background tool runs. */
  toolRuns: ToolRunSettings;
  /** The schedules' catch-up rule. */
  schedules: ScheduleSettings;
  /** The public trigger doors' verifier tolerance and replay window. */
  hooks: HookSettings;
  /** ask_user interactions; the store switch is `notifications.storeUrl`. */
  interactions: InteractionSettings;
  /** Run traces. */
  runs: RunsSettings;
  /** The R2 content store. */
  storage: StorageSettings;
  /** The tool metadata overlay. */
  toolMeta: ToolMetaSettings;
  /** MCP servers as tool sources. */
  mcp: McpSettings;
  /** What one jq run may use (src/platform/jq/engine.ts). */
  jq: JqBudget;
  /** The outbound address guard lets private hosts through (src/platform/net/address-guard.ts). */
  outbound: { allowPrivateHosts: boolean };
  /** Names `{"env"}` references may resolve besides `SECRET_*` (secret-references.ts). */
  secretReferences: { allowlist: string[] };
  /** The origins each referenceable name's value may be sent to (secret-references.ts). */
  referenceOrigins: ReferenceOrigins;
  /** How the runtime overlay is sealed and re-checked. */
  config: ConfigSettings;
  /** The web channel's sessions, streams and page. */
  web: WebSettings;
  /** The access epochs' layout (src/platform/epochs/rpc.ts reads it from the env directly, per call). */
  accessEpochs: { shards: number; replicas: number; also: EpochLayout[] };
}

export type SettingsResult = { ok: true; settings: Settings } | { ok: false; errors: string[] };

/**
 * Parses and validates the settings. Errors name env vars and the rule broken, never values
 * (a misplaced secret in the wrong variable must not be echoed).
 */
export function parseSettings(env: EnvVars): SettingsResult {
  const errors: string[] = [];
  const settings: Settings = {
    conversations: parseConversationSettings(env, errors),
    states: { storeUrl: STATES_STORE_URL.read(env, errors) },
    checkpoint: { provider: LLM_PROVIDER_CHECKPOINT.read(env, errors), ttlMinutes: LLM_PROVIDER_CHECKPOINT_TTL_MINUTES.read(env, errors) },
    outbound: { allowPrivateHosts: OUTBOUND_ALLOW_PRIVATE_HOSTS.read(env, errors) },
    secretReferences: { allowlist: SECRET_REFERENCE_ALLOWLIST.read(env, errors) },
    referenceOrigins: SECRET_REFERENCE_ORIGINS.read(env, errors),
    jq: parseJqBudget(env, errors),
    notifications: parseNotificationSettings(env, errors),
    connectors: parseConnectorSettings(env, errors),
    marketplace: parseMarketplaceSettings(env, errors),
    config: parseConfigSettings(env, errors),
    toolRuns: parseToolRunSettings(env, errors),
    schedules: parseScheduleSettings(env, errors),
    hooks: parseHookSettings(env, errors),
    interactions: parseInteractionSettings(env, errors),
    runs: parseRunsSettings(env, errors),
    storage: parseStorageSettings(env, errors),
    toolMeta: parseToolMetaSettings(env, errors),
    mcp: parseMcpSettings(env, errors),
    web: parseWebSettings(env, errors),
    accessEpochs: {
      shards: EPOCH_LAYOUT.shards.read(env, errors),
      replicas: EPOCH_LAYOUT.replicas.read(env, errors),
      also: EPOCH_LAYOUT.also.read(env, errors),
    },
  };
  return errors.length ? { ok: false, errors } : { ok: true, settings };
}

const cache = new WeakMap<object, SettingsResult>();

/** parseSettings memoised per env object (stable for an isolate's lifetime). */
export function settingsFor(env: object): SettingsResult {
  let r = cache.get(env);
  if (!r) {
    r = parseSettings(env as EnvVars);
    cache.set(env, r);
  }
  return r;
}

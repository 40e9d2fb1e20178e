/**
 * Every setting the service reads from its env, declared once: name, type, default, whether it is a
 * secret, whether the runtime overlay may set it, and what it means. Descriptive only:
 * `parseSettings` (settings.ts) stays the one validator. The registry feeds the settings JSON Schema
 * (`GET /api/config/settings-schema`), the overlay's name check (`POST /api/config/env`, profiles)
 * and the masking of secrets. test/config/registry.test.ts proves it covers every variable
 * `parseSettings` reads, so a new setting cannot be forgotten here.
 *
 * Imports only settings infrastructure (src/settings, src/platform/jq/budget, src/net): never a feature folder.
 */
import { DEFAULT_JQ_BUDGET, JQ_MAX_MEMORY_MB, JQ_MAX_STEPS, JQ_MIN_MEMORY_MB, JQ_MIN_STEPS } from "../jq/budget";
import { ALLOW_PRIVATE_HOSTS_SETTING } from "../net/address-guard";
import {
  DEFAULT_REFRESH_SECONDS,
  MAX_REFRESH_SECONDS,
  MIN_REFRESH_SECONDS,
  SETTINGS_KEY_SETTING,
  SETTINGS_PREVIOUS_KEYS_SETTING,
  SETTINGS_REFRESH_SETTING,
} from "./config-settings";
import { SECRET_REFERENCE_ALLOWLIST_SETTING, SECRET_REFERENCE_ORIGINS_SETTING } from "./secret-references";
import { STORAGE_BUCKET_SETTING, STORAGE_DEFAULTS, STORAGE_UPLOAD_CEILING_BYTES } from "./storage-settings";
import { DEFAULT_MAX_MESSAGE_CHARS, NUMERIC_SETTINGS } from "./settings";

/** How a value is written in the env (always as text) and what it must parse to. */
export type SettingType =
  | "string"
  /** A whole number. */
  | "integer"
  /** A number (durations may be fractional). */
  | "number"
  /** `true` or `false`. */
  | "boolean"
  /** One of `enum`. */
  | "enum"
  /** `d1://BINDING`: a store switch. */
  | "store-url"
  /** An absolute URL. */
  | "url"
  /** A comma-separated list. */
  | "list"
  /** A JSON object (its text). */
  | "json-object"
  /** A JSON array (its text). */
  | "json-array";

export type SettingDefault = string | number | boolean | null | Readonly<Record<string, number>> | readonly unknown[];

export interface SettingDefinition {
  /** The env var name; for a family, its template with a `<PLACEHOLDER>` (see `family`). */
  name: string;
  /** A family of names (`NOTIFICATIONS_FROM_<CHANNEL>`): matches each concrete name. */
  family?: RegExp;
  /** The area the setting belongs to (groups the schema and the docs). */
  area:
    | "conversations"
    | "states"
    | "notifications"
    | "connectors"
    | "marketplace"
    | "tool-runs"
    | "schedules"
    | "hooks"
    | "interactions"
    | "storage"
    | "tool-meta"
    | "runs"
    | "mcp"
    | "checkpoints"
    | "outbound"
    | "jq"
    | "access-control"
    | "channels"
    | "config";
  type: SettingType;
  enum?: readonly string[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  /** The value in force when unset (null: unset means "off" or "none"). */
  default: SettingDefault;
  /** Never shown by any door, sealed at rest in the overlay and in profiles. */
  secret: boolean;
  /** May the runtime overlay set it? False: env only (docs/runtime-settings.md, "What may be overlaid"). */
  overlay: boolean;
  description: string;
}

const CONVERSATION_NUMERIC_DESCRIPTIONS: Readonly<Record<string, string>> = {
  CONVERSATIONS_STORE_SOCKET_CONNECT_TIMEOUT: "Bounds connect to the store, in seconds (accepted for parity; D1 has no sockets).",
  CONVERSATIONS_STORE_SOCKET_TIMEOUT: "Bounds each store command read, in seconds (accepted for parity; D1 has no sockets).",
  CONVERSATIONS_MAX_CONCURRENT_TURNS: "Turns in flight per isolate.",
  CONVERSATIONS_THREAD_QUEUE_DEPTH: "Per-thread FIFO depth; past it the door answers 503.",
  CONVERSATIONS_PER_ADDRESS_TURNS_PER_HOUR:
    "Token bucket per client address (or per caller on api and event doors) over a rolling hour; a route's turns_per_hour_override replaces it.",
  CONVERSATIONS_ADDRESS_BUCKET_MAX_ENTRIES: "Live rate buckets in the deployment; past it the oldest are evicted.",
  CONVERSATIONS_SYNC_WAIT_MAX_SECONDS: "Upper clamp on wait_seconds.",
  CONVERSATIONS_INTAKE_CLAIM_LEASE_SECONDS: "Lease of a running turn; when it lapses the alarm re-queues the turn.",
  CONVERSATIONS_INTAKE_CLAIM_REFRESH_SECONDS: "Refresh interval of the intake lease; must stay below the lease.",
  CONVERSATIONS_TURN_MAX_ATTEMPTS: "Runs one turn gets before it settles with the error outcome (poison turns).",
  CONVERSATIONS_DELIVERY_MAX_ATTEMPTS: "Delivery attempts before a record is failed.",
  CONVERSATIONS_DELIVERY_BACKOFF_BASE_SECONDS: "First retry wait; each later one doubles (at most the max).",
  CONVERSATIONS_DELIVERY_BACKOFF_MAX_SECONDS: "Backoff ceiling.",
  CONVERSATIONS_DELIVERY_CLAIM_LEASE_SECONDS: "Exactly-once delivery claim lease.",
  CONVERSATIONS_DELIVERY_SEND_TIMEOUT_SECONDS: "One outbound channel send; below the delivery claim lease.",
  CONVERSATIONS_DELIVERY_CALLBACK_TIMEOUT_SECONDS: "One callback POST; below the delivery claim lease.",
  CONVERSATIONS_DELIVERY_SWEEP_INTERVAL_SECONDS: "Between stalled-delivery sweeps.",
  CONVERSATIONS_DELIVERY_GRACE_SECONDS: "Provisional record wait for a provider receipt.",
  CONVERSATIONS_MAX_OUTBOUND_CHUNKS: "Provider messages per answer.",
  CONVERSATIONS_INBOUND_DEDUPE_TTL_SECONDS: "Dedupe window for provider message ids and event ids.",
  CONVERSATIONS_ANSWER_RETENTION_TTL_SECONDS: "Record retention after its terminal transition; also the mode override's lifetime.",
  CONVERSATIONS_INDEX_FLUSH_BATCH: "Settled turns an IndexShard collects before it writes the admin listings to D1 in one batch (at least 10).",
  CONVERSATIONS_INDEX_FLUSH_LAG_SECONDS: "The longest a pushed listing row waits in its shard before that write (at most 60).",
};

/** Bounds beyond "greater than 0" that parseSettings enforces on some numeric settings. */
const NUMERIC_BOUNDS: Readonly<Record<string, { minimum?: number; maximum?: number }>> = {
  CONVERSATIONS_INDEX_FLUSH_BATCH: { minimum: 10 },
  CONVERSATIONS_INDEX_FLUSH_LAG_SECONDS: { maximum: 60 },
};

const storeUrl = (name: string, area: SettingDefinition["area"], what: string, code: string): SettingDefinition => ({
  name,
  area,
  type: "store-url",
  default: null,
  secret: false,
  overlay: true,
  description: `${what} as d1://BINDING; unset → ${code}.`,
});

const int = (name: string, area: SettingDefinition["area"], def: number, minimum: number, maximum: number, description: string): SettingDefinition => ({
  name,
  area,
  type: "integer",
  default: def,
  minimum,
  maximum,
  secret: false,
  overlay: true,
  description,
});

/**
 * A channel's variables (decisions §11); the secrets are those a provider signs or authenticates with.
 * `API_BASE` is env only: every send carries the channel's token to it (Telegram's in the URL path),
 * so whoever could set it at runtime (an admin key, through the overlay) could collect the token.
 * Deployment configuration is set by whoever already holds the deployment's secrets.
 */
function channel(prefix: string, vars: Array<[suffix: string, secret: boolean, description: string]>): SettingDefinition[] {
  return vars.map(([suffix, secret, description]) => ({
    name: `CHANNEL_${prefix}_${suffix}`,
    area: "channels" as const,
    type: suffix.endsWith("_URL") || suffix === "API_BASE" ? ("url" as const) : ("string" as const),
    default: null,
    secret,
    overlay: suffix !== "API_BASE",
    description,
  }));
}

export const SETTINGS: readonly SettingDefinition[] = Object.freeze([
  // Conversations (spec §8).
  storeUrl(
    "CONVERSATIONS_STORE_URL",
    "conversations",
    "The conversations store (routes, configs, persons, indexes)",
    "every conversation routing op answers 501 conversations-not-configured",
  ),
  {
    name: "CONVERSATIONS_PREFIX",
    area: "conversations",
    type: "string",
    default: "conversations",
    secret: false,
    overlay: true,
    description: "Keyspace prefix.",
  },
  ...NUMERIC_SETTINGS.map((s): SettingDefinition => ({
    name: s.env,
    area: "conversations",
    type: s.int ? "integer" : "number",
    default: s.def,
    exclusiveMinimum: 0,
    ...(NUMERIC_BOUNDS[s.env] ?? {}),
    secret: false,
    overlay: true,
    description: CONVERSATION_NUMERIC_DESCRIPTIONS[s.env] ?? "",
  })),
  {
    name: "CONVERSATIONS_MAX_MESSAGE_CHARS",
    area: "conversations",
    type: "json-object",
    default: DEFAULT_MAX_MESSAGE_CHARS,
    secret: false,
    overlay: true,
    description: "Per-channel outbound split caps: a JSON object of channel name to characters (whole numbers greater than 0).",
  },
  // Stores of the other areas.
  storeUrl("STATES_STORE_URL", "states", "The states area's store", "every states door answers 501 states-not-configured"),
  storeUrl(
    "INTERACTIONS_STORE_URL",
    "notifications",
    "The notifications sink's store",
    "a sink write answers 501 interactions-not-configured and the feed reads empty",
  ),
  storeUrl("CONNECTORS_STORE_URL", "connectors", "The connectors area's store", "every connection door answers 501 connectors-not-configured"),
  storeUrl("MARKETPLACE_STORE_URL", "marketplace", "The marketplace's install store", "every marketplace door answers 501 marketplace-not-configured"),
  // Notifications.
  int("NOTIFICATIONS_FEED_MAX", "notifications", 1000, 1, 100_000, "Entries each notification feed keeps, newest first."),
  int("NOTIFICATIONS_IDENTITY_FEED_TTL_SECONDS", "notifications", 2_592_000, 60, 31_536_000, "A per-identity feed's idle lifetime."),
  {
    name: "NOTIFICATIONS_FROM_<CHANNEL>",
    family: /^NOTIFICATIONS_FROM_[A-Z0-9_]+$/,
    area: "notifications",
    type: "string",
    default: null,
    secret: false,
    overlay: true,
    description:
      "The identity a channel sends notifications from (a route's our_identity), per channel (upper-case registry name); one line of at most 512 characters.",
  },
  {
    name: "NOTIFICATIONS_RECIPIENT_<CHANNEL>",
    family: /^NOTIFICATIONS_RECIPIENT_[A-Z0-9_]+$/,
    area: "notifications",
    type: "string",
    default: null,
    secret: false,
    overlay: true,
    description: "Where a channel notification without a recipient goes, per channel; one line of at most 512 characters.",
  },
  // Connectors.
  // Env only: a descriptor names the token endpoint that receives the client secret (and every
  // refresh token) together with the env vars holding them, so setting it at runtime would let an
  // admin key send those secrets to a host of its choosing.
  {
    name: "CONNECTORS_PROVIDERS",
    area: "connectors",
    type: "json-array",
    default: [],
    secret: false,
    overlay: false,
    description:
      "The connector providers document: a JSON array of provider descriptors (docs/connectors.md). Env only: its token endpoints receive the client secrets and refresh tokens.",
  },
  {
    name: "CONNECTORS_ENCRYPTION_KEY",
    area: "connectors",
    type: "string",
    default: null,
    secret: true,
    overlay: true,
    description: "The AES-256-GCM key sealing stored connector tokens: 32 random bytes in base64; required while CONNECTORS_STORE_URL is set.",
  },
  {
    name: "CONNECTORS_ENCRYPTION_KEY_PREVIOUS",
    area: "connectors",
    type: "list",
    default: null,
    secret: true,
    overlay: true,
    description: "Comma-separated older connector keys that still open tokens sealed before a rotation (at most 8).",
  },
  {
    name: "CONNECTORS_OAUTH_REDIRECT_URI",
    area: "connectors",
    type: "url",
    default: null,
    secret: false,
    overlay: true,
    description: "Where providers send the browser back with code and state: an https URL (or http on 127.0.0.1/localhost).",
  },
  int("CONNECTORS_OAUTH_START_TTL_SECONDS", "connectors", 600, 60, 3600, "How long a started authorization may be completed."),
  int("CONNECTORS_TOKEN_REFRESH_SKEW_SECONDS", "connectors", 60, 0, 3600, "An access token this close to expiry is refreshed before use."),
  // Marketplace.
  {
    name: "MARKETPLACE_REGISTRY_URL",
    area: "marketplace",
    type: "string",
    default: null,
    secret: false,
    overlay: true,
    description: "Where plugins come from: builtin: (the embedded catalog) or the https URL of a registry index.",
  },
  int("MARKETPLACE_REGISTRY_TIMEOUT_SECONDS", "marketplace", 10, 1, 120, "Deadline of one registry index fetch."),
  int("MARKETPLACE_REGISTRY_MAX_BYTES", "marketplace", 4 * 1024 * 1024, 1024, 32 * 1024 * 1024, "Largest registry index document read."),
  int("MARKETPLACE_LOCK_LEASE_SECONDS", "marketplace", 60, 5, 3600, "How long the fleet marketplace lock stays taken if its holder dies."),
  // Background tool runs and schedules (docs/tool-runs.md, docs/schedules.md).
  storeUrl(
    "TOOL_RUNS_STORE_URL",
    "tool-runs",
    "The background tool runs' store (the runs listing; runs in ToolRun objects, schedules in Schedule objects)",
    "every tool-runs and schedules door answers 501 tool-runs-not-configured",
  ),
  int("TOOL_RUNS_RETENTION_SECONDS", "tool-runs", 604_800, 60, 31_536_000, "How long a finished background tool run stays readable."),
  int(
    "TOOL_RUNS_MAX_ATTEMPTS",
    "tool-runs",
    3,
    1,
    10,
    "Starts a background tool run gets; one interrupted (its object restarted mid-run) that many times fails.",
  ),
  int(
    "SCHEDULES_CATCH_UP_WINDOW_SECONDS",
    "schedules",
    86_400,
    0,
    2_592_000,
    "After downtime, missed slots of a schedule are caught up with one fire when the latest is at most this old; 0 never catches up.",
  ),
  // Hooks (docs/hooks.md).
  int(
    "HOOKS_VERIFIER_TOLERANCE_SECONDS",
    "hooks",
    300,
    1,
    86_400,
    "How far a signed hook delivery's timestamp (Stripe, Standard Webhooks) may be from the server clock, either way, before it is refused.",
  ),
  int(
    "HOOKS_REPLAY_WINDOW_SECONDS",
    "hooks",
    172_800,
    60,
    2_592_000,
    "How long a hook delivery's replay key (a signed delivery id, or a digest of the signed body) is remembered: a replayed delivery answers already_seen and fires nothing.",
  ),
  // Interactions (docs/interactions.md). The store switch is INTERACTIONS_STORE_URL above.
  int(
    "INTERACTIONS_TTL_SECONDS",
    "interactions",
    86_400,
    60,
    31_536_000,
    "How long an ask_user interaction waits for its answer; then it expires and the parked run resumes with a timeout.",
  ),
  int(
    "INTERACTIONS_TICKET_TTL_SECONDS",
    "interactions",
    86_400,
    60,
    31_536_000,
    "Lifetime of a public callback ticket (/api/interactions/callback/{ticket}); never beyond its interaction's expiry.",
  ),
  int(
    "INTERACTIONS_RETENTION_SECONDS",
    "interactions",
    604_800,
    60,
    31_536_000,
    "How long an ended interaction (answered, cancelled, expired) stays readable before it and its listing row are deleted.",
  ),
  int("INTERACTIONS_EVENTS_MAX", "interactions", 1000, 10, 100_000, "Events the interaction stream keeps for Last-Event-ID replays (oldest dropped first)."),
  int(
    "INTERACTIONS_STREAM_MAX_SECONDS",
    "interactions",
    300,
    1,
    3600,
    "The longest one GET /api/interactions/stream stays open; the client reconnects with Last-Event-ID.",
  ),
  int(
    "INTERACTIONS_MEDIA_MAX_BYTES",
    "interactions",
    10 * 1024 * 1024,
    1024,
    100 * 1024 * 1024,
    "Largest media item an answer stores (GET /api/interactions/media/{media_id}); a larger one is kept as a reference only.",
  ),
  // Content (docs/storage.md, docs/templates.md, docs/tool-metadata.md).
  {
    name: STORAGE_BUCKET_SETTING,
    area: "storage",
    type: "string",
    default: null,
    secret: false,
    overlay: false,
    description:
      "The R2 binding of the content store (storage and template doors, TemplatedText ids, plugin console assets); unset → 501 storage-not-configured. Env only: it names a binding.",
  },
  int(
    "STORAGE_MAX_UPLOAD_BYTES",
    "storage",
    STORAGE_DEFAULTS.maxUploadBytes,
    1,
    STORAGE_UPLOAD_CEILING_BYTES,
    "Largest object one upload (POST /api/storage/resources) stores, decoded; at most what a 1 MiB JSON body carries in base64.",
  ),
  storeUrl(
    "TOOL_META_STORE_URL",
    "tool-meta",
    "The tool metadata overlay's store (folders, tags, badges, hidden)",
    "every /api/tool-meta door answers 501 tool-meta-not-configured",
  ),
  // Run traces (docs/observability.md).
  int(
    "RUNS_TRACE_RETENTION_SECONDS",
    "runs",
    604_800,
    60,
    31_536_000,
    "How long the trace of a run outside the bridge (tool runs, agent runs) and its summary row live; a turn's trace lives as long as its record.",
  ),
  // MCP servers as tool sources (docs/mcp.md).
  int(
    "MCP_LIST_TIMEOUT_SECONDS",
    "mcp",
    15,
    1,
    120,
    "Deadline of one listing of an MCP server's tools (connect, initialize, every tools/list page), at declaration and at each reload.",
  ),
  int(
    "MCP_MAX_TOOLS_PER_SERVER",
    "mcp",
    256,
    1,
    1000,
    "Most tools one MCP server registers; a listing past it keeps the first ones and reports the rest as skipped.",
  ),
  // Checkpoints.
  {
    name: "LLM_PROVIDER_CHECKPOINT",
    area: "checkpoints",
    type: "enum",
    enum: ["kv", "d1", "memory"],
    default: "kv",
    secret: false,
    overlay: true,
    description: "Agent memory provider: kv (thread object storage), d1 or memory.",
  },
  {
    name: "LLM_PROVIDER_CHECKPOINT_TTL_MINUTES",
    area: "checkpoints",
    type: "number",
    exclusiveMinimum: 0,
    default: null,
    secret: false,
    overlay: true,
    description: "Idle TTL of agent memory in minutes; unset keeps it forever.",
  },
  // Outbound, references, jq.
  {
    name: ALLOW_PRIVATE_HOSTS_SETTING,
    area: "outbound",
    type: "boolean",
    default: false,
    secret: false,
    overlay: true,
    description:
      "true lets callbacks, tools, agents and LLM endpoints reach loopback, private and local hosts (local development); cloud metadata stays refused.",
  },
  // Env only: it decides which of the deployment's env secrets admins may send to URLs they
  // declare, so an admin key may not widen it (naming, say, a connector's client secret variable).
  {
    name: SECRET_REFERENCE_ALLOWLIST_SETTING,
    area: "outbound",
    type: "list",
    default: null,
    secret: false,
    overlay: false,
    description:
      'Comma-separated env var names {"env"} references may resolve besides SECRET_*; never a service setting, binding, channel secret or connector client credential. Env only: it is the operator\'s delegation of env secrets to declarations.',
  },
  // Env only: it decides where each delegated env secret may be sent, so an admin key that could
  // set it could add its own host and receive the secret.
  {
    name: SECRET_REFERENCE_ORIGINS_SETTING,
    area: "outbound",
    type: "json-object",
    default: null,
    secret: false,
    overlay: false,
    description:
      'JSON object binding each env var name {"env"} references may name to the origins its value may be sent to, e.g. {"SECRET_WEATHER_TOKEN": ["https://api.weather.example"]}; https, or http for 127.0.0.1/localhost/[::1]; :* for any port. A name it does not bind goes nowhere. Env only: it is the operator\'s choice of where delegated secrets may go.',
  },
  int(
    "JQ_BUDGET_STEPS",
    "jq",
    DEFAULT_JQ_BUDGET.steps,
    JQ_MIN_STEPS,
    JQ_MAX_STEPS,
    "Metered steps one jq evaluation may use before it fails with jq budget exceeded.",
  ),
  int("JQ_BUDGET_MEMORY_MB", "jq", DEFAULT_JQ_BUDGET.memoryMb, JQ_MIN_MEMORY_MB, JQ_MAX_MEMORY_MB, "Largest heap (MiB) one jq evaluation may grow to."),
  // Channels (decisions §11): a channel exists only while all its secrets are set.
  ...channel("TWILIO", [
    ["ACCOUNT_SID", false, "Twilio account SID."],
    ["AUTH_TOKEN", true, "Twilio auth token: signs inbound webhooks and authenticates sends."],
    ["PUBLIC_URL", false, "The public origin Twilio signs webhook URLs against."],
    ["API_BASE", false, "Twilio API origin (default the provider's public API; tests point it at a fake). Env only: sends carry the auth token to it."],
  ]),
  ...channel("WHATSAPP", [
    ["APP_SECRET", true, "WhatsApp Cloud app secret: signs inbound webhooks."],
    ["ACCESS_TOKEN", true, "WhatsApp Cloud access token for sends."],
    ["VERIFY_TOKEN", true, "The hub.verify_token of the webhook handshake."],
    ["API_BASE", false, "WhatsApp Graph API base (default the provider's public API). Env only: sends carry the access token to it."],
  ]),
  ...channel("TELEGRAM", [
    ["BOT_TOKEN", true, "Telegram bot token."],
    ["WEBHOOK_SECRET", true, "The secret_token Telegram sends with each webhook."],
    ["API_BASE", false, "Telegram Bot API origin (default the provider's public API). Env only: every call carries the bot token to it."],
  ]),
  ...channel("SLACK", [
    ["SIGNING_SECRET", true, "Slack signing secret: signs inbound events."],
    ["BOT_TOKEN", true, "Slack bot token for sends."],
    ["BOT_USER_ID", false, "The bot's user id (our_identity of Slack routes)."],
    ["API_BASE", false, "Slack Web API base (default the provider's public API). Env only: sends carry the bot token to it."],
  ]),
  // Env only: bootstrapping and the overlay's own machinery.
  {
    name: "ACCESS_CONTROL_BOOTSTRAP_TOKEN",
    area: "access-control",
    type: "string",
    default: null,
    secret: true,
    overlay: false,
    description:
      "Enables POST /api/keys/bootstrap (the first admin key). Env only: the overlay is written with an admin key, so it cannot hold what mints the first one.",
  },
  {
    name: SETTINGS_KEY_SETTING,
    area: "config",
    type: "string",
    default: null,
    secret: true,
    overlay: false,
    description:
      "The AES-256-GCM key (32 random bytes, base64) sealing secret settings of the overlay and profiles at rest; unset, writing a secret answers 501 settings-encryption-not-configured. Env only.",
  },
  {
    name: SETTINGS_PREVIOUS_KEYS_SETTING,
    area: "config",
    type: "list",
    default: null,
    secret: true,
    overlay: false,
    description: "Comma-separated older settings keys that still open values sealed before a rotation (at most 8). Env only.",
  },
  {
    name: SETTINGS_REFRESH_SETTING,
    area: "config",
    type: "number",
    minimum: MIN_REFRESH_SECONDS,
    maximum: MAX_REFRESH_SECONDS,
    default: DEFAULT_REFRESH_SECONDS,
    secret: false,
    overlay: false,
    description: "Seconds between two overlay generation checks of one isolate: the bound on how long a change made elsewhere takes to apply. Env only.",
  },
]);

const BY_NAME: ReadonlyMap<string, SettingDefinition> = new Map(SETTINGS.filter((s) => !s.family).map((s) => [s.name, s]));
const FAMILIES: readonly SettingDefinition[] = SETTINGS.filter((s) => s.family);

/** The definition governing env var `name` (an exact setting or a family member), or null. */
export function settingDefinition(name: string): SettingDefinition | null {
  const exact = BY_NAME.get(name);
  if (exact) return exact;
  return FAMILIES.find((f) => f.family!.test(name)) ?? null;
}

/** May the runtime overlay set `name`? */
export function isOverlayable(name: string): boolean {
  return settingDefinition(name)?.overlay === true;
}

/** Is `name` a secret by its definition (a profile or overlay write may mark more names secret)? */
export function isSecretSetting(name: string): boolean {
  return settingDefinition(name)?.secret === true;
}

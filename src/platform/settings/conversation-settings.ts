/**
 * The `CONVERSATIONS_*` settings of spec §8 and the agent memory (checkpoint) settings. Counts are
 * whole numbers greater than 0; durations (`…_SECONDS`) may be fractional, which is handy for fast
 * end-to-end runs.
 */
import { type EnvVars, type NumberSetting, defineSetting, envString, positiveNumber, storeUrl } from "./define";

export const CONVERSATIONS_STORE_URL = storeUrl("CONVERSATIONS_STORE_URL", {
  area: "conversations",
  what: "The conversations store (routes, configs, persons, indexes)",
  unset: "every conversation routing op answers 501 conversations-not-configured",
  gate: { code: "conversations", what: "conversations backend" },
});

export const CONVERSATIONS_PREFIX = defineSetting({
  name: "CONVERSATIONS_PREFIX",
  area: "conversations",
  type: "string",
  default: "conversations",
  secret: false,
  overlay: true,
  description: "Keyspace prefix.",
  read: (env): string => envString(env, "CONVERSATIONS_PREFIX")?.trim() || "conversations",
});

const count = (name: string, def: number, description: string, bounds: { min?: number } = {}): NumberSetting =>
  positiveNumber(name, { area: "conversations", default: def, whole: true, description, ...bounds });
const seconds = (name: string, def: number, description: string, bounds: { max?: number } = {}): NumberSetting =>
  positiveNumber(name, { area: "conversations", default: def, whole: false, description, ...bounds });

/** The numeric settings, by the field of `ConversationSettings` each fills. */
export const CONVERSATION_NUMBERS = {
  storeSocketConnectTimeout: seconds(
    "CONVERSATIONS_STORE_SOCKET_CONNECT_TIMEOUT",
    5,
    "Bounds connect to the store, in seconds (accepted for parity; D1 has no sockets).",
  ),
  storeSocketTimeout: seconds("CONVERSATIONS_STORE_SOCKET_TIMEOUT", 5, "Bounds each store command read, in seconds (accepted for parity; D1 has no sockets)."),
  maxConcurrentTurns: count("CONVERSATIONS_MAX_CONCURRENT_TURNS", 10, "Turns in flight per isolate."),
  threadQueueDepth: count("CONVERSATIONS_THREAD_QUEUE_DEPTH", 20, "Per-thread FIFO depth; past it the door answers 503."),
  perAddressTurnsPerHour: count(
    "CONVERSATIONS_PER_ADDRESS_TURNS_PER_HOUR",
    20,
    "Token bucket per client address (or per caller on api and event doors) over a rolling hour; a route's turns_per_hour_override replaces it.",
  ),
  addressBucketMaxEntries: count("CONVERSATIONS_ADDRESS_BUCKET_MAX_ENTRIES", 50000, "Live rate buckets in the deployment; past it the oldest are evicted."),
  syncWaitMaxSeconds: seconds("CONVERSATIONS_SYNC_WAIT_MAX_SECONDS", 120, "Upper clamp on wait_seconds."),
  intakeClaimLeaseSeconds: seconds(
    "CONVERSATIONS_INTAKE_CLAIM_LEASE_SECONDS",
    120,
    "Lease of a running turn; when it lapses (the object died) the alarm re-queues the turn.",
  ),
  intakeClaimRefreshSeconds: seconds("CONVERSATIONS_INTAKE_CLAIM_REFRESH_SECONDS", 30, "Refresh interval of the intake lease; must stay below the lease."),
  turnMaxAttempts: count(
    "CONVERSATIONS_TURN_MAX_ATTEMPTS",
    2,
    "Runs one turn gets before it settles with the error outcome (poison turns; a run that kills its object counts).",
  ),
  deliveryMaxAttempts: count("CONVERSATIONS_DELIVERY_MAX_ATTEMPTS", 8, "Delivery attempts before a record is failed."),
  deliveryBackoffBaseSeconds: seconds("CONVERSATIONS_DELIVERY_BACKOFF_BASE_SECONDS", 60, "First retry wait; each later one doubles (at most the max)."),
  deliveryBackoffMaxSeconds: seconds("CONVERSATIONS_DELIVERY_BACKOFF_MAX_SECONDS", 900, "Backoff ceiling; not below the base."),
  deliveryClaimLeaseSeconds: seconds("CONVERSATIONS_DELIVERY_CLAIM_LEASE_SECONDS", 120, "Exactly-once delivery claim lease of one attempt."),
  deliverySendTimeoutSeconds: seconds("CONVERSATIONS_DELIVERY_SEND_TIMEOUT_SECONDS", 60, "One outbound channel send; below the delivery claim lease."),
  deliveryCallbackTimeoutSeconds: seconds("CONVERSATIONS_DELIVERY_CALLBACK_TIMEOUT_SECONDS", 15, "One callback POST; below the delivery claim lease."),
  deliverySweepIntervalSeconds: seconds("CONVERSATIONS_DELIVERY_SWEEP_INTERVAL_SECONDS", 60, "Between stalled-delivery sweeps."),
  deliveryGraceSeconds: seconds("CONVERSATIONS_DELIVERY_GRACE_SECONDS", 3600, "Provisional record wait for a provider receipt."),
  maxOutboundChunks: count("CONVERSATIONS_MAX_OUTBOUND_CHUNKS", 10, "Provider messages per answer."),
  inboundDedupeTtlSeconds: seconds("CONVERSATIONS_INBOUND_DEDUPE_TTL_SECONDS", 172800, "Dedupe window for provider message ids and event ids."),
  answerRetentionTtlSeconds: seconds(
    "CONVERSATIONS_ANSWER_RETENTION_TTL_SECONDS",
    2592000,
    "Record retention after its terminal transition; also the mode override's lifetime.",
  ),
  inboxSlaSeconds: seconds(
    "CONVERSATIONS_INBOX_SLA_SECONDS",
    900,
    "How long a customer handed to a human may wait before the inbox alert, unless the route's inbox policy says otherwise (docs/inbox.md).",
  ),
  // Under load a shard writes D1 at most once per this many settled turns.
  indexFlushBatch: count(
    "CONVERSATIONS_INDEX_FLUSH_BATCH",
    20,
    'Settled turns an IndexShard collects before it writes the admin listings to D1 in one batch (docs/architecture.md, "The listing lag").',
    { min: 10 },
  ),
  indexFlushLagSeconds: seconds(
    "CONVERSATIONS_INDEX_FLUSH_LAG_SECONDS",
    1,
    "The longest a pushed listing row waits in its shard before that write; with the threads' 250 ms push delay, the listing trails by at most about 1.25 s.",
    { max: 60 },
  ),
} as const satisfies Record<string, NumberSetting>;

type NumericKey = keyof typeof CONVERSATION_NUMBERS;

/** The numeric settings as a list, in the order they are read. */
export const NUMERIC_SETTINGS: readonly NumberSetting[] = Object.values(CONVERSATION_NUMBERS);

export const DEFAULT_MAX_MESSAGE_CHARS: Readonly<Record<string, number>> = Object.freeze({
  twilio: 1600,
  whatsapp: 4096,
  slack: 40000,
  telegram: 4096,
  web: 8000,
});

const MAX_MESSAGE_CHARS_SHAPE = "CONVERSATIONS_MAX_MESSAGE_CHARS must be a JSON object of channel name to characters";

export const CONVERSATIONS_MAX_MESSAGE_CHARS = defineSetting({
  name: "CONVERSATIONS_MAX_MESSAGE_CHARS",
  area: "conversations",
  type: "json-object",
  default: DEFAULT_MAX_MESSAGE_CHARS,
  secret: false,
  overlay: true,
  description: "Per-channel outbound split caps: a JSON object of channel name to characters (whole numbers greater than 0).",
  read(env, errors): Record<string, number> {
    const raw = env["CONVERSATIONS_MAX_MESSAGE_CHARS"];
    if (raw === undefined || raw === null || raw === "") return { ...DEFAULT_MAX_MESSAGE_CHARS };
    let parsed: unknown = raw;
    if (typeof raw === "string") {
      try {
        parsed = JSON.parse(raw);
      } catch {
        errors.push(MAX_MESSAGE_CHARS_SHAPE);
        return { ...DEFAULT_MAX_MESSAGE_CHARS };
      }
    }
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
      errors.push(MAX_MESSAGE_CHARS_SHAPE);
      return { ...DEFAULT_MAX_MESSAGE_CHARS };
    }
    const map: Record<string, number> = {};
    for (const [name, v] of Object.entries(parsed)) {
      if (typeof v !== "number" || !Number.isInteger(v) || v <= 0) {
        errors.push("CONVERSATIONS_MAX_MESSAGE_CHARS entry for a channel must be a whole number greater than 0");
      } else {
        map[name] = v;
      }
    }
    return map;
  },
});

export const CONVERSATION_SETTINGS = [CONVERSATIONS_STORE_URL, CONVERSATIONS_PREFIX, ...NUMERIC_SETTINGS, CONVERSATIONS_MAX_MESSAGE_CHARS] as const;

export type ConversationSettings = { storeUrl: string | null; prefix: string; maxMessageChars: Record<string, number> } & Record<NumericKey, number>;

/** The values tied together by a rule, each pair named in its error. */
function checkOrder(c: ConversationSettings, errors: string[]): void {
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
}

export function parseConversationSettings(env: EnvVars, errors: string[]): ConversationSettings {
  const numbers = Object.fromEntries(Object.entries(CONVERSATION_NUMBERS).map(([key, s]) => [key, s.read(env, errors)])) as Record<NumericKey, number>;
  const c: ConversationSettings = {
    storeUrl: CONVERSATIONS_STORE_URL.read(env, errors),
    prefix: CONVERSATIONS_PREFIX.read(env),
    ...numbers,
    maxMessageChars: CONVERSATIONS_MAX_MESSAGE_CHARS.read(env, errors),
  };
  checkOrder(c, errors);
  return c;
}

export type CheckpointProvider = "kv" | "d1" | "postgres" | "memory";

export const LLM_PROVIDER_CHECKPOINT = defineSetting({
  name: "LLM_PROVIDER_CHECKPOINT",
  area: "checkpoints",
  type: "enum",
  enum: ["kv", "d1", "memory"],
  default: "kv",
  secret: false,
  overlay: true,
  description: "Agent memory provider: kv (thread object storage), d1 or memory.",
  read(env, errors): CheckpointProvider {
    const raw = (envString(env, "LLM_PROVIDER_CHECKPOINT")?.trim() || "kv").toLowerCase();
    if (raw === "kv" || raw === "d1" || raw === "memory") return raw;
    if (raw === "postgres") errors.push("LLM_PROVIDER_CHECKPOINT=postgres is not available in this build; use kv, d1 or memory");
    else errors.push("LLM_PROVIDER_CHECKPOINT must be one of kv, d1, memory");
    return "kv";
  },
});

export const LLM_PROVIDER_CHECKPOINT_TTL_MINUTES = defineSetting({
  name: "LLM_PROVIDER_CHECKPOINT_TTL_MINUTES",
  area: "checkpoints",
  type: "number",
  exclusiveMinimum: 0,
  default: null,
  secret: false,
  overlay: true,
  description: "Idle TTL of agent memory in minutes; unset keeps it forever.",
  read(env, errors): number | null {
    const raw = envString(env, "LLM_PROVIDER_CHECKPOINT_TTL_MINUTES")?.trim();
    if (!raw) return null;
    const n = Number(raw);
    if (!Number.isFinite(n) || n <= 0) {
      errors.push("LLM_PROVIDER_CHECKPOINT_TTL_MINUTES must be a number greater than 0");
      return null;
    }
    return n;
  },
});

export const CHECKPOINT_SETTINGS = [LLM_PROVIDER_CHECKPOINT, LLM_PROVIDER_CHECKPOINT_TTL_MINUTES] as const;

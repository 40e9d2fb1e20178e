/**
 * What the system doors say about the deployment (platform-facts B8, B9): the
 * runtime's identity, this isolate and the bound objects, and the table of pluggable kinds. Only
 * what a Workers deployment can state truthfully: an isolate cannot enumerate the others, so the
 * census lists the one that answers. Details name env vars and "configured" / "not configured",
 * never a value. Pure over settings, env and the isolate's overlay state.
 */
import { z } from "zod";
import { configuredChannels } from "../channels/registry";
import { VERIFIER_KINDS } from "../hooks/verifiers";
import type { Settings } from "../platform/settings/settings";
import type { LastOp } from "../config/isolate-settings";

export const BackendView = z
  .object({
    present: z.literal(true),
    backend: z.literal("cloudflare-workers"),
    module: z.literal("workerd"),
    detail: z.string(),
  })
  .strict();
export type BackendView = z.infer<typeof BackendView>;

export function backendView(): BackendView {
  return {
    present: true,
    backend: "cloudflare-workers",
    module: "workerd",
    detail:
      "Cloudflare Workers: stateless isolates in front of Durable Objects and D1. Work runs in the isolate that takes a request and in the objects it calls; there is no worker fleet or task bus.",
  };
}

export const KindRow = z
  .object({
    kind: z.string(),
    state: z.enum(["active", "default", "off"]),
    plugin: z.string().nullable(),
    detail: z.string(),
  })
  .strict();
export type KindRow = z.infer<typeof KindRow>;

const has = (env: Record<string, unknown>, name: string): boolean => {
  const v = env[name];
  return v !== undefined && v !== null && String(v).trim() !== "";
};
const said = (env: Record<string, unknown>, name: string) => `${name} ${has(env, name) ? "configured" : "not configured"}`;

function store(kind: string, name: string, url: string | null, on: string, off: string): KindRow {
  return url
    ? { kind, state: "active", plugin: "d1", detail: `${name} configured: ${on}` }
    : { kind, state: "off", plugin: null, detail: `${name} not configured: ${off}` };
}

export interface OverlayState {
  generation: number | null;
  names: number;
}

/** The pluggable-kinds table of `GET /api/system/kinds`, over the effective settings and env. */
export function systemKinds(settings: Settings, env: Record<string, unknown>, overlay: OverlayState): KindRow[] {
  const channels = configuredChannels(env).map((a) => a.name);
  const ckpt = settings.checkpoint;
  const mp = settings.marketplace;
  return [
    { kind: "backend", state: "active", plugin: "cloudflare-workers", detail: "Workers isolates, Durable Objects and D1 (GET /api/backend)" },
    { kind: "identity", state: "active", plugin: "d1", detail: `api keys in D1 (binding DB); bootstrap: ${said(env, "ACCESS_CONTROL_BOOTSTRAP_TOKEN")}` },
    store(
      "conversations",
      "CONVERSATIONS_STORE_URL",
      settings.conversations.storeUrl,
      "routes, configs, persons and indexes in D1; threads in Durable Objects",
      "every conversation routing op answers 501 conversations-not-configured",
    ),
    store(
      "states",
      "STATES_STORE_URL",
      settings.states.storeUrl,
      "declarations and templates in D1; records in StateStore objects",
      "every states door answers 501 states-not-configured",
    ),
    store(
      "tool_runs",
      "TOOL_RUNS_STORE_URL",
      settings.toolRuns.storeUrl,
      "background tool runs in ToolRun objects, schedules in Schedule objects, hooks in D1 (each fire a tool run)",
      "the tool-runs, schedules and hooks doors answer 501 tool-runs-not-configured",
    ),
    store(
      "interactions",
      "INTERACTIONS_STORE_URL",
      settings.notifications.storeUrl,
      "ask_user interactions in Interaction objects (listing in D1) and the notifications sink; feeds in NotificationFeed objects",
      "the interactions doors and a sink write answer 501 interactions-not-configured; ask_user refuses",
    ),
    store(
      "connectors",
      "CONNECTORS_STORE_URL",
      settings.connectors.storeUrl,
      `connections in D1 and ConnectorConnection objects; ${settings.connectors.providers.length} provider(s) in CONNECTORS_PROVIDERS`,
      "every connection door answers 501 connectors-not-configured",
    ),
    mp.storeUrl
      ? {
          kind: "marketplace",
          state: "active",
          plugin: mp.registry ? (mp.registry.kind === "builtin" ? "builtin-registry" : "https-registry") : null,
          detail: `MARKETPLACE_STORE_URL configured; MARKETPLACE_REGISTRY_URL ${mp.registry ? "configured" : "not configured"}`,
        }
      : {
          kind: "marketplace",
          state: "off",
          plugin: null,
          detail: "MARKETPLACE_STORE_URL not configured: every marketplace door answers 501 marketplace-not-configured",
        },
    settings.storage.bucketBinding
      ? {
          kind: "storage",
          state: "active",
          plugin: "r2",
          detail:
            "STORAGE_BUCKET configured: objects, templates and plugin console assets in R2; TemplatedText ids resolve there first, then in the D1 text resources",
        }
      : {
          kind: "storage",
          state: "default",
          plugin: "d1-text-resources",
          detail:
            "STORAGE_BUCKET not configured: the storage and template doors answer 501 storage-not-configured; TemplatedText ids resolve in the D1 text resources (binding DB) only",
        },
    channels.length
      ? {
          kind: "channels",
          state: "active",
          plugin: channels.join(","),
          detail: `configured: ${channels.join(", ")} (a channel is on when all its CHANNEL_* secrets are set)`,
        }
      : { kind: "channels", state: "off", plugin: null, detail: "no channel configured (a channel is on when all its CHANNEL_* secrets are set)" },
    {
      kind: "webhook_verifiers",
      state: "active",
      plugin: VERIFIER_KINDS.join(","),
      detail: `hook topic verifiers (GET /api/hooks/verifiers); secrets sealed (${said(env, "SETTINGS_ENCRYPTION_KEY")}) or given as env references`,
    },
    {
      kind: "checkpoints",
      state: has(env, "LLM_PROVIDER_CHECKPOINT") ? "active" : "default",
      plugin: ckpt.provider,
      detail: `LLM_PROVIDER_CHECKPOINT ${has(env, "LLM_PROVIDER_CHECKPOINT") ? "configured" : "not configured (default kv)"}; LLM_PROVIDER_CHECKPOINT_TTL_MINUTES ${ckpt.ttlMinutes === null ? "not configured (keep forever)" : "configured"}`,
    },
    {
      kind: "config",
      state: overlay.names ? "active" : "default",
      plugin: "d1-overlay",
      detail: `env + settings overlay in D1 (generation ${overlay.generation ?? "not loaded"}, ${overlay.names} overlaid setting(s)); ${said(env, "SETTINGS_ENCRYPTION_KEY")}`,
    },
  ];
}

export const WorkerView = z
  .object({
    name: z.string(),
    kind: z.literal("isolate"),
    pid: z.null(),
    generation: z.number().int().nullable(),
    joined_at: z.string(),
    beat_at: z.string(),
    state: z.literal("running"),
    stale: z.literal(false),
    last_op: z.string().nullable(),
    last_op_at: z.string().nullable(),
  })
  .strict();
export type WorkerView = z.infer<typeof WorkerView>;

export const FleetView = z
  .object({
    workers: z.array(WorkerView),
    objects: z.array(z.object({ binding: z.string(), kind: z.literal("durable-object-namespace") }).strict()),
    note: z.string(),
  })
  .strict();
export type FleetView = z.infer<typeof FleetView>;

/** The Durable Object namespaces bound to the Worker, by binding name. */
export function boundObjects(env: Record<string, unknown>): string[] {
  return Object.keys(env)
    .filter((k) => {
      const v = env[k];
      return typeof v === "object" && v !== null && typeof (v as DurableObjectNamespace).idFromName === "function";
    })
    .sort();
}

export function fleetView(
  identity: { id: string; startedAt: number },
  generation: number | null,
  last: LastOp | null,
  env: Record<string, unknown>,
  nowMs: number,
): FleetView {
  return {
    workers: [
      {
        name: identity.id,
        kind: "isolate",
        pid: null,
        generation,
        joined_at: new Date(identity.startedAt).toISOString(),
        beat_at: new Date(nowMs).toISOString(),
        state: "running",
        stale: false,
        last_op: last ? `settings-${last.op}` : null,
        last_op_at: last ? new Date(last.at).toISOString() : null,
      },
    ],
    objects: boundObjects(env).map((binding) => ({ binding, kind: "durable-object-namespace" as const })),
    note: "Only the isolate that answered: Workers cannot enumerate their isolates. Every isolate applies a new settings generation within SETTINGS_REFRESH_SECONDS.",
  };
}

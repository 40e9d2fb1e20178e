/**
 * Maintenance tools (docs/schedules.md "Scheduling the sweep and the prune passes"): the
 * deployment's housekeeping as names a background run or a schedule can give, so the checkpoint
 * sweep (`POST /api/checkpoints/sweep`) and the cron's prune passes can run on a schedule of the
 * operator's choosing.
 *
 * They are not in the tool registry (`GET /api/tools`, bridge turns, agents, `/api/run-tool`):
 * a registry tool runs under any key granted `tools:write` or `tool:<name>`, and these are
 * deployment-wide, destructive and admin-tier like the sweep door itself. So they run only as an
 * admin key (scopes `*`, no condition, no owner, no role), checked live at every run like any
 * grant, and their names contain a dot, which no registry tool name may (decisions §4), so they
 * can never shadow or be shadowed by a declared tool.
 */
import { pruneClaimLinks } from "../access-control/claim-links";
import { pruneThrottle } from "../access-control/throttle";
import { pruneIndexes } from "../shards/listing-table";
import { pruneStarts } from "../connectors/starts";
import type { Env } from "../platform/env";
import type { JsonObject, JsonValue } from "../platform/http/bounded-json";
import type { Settings } from "../platform/settings/settings";
import { pruneStates } from "../states/declarations";
import { applyDueSaves } from "../states/pending-saves";
import { sweepCheckpoints } from "../targets/checkpoints/sweep";
import type { JsonSchema } from "../platform/json-schema";
import { pruneTriggerLinks } from "../hooks/trigger-links";
import { pruneToolRuns } from "./index-store";

export const CHECKPOINTS_SWEEP_TOOL = "maintenance.checkpoints_sweep";
export const PRUNE_EXPIRED_TOOL = "maintenance.prune_expired";

interface MaintenanceTool {
  description: string;
  run(env: Env, settings: Settings, now: Date): Promise<JsonValue>;
}

/** Neither takes arguments: `{}` only. */
// Not frozen: the validator writes its bookkeeping (`__absolute_uri__`) into the schemas it dereferences.
export const MAINTENANCE_INPUT_SCHEMA: JsonSchema = { type: "object", additionalProperties: false };

const TOOLS: ReadonlyMap<string, MaintenanceTool> = new Map([
  [
    CHECKPOINTS_SWEEP_TOOL,
    {
      description:
        "POST /api/checkpoints/sweep as a tool: deletes agent memory idle past LLM_PROVIDER_CHECKPOINT_TTL_MINUTES on the d1 provider; a reported no-op otherwise.",
      async run(env: Env, settings: Settings, now: Date): Promise<JsonValue> {
        return { ...(await sweepCheckpoints(env, settings, now)) } as JsonObject;
      },
    },
  ],
  [
    PRUNE_EXPIRED_TOOL,
    {
      description:
        "The Worker cron's prune passes, now: expired failed-listing rows, bootstrap throttle rows, claim links, OAuth starts (connectors store on), state records past retention and due pending saves (states store on), expired tool-run listing rows and expired hook trigger links.",
      async run(env: Env, settings: Settings, now: Date): Promise<JsonValue> {
        const ms = now.getTime();
        await pruneIndexes(env.DB, ms);
        await pruneThrottle(env.DB, ms);
        const out: JsonObject = {
          passes: ["failed_records", "auth_throttle", "claim_links", "tool_runs", "hook_trigger_links"],
          claim_links_removed: await pruneClaimLinks(env.DB, ms),
          tool_runs_removed: await pruneToolRuns(env.DB, ms),
          trigger_links_removed: await pruneTriggerLinks(env.DB, ms),
        };
        if (settings.connectors.storeUrl) {
          (out.passes as string[]).push("connector_oauth_starts");
          out.connector_starts_removed = await pruneStarts(env.DB, ms);
        }
        if (settings.states.storeUrl) {
          (out.passes as string[]).push("state_retention", "state_pending_saves");
          const states = await pruneStates(env, ms);
          out.state_records_expired = states.expired;
          out.pending_saves_applied = await applyDueSaves(env, ms);
        }
        return out;
      },
    },
  ],
]);

export function isMaintenanceTool(name: string): boolean {
  return TOOLS.has(name);
}

/** The maintenance tool names, for docs and error messages. */
export const MAINTENANCE_TOOL_NAMES: readonly string[] = [...TOOLS.keys()];

/** Runs maintenance tool `name` (the caller authorized the key as an admin). */
export async function runMaintenanceTool(env: Env, settings: Settings, name: string, now: Date): Promise<JsonValue> {
  const tool = TOOLS.get(name);
  if (!tool) throw new Error("not a maintenance tool");
  return tool.run(env, settings, now);
}

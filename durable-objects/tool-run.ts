/**
 * ToolRun: one per background tool run (docs/tool-runs.md). A shell over the run's parts
 * (src/tool-runs/compose.ts): the verbs of its contract (src/tool-runs/rpc.ts) over the
 * run's SQLite row (src/tool-runs/run-store.ts), and the one alarm that does everything after the
 * submit (start, re-drive after a restart, wait for an asked question, publish, expire), decided
 * by the pure policy (src/tool-runs/alarm-policy.ts). A restart loses nothing: whatever the row
 * says is left to do, the next alarm does.
 */
import { DurableObject } from "cloudflare:workers";
import type { KeyedSubmit, ToolRunRequest, ToolRunRecord, ToolRunRpc } from "../src/tool-runs/rpc";
import type { Env } from "../src/platform/env";
import { startObject } from "../src/platform/persistence/object-start";
import type { JsonObject } from "../src/platform/http/bounded-json";
import type { InteractionStatus } from "../src/interactions/rpc";
import { systemClock } from "../src/platform/clock";
import { type ToolRunParts, composeToolRun } from "../src/tool-runs/compose";
import { upgradeRunTable } from "../src/tool-runs/run-store";

export class ToolRun extends DurableObject<Env> implements ToolRunRpc {
  /** The composed parts. An instance field, so not reachable over RPC; tests reach it in runInDurableObject. */
  readonly parts: ToolRunParts;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    // A run stored in an older shape lacks the hook and binding columns: added before any read.
    startObject(ctx, { migrate: (storage) => upgradeRunTable(storage.sql) });
    this.parts = composeToolRun({ storage: ctx.storage, env: () => this.env, clock: systemClock });
  }

  async submit(request: ToolRunRequest): Promise<ToolRunRecord> {
    return this.parts.verbs.submit(request);
  }

  async submitKeyed(request: ToolRunRequest & { request_hash: string }): Promise<KeyedSubmit> {
    return this.parts.verbs.submitKeyed(request);
  }

  async read(): Promise<ToolRunRecord | null> {
    return this.parts.verbs.read();
  }

  async resume(interactionId: string, outcome: JsonObject, status: Exclude<InteractionStatus, "pending">): Promise<"resumed" | "retry" | "not_waiting"> {
    return this.parts.verbs.resume(interactionId, outcome, status);
  }

  /** The one alarm: whatever the row says is left to do, as of now. */
  override async alarm(): Promise<void> {
    await this.parts.alarm.run();
  }
}

/**
 * The ToolRun object's verbs (src/tool-runs/rpc.ts): the submit (idempotent by run id;
 * arms the alarm for now), the read, and the hand-over of an interaction's outcome to a waiting run.
 */
import type { KeyedSubmit, ToolRunRequest, ToolRunRecord } from "./rpc";
import type { JsonObject } from "../platform/http/bounded-json";
import type { InteractionStatus } from "../interactions/record";
import { askedRunEnd } from "./execute";
import type { ToolRunKit } from "./object-kit";
import { insertQueued, readRequestHash, readRun, readSteps } from "./run-store";

export interface ToolRunVerbs {
  submit(request: ToolRunRequest): Promise<ToolRunRecord>;
  submitKeyed(request: ToolRunRequest & { request_hash: string }): Promise<KeyedSubmit>;
  read(): ToolRunRecord | null;
  resume(interactionId: string, outcome: JsonObject, status: Exclude<InteractionStatus, "pending">): Promise<"resumed" | "retry" | "not_waiting">;
}

export function toolRunVerbs(kit: ToolRunKit): ToolRunVerbs {
  const { sql, clock } = kit;
  const submit = async (request: ToolRunRequest): Promise<ToolRunRecord> => {
    const existing = readRun(sql);
    if (existing) return existing;
    insertQueued(sql, request, clock.now());
    await kit.storage.setAlarm(clock.now());
    const stored = readRun(sql);
    if (!stored) throw new Error("tool run: the run just stored cannot be read back");
    return stored;
  };
  return {
    submit,

    async submitKeyed(request) {
      // The row and its fingerprint are read and the run inserted without an await between, so two
      // submits with one key never both store.
      const existing = readRun(sql);
      if (existing) return readRequestHash(sql) === request.request_hash ? { kind: "replay", row: existing } : { kind: "reused" };
      return { kind: "new", row: await submit(request) };
    },

    read() {
      return readRun(sql);
    },

    async resume(interactionId, outcome, status) {
      const row = readRun(sql);
      if (!row) return "not_waiting";
      // Answered while the attempt is still storing its question, or before a restarted attempt got
      // there: not waiting yet. The run ends or waits (for this or a newer question) soon enough.
      if (row.status === "queued" || row.status === "running") return "retry";
      if (row.status !== "waiting" || row.interaction_id !== interactionId) return "not_waiting";
      const cfg = await kit.settings();
      if (!cfg) return "retry";
      kit.finish(askedRunEnd(outcome, status), readSteps(sql), cfg.settings.toolRuns.retentionSeconds);
      await kit.publish();
      return "resumed";
    },
  };
}

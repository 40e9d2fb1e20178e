/**
 * What every part of the Interaction object shares: its storage, the env, the injected clock and
 * fetch, the settings loader, the one alarm and the erase. The parts (src/interactions/verbs.ts,
 * src/interactions/alarm.ts) are composed over one kit by src/interactions/compose.ts.
 */
import { constantTimeEqual } from "../access-control/crypto";
import { type ObjectSettings, loadObjectSettings } from "../config/object-settings";
import type { Env } from "../platform/env";
import type { Clock } from "../platform/clock";
import type { JsonObject } from "../platform/http/bounded-json";
import { nextAlarm } from "./lifecycle";
import { type InteractionRow, migrateInteraction, queuedEvents, readRow } from "./object-store";

/**
 * Who may wait on an interaction's answer and how each is reached: a thread whose turn parked, or a
 * background tool run. The object's shell wires them from those objects' contracts, so this area
 * names what it needs without importing the areas that wait on it.
 */
export interface Waiters {
  thread(threadId: string): {
    resumeInteraction(req: { interaction_id: string; message_id: string; outcome: "answered" | "cancelled" | "expired"; by: string | null }): Promise<{
      accepted: boolean;
      retry?: boolean;
    }>;
  };
  toolRun(runId: string): {
    resume(interactionId: string, outcome: JsonObject, status: "answered" | "cancelled" | "expired"): Promise<"resumed" | "retry" | "not_waiting">;
  };
}

export interface InteractionDeps {
  storage: DurableObjectStorage;
  /** The threads and tool runs that wait on answers. */
  waiters: Waiters;
  /** The object's env, read through a function so it follows the object's. */
  env: () => Env;
  clock: Clock;
  fetch: typeof fetch;
}

/** The shared kit the parts run over. */
export interface InteractionKit extends InteractionDeps {
  sql: SqlStorage;
  /** An outside resume of this instance is running (a restart clears it). */
  lease: { resumeRunning: boolean };
  /** Arms the one alarm to the next instant it has work (`running`: an outside resume holds its lease). */
  arm(nowMs: number, running?: boolean): Promise<void>;
  /** Deletes everything this object holds; the instance keeps answering as an empty object (its tables re-made). */
  forgetAll(): Promise<void>;
  /** The settings with the runtime overlay (null while the configuration is invalid: try again later). */
  effective(): Promise<ObjectSettings | null>;
  /** The settings for a verb: an invalid configuration fails it (every door answers 500 then too). */
  required(): Promise<ObjectSettings>;
}

export function interactionKit(deps: InteractionDeps): InteractionKit {
  const sql = deps.storage.sql;
  const lease = { resumeRunning: false };
  const effective = () => loadObjectSettings(deps.env(), { name: "interaction", whenInvalid: "owed work waits" });
  return {
    ...deps,
    sql,
    lease,
    async arm(nowMs, running = lease.resumeRunning) {
      const row = readRow(sql);
      if (!row) return;
      const at = nextAlarm(row, queuedEvents(sql).length > 0, running, nowMs);
      if (at === null) await deps.storage.deleteAlarm();
      else await deps.storage.setAlarm(at);
    },
    async forgetAll() {
      await deps.storage.deleteAlarm();
      await deps.storage.deleteAll();
      migrateInteraction(sql);
    },
    effective,
    async required() {
      const cfg = await effective();
      if (!cfg) throw new Error("interaction: the configuration is invalid");
      return cfg;
    },
  };
}

export const iso = (ms: number) => new Date(ms).toISOString();

/** Pending and not past its expiry (an expiry whose alarm has not fired yet already closes it). */
export function isOpen(row: InteractionRow, nowMs: number): boolean {
  return row.state.status === "pending" && row.expires_at > nowMs;
}

/** Is `hash` this interaction's live ticket? Compared in constant time. */
export function ticketLive(row: InteractionRow, hash: string, nowMs: number): boolean {
  return (
    row.ticket_hash !== null &&
    row.ticket_expires_at !== null &&
    row.ticket_expires_at > nowMs &&
    isOpen(row, nowMs) &&
    constantTimeEqual(hash, row.ticket_hash)
  );
}

import { describe, expect, it } from "vitest";
import { schemaVersion } from "../../src/platform/persistence/object-sql";
import { HUB_RING_SCHEMA, lastEventId, migrateRing, trimmedThrough } from "../../src/interactions/hub-ring";
import { INTERACTION_SCHEMA, migrateInteraction, queuedEvents } from "../../src/interactions/object-store";
import type { InteractionEventInput } from "../../src/interactions/rpc";
import { inScratchObject } from "../helpers/object-schema";

describe("interaction stores written before versioned schemas", () => {
  it("the InteractionHub's ring adopts its tables and keeps its positions", async () => {
    const out = await inScratchObject((sql) => {
      sql.exec("CREATE TABLE IF NOT EXISTS events (id INTEGER PRIMARY KEY, interaction_id TEXT NOT NULL, audience TEXT, event TEXT NOT NULL)");
      sql.exec("CREATE INDEX IF NOT EXISTS events_by_interaction ON events (interaction_id)");
      sql.exec("CREATE TABLE IF NOT EXISTS ring_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)");
      sql.exec("INSERT INTO ring_meta (key, value) VALUES ('last_id', 7), ('trimmed_through', 3)");
      migrateRing(sql);
      return { last: lastEventId(sql), trimmed: trimmedThrough(sql), version: schemaVersion(sql, HUB_RING_SCHEMA.name) };
    });
    expect(out).toEqual({ last: 7, trimmed: 3, version: HUB_RING_SCHEMA.steps.length });
  });

  /** An event as the object queued it for the hub (a created interaction of a background tool run). */
  const QUEUED: InteractionEventInput = {
    type: "interaction.created",
    interaction_id: "3f1c2b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b",
    audience: null,
    at: "2026-01-01T00:00:00.000Z",
    interaction: {
      interaction_id: "3f1c2b4a-5d6e-4f70-8a9b-0c1d2e3f4a5b",
      status: "pending",
      question: "Which plan?",
      options: null,
      schema: null,
      audience: null,
      origin: { kind: "tool_run", run_id: "run-1", caller: "svc" },
      target: { kind: "tool", name: "ask" },
      created_at: "2026-01-01T00:00:00.000Z",
      expires_at: "2026-01-02T00:00:00.000Z",
      ended_at: null,
      answer: null,
      cancel_reason: null,
      reply_message_id: null,
      result: null,
    },
  };

  it("an Interaction adopts its tables and keeps its queued events", async () => {
    const out = await inScratchObject((sql) => {
      sql.exec(`CREATE TABLE IF NOT EXISTS interaction (id INTEGER PRIMARY KEY CHECK (id = 1), state TEXT NOT NULL, parked TEXT, expires_at INTEGER NOT NULL,
        purge_at INTEGER, ticket_hash TEXT, ticket_expires_at INTEGER, ticket_due INTEGER NOT NULL DEFAULT 0, index_dirty INTEGER NOT NULL DEFAULT 1,
        resume TEXT NOT NULL DEFAULT 'none', resume_message_id TEXT, resume_attempts INTEGER NOT NULL DEFAULT 0, ended_by TEXT, claimed_by TEXT, retry_at INTEGER)`);
      sql.exec("CREATE TABLE IF NOT EXISTS outbox_events (seq INTEGER PRIMARY KEY AUTOINCREMENT, event TEXT NOT NULL)");
      sql.exec("INSERT INTO outbox_events (event) VALUES (?)", JSON.stringify(QUEUED));
      migrateInteraction(sql);
      return { queued: queuedEvents(sql), version: schemaVersion(sql, INTERACTION_SCHEMA.name) };
    });
    expect(out.queued).toEqual([{ seq: 1, event: QUEUED }]);
    expect(out.version).toBe(INTERACTION_SCHEMA.steps.length);
  });
});

/**
 * The private notes' table (src/conversations/thread/notes.ts) on its own schema line: a thread
 * object written at the records' first version, before notes existed, gains the table on its next
 * start and keeps its records; a current object migrates again without losing a note.
 */
import { describe, expect, it } from "vitest";
import { THREAD_NOTES_SCHEMA, ThreadNotes } from "../../../src/conversations/thread/notes";
import { THREAD_SCHEMA, migrate } from "../../../src/conversations/thread/store";
import type { Settings } from "../../../src/platform/settings/settings";
import { inScratchObject } from "../../helpers/object-schema";

const settings = () => ({ conversations: { answerRetentionTtlSeconds: 60 } }) as Settings;

function notesOver(storage: DurableObjectStorage, now: number) {
  return new ThreadNotes({ storage, clock: { now: () => now }, settings }, { inbox: { emit: () => undefined }, holdsRecords: () => true });
}

function versions(sql: SqlStorage) {
  return sql.exec<{ key: string; value: string }>("SELECT key, value FROM meta WHERE key IN ('schema_version', 'notes_schema_version') ORDER BY key").toArray();
}

describe("the thread's notes table", () => {
  it("a version 1 thread object (records only, no notes line) migrates: the table is made, the record stays, notes work", async () => {
    const out = await inScratchObject((sql, storage) => {
      sql.exec("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
      sql.exec(`CREATE TABLE records (seq INTEGER PRIMARY KEY AUTOINCREMENT, message_id TEXT NOT NULL UNIQUE, record TEXT NOT NULL, inbound TEXT NOT NULL,
        status TEXT NOT NULL, turn_state TEXT NOT NULL, turn_lease_until INTEGER, delivery_due_at INTEGER, delivery_lease_until INTEGER,
        grace_until INTEGER, expires_at INTEGER, chunks_sent INTEGER NOT NULL DEFAULT 0)`);
      sql.exec("INSERT INTO meta (key, value) VALUES ('schema_version', '1')");
      sql.exec("INSERT INTO records (message_id, record, inbound, status, turn_state) VALUES ('m1', '{}', '{}', 'delivered', 'done')");
      migrate(storage);
      const notes = notesOver(storage, 1_000);
      const added = notes.add("support", "sam", "kept across starts");
      migrate(storage);
      return {
        versions: versions(sql),
        records: sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM records").one().n,
        added: added.ok,
        live: notesOver(storage, 2_000).live(),
      };
    });
    expect(out.versions).toEqual([
      { key: "notes_schema_version", value: String(THREAD_NOTES_SCHEMA.steps.length) },
      { key: "schema_version", value: String(THREAD_SCHEMA.steps.length) },
    ]);
    expect(out.records).toBe(1);
    expect(out.added).toBe(true);
    expect(out.live).toEqual([{ id: expect.any(String), by: "sam", text: "kept across starts", created_at: 1_000, expires_at: 61_000 }]);
  });

  it("reads a note past its expiry as gone, and the prune deletes it", async () => {
    const out = await inScratchObject((sql, storage) => {
      migrate(storage);
      notesOver(storage, 1_000).add("support", "sam", "short-lived");
      const later = notesOver(storage, 61_000);
      return { live: later.live(), due: later.dueAt(), pruned: later.prune(61_000), left: sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM notes").one().n };
    });
    expect(out).toEqual({ live: [], due: 61_000, pruned: 1, left: 0 });
  });
});

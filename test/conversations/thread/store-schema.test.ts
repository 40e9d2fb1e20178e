import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { readCheckpoint } from "../../../src/targets/checkpoints/thread-memory";
import { THREAD_MEMORY_SCHEMA, THREAD_SCHEMA, getStored, migrate } from "../../../src/conversations/thread/store";
import { createRoute, echoKey, send } from "../../helpers/bridge";
import { inScratchObject } from "../../helpers/object-schema";
import { stubFor } from "../../helpers/threads";

type Row = { message_id: string; record: string; inbound: string; status: string; turn_state: string };

/** A settled record row as a live thread stores it, to be written into an older shape. */
async function liveRow(): Promise<Row> {
  const k = await echoKey();
  const route = await createRoute({ door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id });
  const sent = await send(route.name, { external_user_id: "schema", text: "kept", wait_seconds: 10 });
  return runInDurableObject(stubFor(sent.body.data.thread_id), (_o, state) =>
    state.storage.sql.exec<Row>("SELECT message_id, record, inbound, status, turn_state FROM records").one(),
  );
}

function versions(sql: SqlStorage) {
  return sql
    .exec<{ key: string; value: string }>("SELECT key, value FROM meta WHERE key IN ('schema_version', 'memory_schema_version') ORDER BY key")
    .toArray();
}

describe("ThreadObject storage written by earlier versions", () => {
  it("a version 1 object (records without attempts, no outbox, traces, parked table or memory version) migrates and keeps its record", async () => {
    const row = await liveRow();
    const out = await inScratchObject((sql, storage) => {
      sql.exec("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
      sql.exec(`CREATE TABLE records (seq INTEGER PRIMARY KEY AUTOINCREMENT, message_id TEXT NOT NULL UNIQUE, record TEXT NOT NULL, inbound TEXT NOT NULL,
        status TEXT NOT NULL, turn_state TEXT NOT NULL, turn_lease_until INTEGER, delivery_due_at INTEGER, delivery_lease_until INTEGER,
        grace_until INTEGER, expires_at INTEGER, chunks_sent INTEGER NOT NULL DEFAULT 0)`);
      sql.exec("INSERT INTO meta (key, value) VALUES ('schema_version', '1')");
      sql.exec(
        "INSERT INTO records (message_id, record, inbound, status, turn_state) VALUES (?, ?, ?, ?, ?)",
        row.message_id,
        row.record,
        row.inbound,
        row.status,
        row.turn_state,
      );
      migrate(storage);
      migrate(storage);
      const tables = sql
        .exec<{ name: string }>(
          "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('index_outbox', 'run_traces', 'parked_interactions') ORDER BY name",
        )
        .toArray();
      return { stored: getStored(storage, row.message_id), versions: versions(sql), tables };
    });
    expect(out.stored).toMatchObject({ turn_attempts: 0, turn_state: row.turn_state, record: { message_id: row.message_id, answer: "kept" } });
    expect(out.versions).toEqual([
      { key: "memory_schema_version", value: String(THREAD_MEMORY_SCHEMA.steps.length) },
      { key: "schema_version", value: String(THREAD_SCHEMA.steps.length) },
    ]);
    expect(out.tables.map((t) => t.name)).toEqual(["index_outbox", "parked_interactions", "run_traces"]);
  });

  it("memory tables made unversioned on first use keep their messages", async () => {
    const out = await inScratchObject((sql, storage) => {
      sql.exec("CREATE TABLE checkpoint_threads (thread_id TEXT PRIMARY KEY, updated_at INTEGER NOT NULL, expires_at INTEGER)");
      sql.exec("CREATE TABLE checkpoint_messages (seq INTEGER PRIMARY KEY, thread_id TEXT NOT NULL, message TEXT NOT NULL)");
      sql.exec("INSERT INTO checkpoint_threads (thread_id, updated_at, expires_at) VALUES ('t1', 1, NULL)");
      sql.exec("INSERT INTO checkpoint_messages (thread_id, message) VALUES ('t1', ?)", JSON.stringify({ role: "user", content: "remember" }));
      migrate(storage);
      return { memory: readCheckpoint({ storage, threadId: "t1" }, Date.now()), versions: versions(sql) };
    });
    expect(out.memory).toEqual([{ role: "user", content: "remember" }]);
    expect(out.versions).toEqual([
      { key: "memory_schema_version", value: String(THREAD_MEMORY_SCHEMA.steps.length) },
      { key: "schema_version", value: String(THREAD_SCHEMA.steps.length) },
    ]);
  });
});

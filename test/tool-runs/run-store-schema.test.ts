import { describe, expect, it } from "vitest";
import { schemaVersion } from "../../src/platform/persistence/object-sql";
import { RUN_SCHEMA, readRun, upgradeRunTable } from "../../src/tool-runs/run-store";
import { inScratchObject } from "../helpers/object-schema";

/** The run table as first written: without the hook, binding, interaction and writer columns. */
const FIRST_SHAPE = `CREATE TABLE run (id INTEGER PRIMARY KEY CHECK (id = 1), run_id TEXT NOT NULL, tool_name TEXT NOT NULL, arguments TEXT NOT NULL,
  caller_user_id TEXT NOT NULL, caller_fingerprint TEXT NOT NULL, origin TEXT NOT NULL, schedule_name TEXT, slot_at INTEGER,
  status TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, result TEXT, error TEXT, error_kind TEXT,
  created_at INTEGER NOT NULL, started_at INTEGER, finished_at INTEGER, expires_at INTEGER, published INTEGER NOT NULL DEFAULT 0, steps TEXT)`;

const INSERT_RUN =
  "INSERT INTO run (id, run_id, tool_name, arguments, caller_user_id, caller_fingerprint, origin, status, created_at, published) VALUES (1, 'r1', 'echo', '{}', 'root', 'f', 'api', 'succeeded', 1, 1)";

describe("ToolRun objects written before versioned schemas", () => {
  it("a run table of the first shape migrates to the current version and reads back", async () => {
    const out = await inScratchObject((sql) => {
      sql.exec(FIRST_SHAPE);
      sql.exec(INSERT_RUN);
      upgradeRunTable(sql);
      return { run: readRun(sql), version: schemaVersion(sql, RUN_SCHEMA.name) };
    });
    expect(out.run).toMatchObject({ run_id: "r1", hook_name: null, state_binding: null, binding_by: null, interaction_id: null, status: "succeeded" });
    expect(out.version).toBe(RUN_SCHEMA.steps.length);
  });

  it("a table that had gained some of the later columns gets the rest", async () => {
    const out = await inScratchObject((sql) => {
      sql.exec(FIRST_SHAPE);
      sql.exec("ALTER TABLE run ADD COLUMN hook_name TEXT");
      sql.exec(INSERT_RUN);
      sql.exec("UPDATE run SET hook_name = 'on-save'");
      upgradeRunTable(sql);
      return { run: readRun(sql), version: schemaVersion(sql, RUN_SCHEMA.name) };
    });
    expect(out.run).toMatchObject({ run_id: "r1", hook_name: "on-save", state_binding: null });
    expect(out.version).toBe(RUN_SCHEMA.steps.length);
  });

  it("an object that holds no run stays empty", async () => {
    const out = await inScratchObject((sql) => {
      upgradeRunTable(sql);
      return { run: readRun(sql), version: schemaVersion(sql, RUN_SCHEMA.name) };
    });
    expect(out).toEqual({ run: null, version: null });
  });
});

import { describe, expect, it } from "vitest";
import { schemaVersion } from "../../src/platform/persistence/object-sql";
import { SCHEDULE_SCHEMA, readSchedule, upgradeScheduleTables } from "../../src/schedules/schedule-store";
import { inScratchObject } from "../helpers/object-schema";

describe("Schedule objects written before versioned schemas", () => {
  it("tables of the first shape migrate to the current version and read back, fires included", async () => {
    const out = await inScratchObject((sql) => {
      sql.exec(`CREATE TABLE spec (id INTEGER PRIMARY KEY CHECK (id = 1), name TEXT NOT NULL, tool_name TEXT NOT NULL, tool_kwargs TEXT NOT NULL,
        schedule_kwargs TEXT NOT NULL, cron TEXT NOT NULL, timezone TEXT NOT NULL, execution_key TEXT NOT NULL, execution_key_fingerprint TEXT NOT NULL,
        created_by TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, next_fire_at INTEGER, fires INTEGER NOT NULL DEFAULT 0,
        last_fire_at INTEGER, last_run_id TEXT)`);
      sql.exec(
        "CREATE TABLE fires (seq INTEGER PRIMARY KEY, run_id TEXT, slot_at INTEGER, fired_at INTEGER NOT NULL, catch_up INTEGER NOT NULL, skipped INTEGER NOT NULL, submitted INTEGER NOT NULL)",
      );
      sql.exec(
        "INSERT INTO spec (id, name, tool_name, tool_kwargs, schedule_kwargs, cron, timezone, execution_key, execution_key_fingerprint, created_by, created_at, updated_at, fires, last_run_id) VALUES (1, 'nightly', 'echo', '{}', '{}', '0 3 * * *', 'UTC', 'root', 'f', 'root', 1, 1, 1, 'r1')",
      );
      sql.exec("INSERT INTO fires (run_id, slot_at, fired_at, catch_up, skipped, submitted) VALUES ('r1', 5, 6, 0, 0, 1)");
      upgradeScheduleTables(sql);
      return { schedule: readSchedule(sql), version: schemaVersion(sql, SCHEDULE_SCHEMA.name) };
    });
    expect(out.schedule).toMatchObject({ name: "nightly", state_binding: null, fires: 1, recent_fires: [{ run_id: "r1", slot_at: 5, fired_at: 6 }] });
    expect(out.version).toBe(SCHEDULE_SCHEMA.steps.length);
  });

  it("an object that holds no schedule stays empty", async () => {
    const out = await inScratchObject((sql) => {
      upgradeScheduleTables(sql);
      return { schedule: readSchedule(sql), version: schemaVersion(sql, SCHEDULE_SCHEMA.name) };
    });
    expect(out).toEqual({ schedule: null, version: null });
  });
});

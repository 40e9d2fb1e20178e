import { describe, expect, it } from "vitest";
import { schemaVersion } from "../../src/platform/persistence/object-sql";
import { PERSON_SCHEMA, adoptTarget, createPerson, createPersonTables, personView } from "../../src/persons/person-store";
import { inScratchObject } from "../helpers/object-schema";

describe("a PersonDirectory written before versioned schemas", () => {
  it("adopts its tables and keeps its persons", async () => {
    const out = await inScratchObject((sql) => {
      sql.exec("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
      sql.exec("CREATE TABLE IF NOT EXISTS persons (person_id TEXT PRIMARY KEY, created_at TEXT NOT NULL, locale TEXT)");
      sql.exec(`CREATE TABLE IF NOT EXISTS addresses (key TEXT PRIMARY KEY, person_id TEXT NOT NULL, door TEXT NOT NULL, channel TEXT, our_identity TEXT,
        address TEXT NOT NULL, routes TEXT NOT NULL, linked_at TEXT NOT NULL, seq INTEGER NOT NULL)`);
      sql.exec("CREATE INDEX IF NOT EXISTS addresses_person ON addresses(person_id, seq)");
      sql.exec(
        "CREATE TABLE IF NOT EXISTS codes (hash TEXT PRIMARY KEY, conversation TEXT NOT NULL UNIQUE, route_name TEXT NOT NULL, address TEXT NOT NULL, expires_at INTEGER NOT NULL)",
      );
      sql.exec(
        "CREATE TABLE IF NOT EXISTS throttle (party TEXT PRIMARY KEY, failures INTEGER NOT NULL, locked_until INTEGER NOT NULL, expires_at INTEGER NOT NULL)",
      );
      adoptTarget(sql, { kind: "agent", name: "helper" });
      const personId = createPerson(sql, 0, "de");
      createPersonTables(sql);
      return { personId, view: personView(sql, personId), version: schemaVersion(sql, PERSON_SCHEMA.name) };
    });
    expect(out.view).toMatchObject({ person_id: out.personId, target_kind: "agent", target_name: "helper", locale: "de", addresses: [] });
    expect(out.version).toBe(PERSON_SCHEMA.steps.length);
  });
});

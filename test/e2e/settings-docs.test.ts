/**
 * docs/operations.md's settings tables are generated from the setting definitions
 * (scripts/settings-table.ts): this fails when someone edits a definition without regenerating
 * them (`npm run docs:settings`), or edits the tables by hand. A plain Node test: it reads the docs.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { OPERATIONS_DOC, settingsTable, withTable } from "../../scripts/settings-table";
import { SETTINGS } from "../../src/platform/settings/registry";

describe("docs/operations.md's settings tables", () => {
  const text = readFileSync(OPERATIONS_DOC, "utf8");

  it("are what the definitions generate", () => {
    expect(text, "run `npm run docs:settings`").toBe(withTable(text, settingsTable()));
  });

  it("name every defined setting once", () => {
    for (const s of SETTINGS) {
      const rows = text.split("\n").filter((line) => line.startsWith(`| \`${s.name}\``));
      expect(rows, s.name).toHaveLength(1);
    }
  });
});

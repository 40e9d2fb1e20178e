/** The tool-runs and schedules settings (src/platform/settings/tool-run-settings.ts, schedule-settings.ts). */
import { describe, expect, it } from "vitest";
import { settingDefinition } from "../../src/platform/settings/registry";
import { parseSettings } from "../../src/platform/settings/settings";

describe("tool-runs and schedules settings", () => {
  it("default as documented and as the registry states", () => {
    const r = parseSettings({ DB: {} });
    if (!r.ok) throw new Error(r.errors.join());
    expect(r.settings.toolRuns).toEqual({ storeUrl: null, retentionSeconds: 604_800, maxAttempts: 3 });
    expect(r.settings.schedules).toEqual({ catchUpWindowSeconds: 86_400 });
    expect(settingDefinition("TOOL_RUNS_RETENTION_SECONDS")?.default).toBe(604_800);
    expect(settingDefinition("TOOL_RUNS_MAX_ATTEMPTS")?.default).toBe(3);
    expect(settingDefinition("SCHEDULES_CATCH_UP_WINDOW_SECONDS")?.default).toBe(86_400);
    expect(settingDefinition("TOOL_RUNS_STORE_URL")?.type).toBe("store-url");
  });

  it("read the store and the bounds; errors name the variable, never the value", () => {
    const ok = parseSettings({
      DB: {},
      TOOL_RUNS_STORE_URL: "d1://DB",
      TOOL_RUNS_RETENTION_SECONDS: "60",
      TOOL_RUNS_MAX_ATTEMPTS: "10",
      SCHEDULES_CATCH_UP_WINDOW_SECONDS: "0",
    });
    if (!ok.ok) throw new Error(ok.errors.join());
    expect(ok.settings.toolRuns).toEqual({ storeUrl: "d1://DB", retentionSeconds: 60, maxAttempts: 10 });
    expect(ok.settings.schedules.catchUpWindowSeconds).toBe(0);
    const bad = parseSettings({
      DB: {},
      TOOL_RUNS_STORE_URL: "d1://NOPE",
      TOOL_RUNS_RETENTION_SECONDS: "59",
      TOOL_RUNS_MAX_ATTEMPTS: "0",
      SCHEDULES_CATCH_UP_WINDOW_SECONDS: "-1",
    });
    expect(bad.ok).toBe(false);
    const errors = bad.ok ? [] : bad.errors;
    expect(errors).toEqual([
      "TOOL_RUNS_STORE_URL names a D1 binding that is not bound",
      "TOOL_RUNS_RETENTION_SECONDS must be a whole number from 60 to 31536000",
      "TOOL_RUNS_MAX_ATTEMPTS must be a whole number from 1 to 10",
      "SCHEDULES_CATCH_UP_WINDOW_SECONDS must be a whole number from 0 to 2592000",
    ]);
  });
});

/**
 * Every setting the service reads from its env: the definitions of each area (define.ts), in one
 * list. What operators see is derived from it: the settings JSON Schema
 * (`GET /api/config/settings-schema`), the overlay's name check (`POST /api/config/env`,
 * profiles), the masking of secrets, and the settings table of docs/operations.md
 * (scripts/settings-table.ts). test/config/registry.test.ts proves it covers every variable
 * `parseSettings` reads.
 *
 * Imports only settings infrastructure: never a feature folder.
 */
import { CHANNEL_SETTINGS } from "./channel-settings";
import { ACCESS_CONTROL_BOOTSTRAP_TOKEN, CONFIG_SETTINGS } from "./config-settings";
import { CONNECTOR_SETTINGS } from "./connector-settings";
import { EPOCH_SETTINGS } from "./epoch-settings";
import { CHECKPOINT_SETTINGS, CONVERSATION_SETTINGS } from "./conversation-settings";
import type { SettingDefinition } from "./define";
import { HOOK_SETTINGS } from "./hook-settings";
import { INTERACTION_SETTINGS } from "./interaction-settings";
import { MARKETPLACE_SETTINGS } from "./marketplace-settings";
import { MCP_SETTINGS } from "./mcp-settings";
import { METERING_SETTINGS } from "./metering-settings";
import { NOTIFICATION_SETTINGS } from "./notification-settings";
import { OUTBOUND_SETTINGS } from "./outbound-settings";
import { RUNS_SETTINGS } from "./runs-settings";
import { SCHEDULE_SETTINGS } from "./schedule-settings";
import { STATES_SETTINGS } from "./states-settings";
import { STORAGE_SETTINGS } from "./storage-settings";
import { TOOL_RUN_SETTINGS } from "./tool-run-settings";
import { WEB_SETTINGS } from "./web-settings";

export type { SettingDefault, SettingDefinition, SettingType } from "./define";

export const SETTINGS: readonly SettingDefinition[] = Object.freeze([
  ...CONVERSATION_SETTINGS,
  ...STATES_SETTINGS,
  ...NOTIFICATION_SETTINGS,
  ...CONNECTOR_SETTINGS,
  ...MARKETPLACE_SETTINGS,
  ...TOOL_RUN_SETTINGS,
  ...SCHEDULE_SETTINGS,
  ...HOOK_SETTINGS,
  ...INTERACTION_SETTINGS,
  ...STORAGE_SETTINGS,
  ...RUNS_SETTINGS,
  ...MCP_SETTINGS,
  ...CHECKPOINT_SETTINGS,
  ...OUTBOUND_SETTINGS,
  ...CHANNEL_SETTINGS,
  ...WEB_SETTINGS,
  ACCESS_CONTROL_BOOTSTRAP_TOKEN,
  ...EPOCH_SETTINGS,
  ...CONFIG_SETTINGS,
  ...METERING_SETTINGS,
]);

const BY_NAME: ReadonlyMap<string, SettingDefinition> = new Map(SETTINGS.filter((s) => !s.family).map((s) => [s.name, s]));
const FAMILIES: ReadonlyArray<SettingDefinition & { family: RegExp }> = SETTINGS.flatMap((s) => (s.family ? [{ ...s, family: s.family }] : []));

/** The definition governing env var `name` (an exact setting or a family member), or null. */
export function settingDefinition(name: string): SettingDefinition | null {
  const exact = BY_NAME.get(name);
  if (exact) return exact;
  return FAMILIES.find((f) => f.family.test(name)) ?? null;
}

/** May the runtime overlay set `name`? */
export function isOverlayable(name: string): boolean {
  return settingDefinition(name)?.overlay === true;
}

/** Is `name` a secret by its definition (a profile or overlay write may mark more names secret)? */
export function isSecretSetting(name: string): boolean {
  return settingDefinition(name)?.secret === true;
}

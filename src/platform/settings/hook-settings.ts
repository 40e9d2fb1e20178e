/**
 * The hooks' settings (docs/hooks.md "Settings"). Hooks fire as background tool runs,
 * so they are switched on by `TOOL_RUNS_STORE_URL` (src/platform/settings/tool-run-settings.ts), as
 * schedules are; here only what the public trigger doors need:
 * - `HOOKS_VERIFIER_TOLERANCE_SECONDS`: how far a signed delivery's timestamp (Stripe's `t=`,
 *   Standard Webhooks' `webhook-timestamp`) may be from the server's clock, either way, before
 *   the delivery is refused (default 300 s, the providers' own default);
 * - `HOOKS_REPLAY_WINDOW_SECONDS`: how long a delivery id is remembered, so a replayed delivery
 *   answers `already_seen` and fires nothing (default 172800 s, the bridge's inbound dedupe window).
 */
import { intSetting } from "./store-url";

export interface HookSettings {
  /** `HOOKS_VERIFIER_TOLERANCE_SECONDS` (default 300). */
  verifierToleranceSeconds: number;
  /** `HOOKS_REPLAY_WINDOW_SECONDS` (default 172800). */
  replayWindowSeconds: number;
}

export const HOOKS_DEFAULTS = { verifierToleranceSeconds: 300, replayWindowSeconds: 172_800 } as const;

export function parseHookSettings(env: Record<string, unknown>, errors: string[]): HookSettings {
  return {
    verifierToleranceSeconds: intSetting(env, "HOOKS_VERIFIER_TOLERANCE_SECONDS", HOOKS_DEFAULTS.verifierToleranceSeconds, 1, 86_400, errors),
    replayWindowSeconds: intSetting(env, "HOOKS_REPLAY_WINDOW_SECONDS", HOOKS_DEFAULTS.replayWindowSeconds, 60, 2_592_000, errors),
  };
}

/**
 * The hooks' settings (docs/hooks.md "Settings"). Hooks fire as background tool runs, so they are
 * switched on by `TOOL_RUNS_STORE_URL` (tool-run-settings.ts), as schedules are; here only what the
 * public trigger doors need. The verifier tolerance defaults to 300 s, the providers' own default;
 * the replay window to 172800 s, the bridge's inbound dedupe window.
 */
import { type EnvVars, wholeNumber } from "./define";

export const HOOKS_VERIFIER_TOLERANCE_SECONDS = wholeNumber("HOOKS_VERIFIER_TOLERANCE_SECONDS", {
  area: "hooks",
  default: 300,
  min: 1,
  max: 86_400,
  description:
    "How far a signed hook delivery's timestamp (Stripe `t=`, Standard Webhooks `webhook-timestamp`) may be from the server clock, either way, before it is refused.",
});

export const HOOKS_REPLAY_WINDOW_SECONDS = wholeNumber("HOOKS_REPLAY_WINDOW_SECONDS", {
  area: "hooks",
  default: 172_800,
  min: 60,
  max: 2_592_000,
  description:
    "How long a hook delivery's replay key (a signed delivery id, or a digest of the signed body) is remembered: a replayed delivery answers already_seen and fires nothing.",
});

export const HOOK_SETTINGS = [HOOKS_VERIFIER_TOLERANCE_SECONDS, HOOKS_REPLAY_WINDOW_SECONDS] as const;

export interface HookSettings {
  verifierToleranceSeconds: number;
  replayWindowSeconds: number;
}

export function parseHookSettings(env: EnvVars, errors: string[]): HookSettings {
  return {
    verifierToleranceSeconds: HOOKS_VERIFIER_TOLERANCE_SECONDS.read(env, errors),
    replayWindowSeconds: HOOKS_REPLAY_WINDOW_SECONDS.read(env, errors),
  };
}

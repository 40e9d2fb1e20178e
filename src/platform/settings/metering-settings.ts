/**
 * The usage meter's switch (src/platform/metering/usage-meter.ts): a development tool that
 * `npm run bench -- --cost` turns on to count what each kind of message costs (docs/cost.md).
 * Env only, never overlaid: the overlay is written through the service itself, and turning the
 * meter on must stay in the hands of whoever starts the process.
 */
import { type EnvVars, defineSetting, envString } from "./define";

/** Shorter tokens are refused: the token is the only guard on the meter's read-out. */
export const USAGE_METER_TOKEN_MIN_LENGTH = 32;

export const USAGE_METER_TOKEN = defineSetting({
  name: "USAGE_METER_TOKEN",
  area: "config",
  type: "string",
  default: null,
  secret: true,
  overlay: false,
  description: `Development only: set (at least ${USAGE_METER_TOKEN_MIN_LENGTH} characters), the isolate counts requests, object activity and storage rows, and answers GET /__usage with that token as a Bearer credential (docs/cost.md). Unset in every deployment. Env only.`,
  read(env: EnvVars, errors: string[]): string | undefined {
    const raw = envString(env, "USAGE_METER_TOKEN")?.trim();
    if (!raw) return undefined;
    if (raw.length < USAGE_METER_TOKEN_MIN_LENGTH) {
      errors.push(`USAGE_METER_TOKEN must be at least ${USAGE_METER_TOKEN_MIN_LENGTH} characters`);
      return undefined;
    }
    return raw;
  },
});

export const METERING_SETTINGS = [USAGE_METER_TOKEN] as const;

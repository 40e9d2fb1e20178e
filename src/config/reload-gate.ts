/**
 * The reload gate (spec §4.10 upgrade-all; platform-facts A6): a settings reload is "in progress"
 * for this isolate while the stored generation has moved past the one in force here — another
 * isolate wrote the overlay, applied a profile or asked for a reload, and this isolate has not
 * installed it yet (it would within SETTINGS_REFRESH_SECONDS). A door that must not act on settings
 * about to be replaced (the marketplace validates declarations against the address guard and the
 * secret-reference scope in force) answers 503 `{error, reloading: true}` and starts the reload, so
 * the retry it asks for runs on the new settings. One small D1 read; used only on admin doors.
 */
import { serverError } from "../platform/http/errors";
import { isolateSettings } from "./isolate-settings";
import { readGeneration } from "./overlay-store";

type WaitUntil = (p: Promise<unknown>) => void;

/** Throws the reloading 503 when this isolate's settings trail the stored generation. */
export async function refuseWhileReloading(env: { DB: D1Database }, refreshSeconds: number, waitUntil?: WaitUntil): Promise<void> {
  const inForce = isolateSettings.generation();
  const stored = await readGeneration(env.DB);
  if (inForce === null || stored === inForce) return;
  const reload = isolateSettings.reload(env, "refresh").catch((err) => {
    console.error("settings overlay: the reload the reload gate started failed", err instanceof Error ? err.message : "unknown error");
  });
  waitUntil?.(reload);
  throw serverError("settings_reloading", "a settings reload is in progress; retry shortly", {
    reason: "this isolate's settings trail the stored generation; the reload was started",
    extra: { reloading: true },
    retryAfterSeconds: refreshSeconds,
  });
}

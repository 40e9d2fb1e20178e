/**
 * Checking a state binding a hook or a schedule will pass to its fires' runs (spec §2.6), exactly
 * as a target config's binding is checked when it is saved (src/states/binding-save.ts): every
 * named state declared (404), every template_jq resolvable (404), every TemplatedText compiling
 * (400), the binding's templates attached on use. Without the states store: 501
 * `states-not-configured`. Called last, right before the write, since attaching on use writes.
 */
import type { Env } from "../platform/env";
import { notConfigured } from "../platform/http/errors";
import type { Settings } from "../platform/settings/settings";
import { checkBindingForSave } from "../states/binding-save";
import type { StateBinding } from "../shared/state-binding";

export async function checkRunBinding(env: Env, settings: Settings, binding: StateBinding | null | undefined, now: Date): Promise<void> {
  if (!binding) return;
  if (!settings.states.storeUrl) throw notConfigured("states", "a state_binding needs the states store (set STATES_STORE_URL)");
  await checkBindingForSave(env, binding, now.getTime());
}

/**
 * What a state binding needs of the key that stores it (docs/security.md, "Confused deputy"): it
 * runs later under another key (a route's, a hook's or a schedule's execution key), so it is
 * bounded by its writer's own states grants. Every attach reads its subject's record, so naming a
 * state needs `states:read`; `updates` write records and `templates` attach templates to the state,
 * so either needs `states:write`. Pure.
 */
import type { Principal } from "../access-control/principal";
import { type StoredRef, assertMayStore } from "../access-control/stored-by";
import type { StateAttach, StateBinding } from "../shared/state-binding";

function attachRefs(attach: StateAttach): StoredRef[] {
  const refs: StoredRef[] = [{ kind: "state", state: attach.state, action: "read" }];
  if (attach.updates.length > 0 || attach.templates.length > 0) refs.push({ kind: "state", state: attach.state, action: "write" });
  return refs;
}

/** Every grant the binding needs (none for no binding). */
export function bindingRefs(binding: StateBinding | null | undefined): StoredRef[] {
  return binding ? binding.states.flatMap(attachRefs) : [];
}

/** The store-time check of a binding at `field`: 403 naming the attach (`<field>.states[i]`) whose grant the caller lacks. */
export function assertMayBind(caller: Principal, binding: StateBinding | null | undefined, field = "state_binding"): void {
  if (!binding) return;
  for (const [i, attach] of binding.states.entries()) assertMayStore(caller, `${field}.states[${i}]`, attachRefs(attach));
}

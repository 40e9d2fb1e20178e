/**
 * A route's state binding merged with the dispatched preset's own (bridge-facts §7, step 1; pure):
 * door entries first. For a state named in both, the door's `subject_expr` wins, the door's
 * `scope_expr` wins when it has one, `templates` are unioned, and injections and updates are
 * concatenated door-first. A state only the preset names comes after the door's.
 */
import type { StateBinding } from "../shared/state-binding";

export function mergeBindings(door: StateBinding | null, preset: StateBinding | null): StateBinding | null {
  if (!door) return preset;
  if (!preset) return door;
  const states = door.states.map((a) => ({ ...a }));
  for (const p of preset.states) {
    const i = states.findIndex((a) => a.state === p.state);
    if (i < 0) {
      states.push(p);
      continue;
    }
    const d = states[i];
    states[i] = {
      ...d,
      scope_expr: d.scope_expr ?? p.scope_expr,
      templates: [...new Set([...d.templates, ...p.templates])],
      input_injections: [...d.input_injections, ...p.input_injections],
      updates: [...d.updates, ...p.updates],
    };
  }
  return { states };
}

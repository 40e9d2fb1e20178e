/**
 * Composes the Interaction object's parts over one kit: the verbs of its contract
 * (src/interactions/verbs.ts) and the owed work its one alarm does (src/interactions/alarm.ts).
 */
import { type InteractionDeps, interactionKit } from "./object-kit";
import { type InteractionAlarm, interactionAlarm } from "./alarm";
import { type InteractionVerbs, interactionVerbs } from "./verbs";

export interface InteractionParts {
  verbs: InteractionVerbs;
  alarm: InteractionAlarm;
}

export function composeInteraction(deps: InteractionDeps): InteractionParts {
  const kit = interactionKit(deps);
  return { verbs: interactionVerbs(kit), alarm: interactionAlarm(kit) };
}

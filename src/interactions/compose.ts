/**
 * Composes the Interaction object's parts over one kit: the verbs of its contract
 * (src/interactions/verbs.ts) and the owed work its one alarm does (src/interactions/owed-work.ts).
 */
import { type InteractionDeps, interactionKit } from "./object-kit";
import { type OwedWork, owedWork } from "./owed-work";
import { type InteractionVerbs, interactionVerbs } from "./verbs";

export interface InteractionParts {
  verbs: InteractionVerbs;
  alarm: OwedWork;
}

export function composeInteraction(deps: InteractionDeps): InteractionParts {
  const kit = interactionKit(deps);
  return { verbs: interactionVerbs(kit), alarm: owedWork(kit) };
}

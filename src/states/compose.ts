/**
 * Composes the StateStore object's parts over one kit (src/states/object-kit.ts): the declaration
 * verbs (src/states/store-declaration.ts) and the record verbs (src/states/store-records.ts).
 */
import { type StateDeclarationPart, stateDeclarationPart } from "./store-declaration";
import { stateStoreKit } from "./object-kit";
import { type StateRecordsPart, stateRecordsPart } from "./store-records";

export interface StateStoreParts {
  declaration: StateDeclarationPart;
  records: StateRecordsPart;
}

export function composeStateStore(storage: DurableObjectStorage): StateStoreParts {
  const kit = stateStoreKit(storage);
  return { declaration: stateDeclarationPart(kit), records: stateRecordsPart(kit) };
}

/**
 * Composes the PersonDirectory object's parts over one kit (src/persons/object-kit.ts): the
 * person verbs, the pairing verbs, and the alarm that sweeps expired codes and throttle rows.
 */
import { type DirectoryDeps, directoryKit } from "./object-kit";
import { type DirectoryPairing, directoryPairing } from "./directory-pairing";
import { type DirectoryPeople, directoryPeople } from "./directory-people";
import { sweepExpired } from "./person-store";

export interface DirectoryParts {
  people: DirectoryPeople;
  pairing: DirectoryPairing;
  /** The sweep: expired codes and throttle rows go; re-armed at the next expiry. */
  alarm: { run(): Promise<void> };
}

export function composeDirectory(deps: DirectoryDeps): DirectoryParts {
  const kit = directoryKit(deps);
  return {
    people: directoryPeople(kit),
    pairing: directoryPairing(kit),
    alarm: {
      async run() {
        const next = sweepExpired(kit.sql, kit.clock.now());
        if (next !== null) await kit.storage.setAlarm(next);
      },
    },
  };
}

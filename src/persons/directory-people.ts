/**
 * The PersonDirectory's person verbs: get-or-create on arrival, resolve an address, read, set the
 * locale, erase. Each runs in one implicit transaction, so an erase is atomic.
 */
import type { Arrival, PersonView } from "./rpc";
import type { DirectoryKit } from "./object-kit";
import { type DoorAddress, doorAddressKey } from "./pairing";
import { erasePerson, notePersonProfile, personOfAddress, personView, setPersonLocale } from "./person-store";
import type { VisitorProfile } from "../shared/visitor-profile";

export interface DirectoryPeople {
  ensure(arrival: Arrival, localeHint: string | null, nowMs: number, profile?: VisitorProfile | null): Promise<{ person: PersonView; created: boolean }>;
  resolve(address: DoorAddress): PersonView | null;
  get(personId: string): PersonView | null;
  setLocale(personId: string, locale: string | null): PersonView | null;
  erase(personId: string): Promise<PersonView | null>;
}

export function directoryPeople(kit: DirectoryKit): DirectoryPeople {
  const { sql } = kit;
  return {
    async ensure(arrival, localeHint, nowMs, profile) {
      const { personId, created } = kit.ensureSync(arrival, localeHint, nowMs);
      if (profile) notePersonProfile(sql, personId, profile, nowMs);
      if (created) await kit.indexPerson(personId, arrival.target);
      return { person: kit.written(personId), created };
    },
    resolve(address) {
      const personId = personOfAddress(sql, doorAddressKey(address));
      return personId ? personView(sql, personId) : null;
    },
    get: (personId) => personView(sql, personId),
    setLocale(personId, locale) {
      setPersonLocale(sql, personId, locale);
      return personView(sql, personId);
    },
    async erase(personId) {
      const before = personView(sql, personId);
      if (before) erasePerson(sql, personId);
      // Dropped regardless: an index entry left by an earlier, interrupted erase goes too.
      await kit.unindexPerson(personId);
      return before;
    },
  };
}

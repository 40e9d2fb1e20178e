/**
 * The PersonDirectory's pairing verbs (the pairing policy of src/persons/pairing.ts): mint a code,
 * redeem one (throttled per party: a sender, an api key, or a web visitor's network; a redeem merges the two persons), join two
 * addresses a door has proven are one party's (the same merge, without a code), unlink an address. Each
 * verb's writes run in one synchronous block, so a merge or an unlink is atomic.
 */
import type { Arrival, PersonView, RedeemResult, UnlinkResult } from "./rpc";
import type { Door } from "../shared/kinds";
import type { DirectoryKit } from "./object-kit";
import {
  CODE_TTL_SECONDS,
  type DoorAddress,
  REDEEM_BACKOFF_CAP_SECONDS,
  doorAddressKey,
  hashPairingCode,
  mergeSurvivor,
  mintPairingCode,
  redeemLockSeconds,
  successClearsThrottle,
} from "./pairing";
import { absorb, addressCount, attachAddress, clearThrottle, createPerson, personOfAddress, putCode, setThrottle, takeCode, throttleOf } from "./person-store";

export interface DirectoryPairing {
  mint(arrival: Arrival, nowMs: number): Promise<{ code: string; expires_at: number }>;
  redeem(arrival: Arrival, party: string, code: string, nowMs: number): Promise<RedeemResult>;
  join(ours: Arrival, theirs: Arrival, nowMs: number): Promise<PersonView>;
  unlink(arrival: Arrival, nowMs: number): Promise<UnlinkResult>;
}

export function directoryPairing(kit: DirectoryKit): DirectoryPairing {
  const { sql } = kit;

  /** Merges the persons of two arrivals (each created when new): the earlier person survives. */
  async function merge(theirArrival: Arrival, ourArrival: Arrival, nowMs: number): Promise<PersonView> {
    const theirs = kit.ensureSync(theirArrival, null, nowMs);
    const ours = kit.ensureSync(ourArrival, null, nowMs);
    if (theirs.personId === ours.personId) return kit.written(ours.personId);
    const { survivor, absorbed } = mergeSurvivor(kit.written(theirs.personId), kit.written(ours.personId));
    absorb(sql, survivor.person_id, absorbed.person_id);
    // The index follows the rows: the survivor is (or stays) listed, the absorbed id is gone.
    if (theirs.created || ours.created) await kit.indexPerson(survivor.person_id, ourArrival.target);
    await kit.unindexPerson(absorbed.person_id);
    return kit.written(survivor.person_id);
  }

  return {
    async mint(arrival, nowMs) {
      const code = mintPairingCode();
      const expiresAt = nowMs + CODE_TTL_SECONDS * 1000;
      // The hash is computed before any write, so the verb's writes stay in one synchronous block.
      const hash = await hashPairingCode(code);
      const ensured = kit.ensureSync(arrival, null, nowMs);
      if (ensured.created) await kit.indexPerson(ensured.personId, arrival.target);
      putCode(sql, hash, doorAddressKey(arrival.address), arrival.route_name, arrival.address, expiresAt);
      await kit.arm(expiresAt);
      return { code, expires_at: expiresAt };
    },

    async redeem(arrival, party, code, nowMs) {
      const hash = await hashPairingCode(code);
      const t = throttleOf(sql, party, nowMs);
      // A locked party is refused before the codes are touched, so it never burns a valid code.
      if (t.locked_until > nowMs) return { ok: false };
      const minted = takeCode(sql, hash, nowMs);
      const mine = doorAddressKey(arrival.address);
      if (!minted || doorAddressKey(minted.address) === mine) {
        const failures = t.failures + 1;
        const lock = redeemLockSeconds(failures);
        const until = lock > 0 ? nowMs + lock * 1000 : 0;
        setThrottle(sql, party, failures, until, nowMs + REDEEM_BACKOFF_CAP_SECONDS * 1000);
        await kit.arm(nowMs + REDEEM_BACKOFF_CAP_SECONDS * 1000);
        return { ok: false };
      }
      if (successClearsThrottle(party)) clearThrottle(sql, party);
      return { ok: true, person: await merge({ target: arrival.target, address: minted.address, route_name: minted.route_name }, arrival, nowMs) };
    },

    async join(ours, theirs, nowMs) {
      return merge(theirs, ours, nowMs);
    },

    async unlink(arrival, nowMs) {
      const key = doorAddressKey(arrival.address);
      const current = personOfAddress(sql, key);
      if (!current || addressCount(sql, current) < 2) return { ok: false, reason: "not_linked" };
      const routes = kit.written(current).addresses.find((a) => doorAddressKey(toDoorAddress(a)) === key)?.routes ?? [arrival.route_name];
      // The detached address starts a fresh person of its own, which is never greeted (not a first contact).
      const fresh = createPerson(sql, nowMs, null);
      attachAddress(sql, fresh, arrival.address, routes, nowMs);
      await kit.indexPerson(fresh, arrival.target);
      return { ok: true, person: kit.written(fresh) };
    },
  };
}

/** An address row back as the door address it was keyed by. */
function toDoorAddress(a: { door: Door; channel: string | null; our_identity: string | null; address: string }): DoorAddress {
  return a.door === "channel"
    ? { door: "channel", channel: a.channel ?? "", our_identity: a.our_identity ?? "", address: a.address }
    : { door: "api", address: a.address };
}

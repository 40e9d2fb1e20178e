/**
 * The PersonDirectory objects' RPC contract (spec §2.3; decisions §12). One object per
 * multichannel target (`{target_kind}:{target_name}`) holds that target's persons, their address
 * rows, the open pairing codes (hashed) and the redeem throttle. A target's inbounds resolve their
 * person with one call to it, never a D1 round trip.
 */
import type { Env } from "../platform/env";
import type { DoorAddress } from "./pairing";
import type { Door, TargetKind } from "../shared/kinds";
import type { VisitorProfile } from "../shared/visitor-profile";

/** One address row of a person, as the person read door shows it. */
export interface PersonAddress {
  door: Door;
  /** Routes this address came in on (unique, at least one). */
  routes: string[];
  channel: string | null;
  our_identity: string | null;
  address: string;
  linked_at: string;
}

/** What a person told about themselves (docs/persons.md, "Profile"), and when it last changed. */
export interface PersonProfile extends VisitorProfile {
  updated_at: string;
}

/** A person as the read door shows it. */
export interface PersonView {
  person_id: string;
  target_kind: TargetKind;
  target_name: string;
  created_at: string;
  addresses: PersonAddress[];
  locale: string | null;
  /** A web visitor's pre-chat answers and the site's vouched claims, folded across the person's conversations; null until one came. */
  profile: PersonProfile | null;
}

/** Where an inbound came from: its target, door address and route. */
export interface Arrival {
  target: { kind: TargetKind; name: string };
  address: DoorAddress;
  route_name: string;
}

export type RedeemResult = { ok: true; person: PersonView } | { ok: false };
export type UnlinkResult = { ok: true; person: PersonView } | { ok: false; reason: "not_linked" };

/** The verbs of one target's person directory. */
export interface PersonDirectoryRpc {
  /**
   * Get-or-create the person of `arrival`'s address (first contact creates a single-address
   * person, seeded with `localeHint`); an existing address gains the route. `created` is the
   * greeting trigger. `profile` (what the inbound's sender told about themselves) is folded into
   * the person's.
   */
  ensure(arrival: Arrival, localeHint: string | null, nowMs: number, profile?: VisitorProfile | null): Promise<{ person: PersonView; created: boolean }>;
  /** The person of an address, read-only (the event door); null when the address has none. */
  resolve(address: DoorAddress): Promise<PersonView | null>;
  /** Mints a code for the conversation at `arrival` (replacing its open one); ensures its person. */
  mint(arrival: Arrival, nowMs: number): Promise<{ code: string; expires_at: number }>;
  /**
   * Redeems `code` from `arrival` for the accountable `party`: merges the minting conversation's
   * person with this one's. Every invalid case answers `{ok: false}`; a locked party never touches
   * the codes.
   */
  redeem(arrival: Arrival, party: string, code: string, nowMs: number): Promise<RedeemResult>;
  /**
   * Joins the persons of two addresses that a door has proven are one party's (the web chat's
   * consent merge: a visitor's anonymous session and their signed-in one, each presented by its own
   * credential): the merge a redeem makes, without a code. Either address gets a person first when
   * it has none. Answers the joined person.
   */
  join(ours: Arrival, theirs: Arrival, nowMs: number): Promise<PersonView>;
  /** Detaches `arrival`'s address into a fresh single-address person (not greeted again). */
  unlink(arrival: Arrival, nowMs: number): Promise<UnlinkResult>;
  /** One person by id. */
  get(personId: string): Promise<PersonView | null>;
  /** Sets or clears a person's locale (already canonical); null when the person is unknown. */
  setLocale(personId: string, locale: string | null): Promise<PersonView | null>;
  /** Erases a person with all its address rows and open codes, atomically; what it held, or null. */
  erase(personId: string): Promise<PersonView | null>;
}

/** The object name of a target's directory. */
export function personDirectoryName(kind: TargetKind, name: string): string {
  return `${kind}:${name}`;
}

/** The person directory of target (kind, name). */
export function personDirectoryStub(env: Env, kind: TargetKind, name: string): PersonDirectoryRpc {
  return env.PERSON_DIRECTORIES.get(env.PERSON_DIRECTORIES.idFromName(personDirectoryName(kind, name)));
}

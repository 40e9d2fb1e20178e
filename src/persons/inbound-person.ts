/**
 * Resolving the person of an inbound on a multichannel target (decisions §12), at the
 * door, after admission's rate token (so a shed or refused inbound never creates one): one call to
 * the target's PersonDirectory, which creates a single-address person at first contact. A person
 * with two or more addresses keys the message to its person thread; a turn already queued under
 * the old key finishes there. A non-multichannel route never gets here: its door read found no
 * config, or one with `multichannel: false`.
 */
import type { TurnInbound } from "../conversations/model/payload";
import type { Route } from "../conversations/model/route";
import { personThreadId } from "../shared/thread-id";
import { type PersonDirectoryRpc, type PersonView, personDirectoryStub } from "./rpc";
import type { Env } from "../platform/env";
import { type DoorAddress, canonicalLocale } from "./pairing";
import type { TargetConversationConfig } from "./target-configs";
import type { VisitorProfile } from "../shared/visitor-profile";

/** An inbound's person, as its door resolved it. */
export interface InboundPerson {
  person: PersonView;
  /** First contact: the person was created for this inbound (the greeting trigger). */
  created: boolean;
  directory: PersonDirectoryRpc;
}

/** Ensures the person of `address` when `config` makes the route's target multichannel; null otherwise. */
export async function ensureInboundPerson(
  env: Env,
  route: Pick<Route, "route_name" | "target_kind" | "target_name">,
  config: TargetConversationConfig | null,
  address: DoorAddress,
  nowMs: number,
  localeHint: string | null = null,
  /** What the sender told about themselves (a web visitor's profile), folded into the person's. */
  profile: VisitorProfile | null = null,
): Promise<InboundPerson | null> {
  if (!config?.multichannel) return null;
  const directory = personDirectoryStub(env, route.target_kind, route.target_name);
  // A provider's language hint seeds a new person's locale, if it is a BCP 47 tag; never a later turn's.
  const locale = localeHint === null ? null : canonicalLocale(localeHint);
  const { person, created } = await directory.ensure(
    { target: { kind: route.target_kind, name: route.target_name }, address, route_name: route.route_name },
    locale,
    nowMs,
    profile,
  );
  return { person, created, directory };
}

/** The thread an inbound keys to: its person's thread once the person has two or more addresses. */
export function threadFor(routeThreadId: string, p: InboundPerson | null): string {
  return p && p.person.addresses.length >= 2 ? personThreadId(p.person.person_id) : routeThreadId;
}

/**
 * What the turn carries of the person: `person_id` and `person_addresses` for the payload (spec
 * §4.2), and on a first contact the target's greeting template (decisions §12: sent once, when the
 * person is created).
 */
export function turnPerson(p: InboundPerson | null, config: TargetConversationConfig | null): Pick<TurnInbound, "person" | "greeting"> {
  if (!p) return {};
  return {
    person: { person_id: p.person.person_id, person_addresses: p.person.addresses.map((a) => ({ ...a })), locale: p.person.locale },
    greeting: p.created ? (config?.greeting_template ?? null) : null,
  };
}

/** An admission refused after the person was created (a full queue): the first contact did not happen. */
export async function undoFirstContact(p: InboundPerson | null): Promise<void> {
  if (p?.created) await p.directory.erase(p.person.person_id);
}

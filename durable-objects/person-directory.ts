/**
 * PersonDirectory: one per multichannel target (spec §2.3; decisions §12). A shell over its parts
 * (src/persons/compose.ts): the person verbs and the pairing verbs over
 * src/persons/person-store.ts and the pairing policy of src/persons/pairing.ts; each verb runs in
 * one implicit transaction, so a merge, an unlink or an erase is atomic. One alarm sweeps expired
 * codes and throttle rows. The contract is src/persons/rpc.ts.
 */
import { DurableObject } from "cloudflare:workers";
import type { Arrival, PersonDirectoryRpc, PersonView, RedeemResult, UnlinkResult } from "../src/persons/rpc";
import type { Env } from "../src/platform/env";
import { startObject } from "../src/platform/persistence/object-start";
import { type DirectoryParts, composeDirectory } from "../src/persons/compose";
import type { DoorAddress } from "../src/persons/pairing";
import { createPersonTables } from "../src/persons/person-store";
import { systemClock } from "../src/platform/clock";
import type { VisitorProfile } from "../src/shared/visitor-profile";

export class PersonDirectory extends DurableObject<Env> implements PersonDirectoryRpc {
  private readonly parts: DirectoryParts;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    startObject(ctx, { migrate: (storage) => createPersonTables(storage.sql) });
    this.parts = composeDirectory({ storage: ctx.storage, env: () => this.env, clock: systemClock });
  }

  async ensure(arrival: Arrival, localeHint: string | null, nowMs: number, profile?: VisitorProfile | null): Promise<{ person: PersonView; created: boolean }> {
    return this.parts.people.ensure(arrival, localeHint, nowMs, profile);
  }

  async resolve(address: DoorAddress): Promise<PersonView | null> {
    return this.parts.people.resolve(address);
  }

  async mint(arrival: Arrival, nowMs: number): Promise<{ code: string; expires_at: number }> {
    return this.parts.pairing.mint(arrival, nowMs);
  }

  async redeem(arrival: Arrival, party: string, code: string, nowMs: number): Promise<RedeemResult> {
    return this.parts.pairing.redeem(arrival, party, code, nowMs);
  }

  async join(ours: Arrival, theirs: Arrival, nowMs: number): Promise<PersonView> {
    return this.parts.pairing.join(ours, theirs, nowMs);
  }

  async unlink(arrival: Arrival, nowMs: number): Promise<UnlinkResult> {
    return this.parts.pairing.unlink(arrival, nowMs);
  }

  async get(personId: string): Promise<PersonView | null> {
    return this.parts.people.get(personId);
  }

  async setLocale(personId: string, locale: string | null): Promise<PersonView | null> {
    return this.parts.people.setLocale(personId, locale);
  }

  async erase(personId: string): Promise<PersonView | null> {
    return this.parts.people.erase(personId);
  }

  /** The one alarm: the sweep of expired codes and throttle rows. */
  override async alarm(): Promise<void> {
    await this.parts.alarm.run();
  }
}

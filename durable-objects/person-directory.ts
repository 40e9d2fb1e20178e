/**
 * PersonDirectory: one per multichannel target (spec §2.3; decisions §12). A thin shell
 * over src/persons/person-store.ts and the pairing policy of src/persons/pairing.ts; each verb runs
 * in one implicit transaction, so a merge, an unlink or an erase is atomic. One alarm sweeps
 * expired codes and throttle rows. The contract is src/persons/rpc.ts.
 */
import { DurableObject } from "cloudflare:workers";
import type { Arrival, PersonDirectoryRpc, PersonView, RedeemResult, UnlinkResult } from "../src/persons/rpc";
import { ledgerShard, personKey } from "../src/shards/rpc";
import type { Env } from "../src/platform/env";
import type { Door } from "../src/conversations/model/kinds";
import { personDirectoryName } from "../src/persons/rpc";
import {
  CODE_TTL_SECONDS,
  type DoorAddress,
  REDEEM_BACKOFF_CAP_SECONDS,
  doorAddressKey,
  hashPairingCode,
  mergeSurvivor,
  mintPairingCode,
  redeemLockSeconds,
} from "../src/persons/pairing";
import {
  absorb,
  addRoute,
  addressCount,
  adoptTarget,
  attachAddress,
  clearThrottle,
  createPerson,
  createPersonTables,
  erasePerson,
  personOfAddress,
  personView,
  putCode,
  setThrottle,
  sweepExpired,
  takeCode,
  throttleOf,
} from "../src/persons/person-store";

export class PersonDirectory extends DurableObject<Env> implements PersonDirectoryRpc {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    createPersonTables(ctx.storage.sql);
  }

  async ensure(arrival: Arrival, localeHint: string | null, nowMs: number): Promise<{ person: PersonView; created: boolean }> {
    const { personId, created } = this.ensureSync(arrival, localeHint, nowMs);
    if (created) await this.indexPerson(personId, arrival.target);
    return { person: personView(this.sql, personId)!, created };
  }

  async resolve(address: DoorAddress): Promise<PersonView | null> {
    const personId = personOfAddress(this.sql, doorAddressKey(address));
    return personId ? personView(this.sql, personId) : null;
  }

  async mint(arrival: Arrival, nowMs: number): Promise<{ code: string; expires_at: number }> {
    const code = mintPairingCode();
    const expiresAt = nowMs + CODE_TTL_SECONDS * 1000;
    // The hash is computed before any write, so the verb's writes stay in one synchronous block.
    const hash = await hashPairingCode(code);
    const ensured = this.ensureSync(arrival, null, nowMs);
    if (ensured.created) await this.indexPerson(ensured.personId, arrival.target);
    putCode(this.sql, hash, doorAddressKey(arrival.address), arrival.route_name, arrival.address, expiresAt);
    await this.arm(expiresAt);
    return { code, expires_at: expiresAt };
  }

  async redeem(arrival: Arrival, party: string, code: string, nowMs: number): Promise<RedeemResult> {
    const hash = await hashPairingCode(code);
    const sql = this.sql;
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
      await this.arm(nowMs + REDEEM_BACKOFF_CAP_SECONDS * 1000);
      return { ok: false };
    }
    clearThrottle(sql, party);
    const theirs = this.ensureSync({ target: arrival.target, address: minted.address, route_name: minted.route_name }, null, nowMs);
    const ours = this.ensureSync(arrival, null, nowMs);
    if (theirs.personId === ours.personId) return { ok: true, person: personView(sql, ours.personId)! };
    const { survivor, absorbed } = mergeSurvivor(personView(sql, theirs.personId)!, personView(sql, ours.personId)!);
    absorb(sql, survivor.person_id, absorbed.person_id);
    // The index follows the rows: the survivor is (or stays) listed, the absorbed id is gone.
    if (theirs.created || ours.created) await this.indexPerson(survivor.person_id, arrival.target);
    await this.unindexPerson(absorbed.person_id);
    return { ok: true, person: personView(sql, survivor.person_id)! };
  }

  async unlink(arrival: Arrival, nowMs: number): Promise<UnlinkResult> {
    const sql = this.sql;
    const key = doorAddressKey(arrival.address);
    const current = personOfAddress(sql, key);
    if (!current || addressCount(sql, current) < 2) return { ok: false, reason: "not_linked" };
    const routes = personView(sql, current)!.addresses.find((a) => doorAddressKey(toDoorAddress(a)) === key)?.routes ?? [arrival.route_name];
    // The detached address starts a fresh person of its own, which is never greeted (not a first contact).
    const fresh = createPerson(sql, nowMs, null);
    attachAddress(sql, fresh, arrival.address, routes, nowMs);
    await this.indexPerson(fresh, arrival.target);
    return { ok: true, person: personView(sql, fresh)! };
  }

  async get(personId: string): Promise<PersonView | null> {
    return personView(this.sql, personId);
  }

  async setLocale(personId: string, locale: string | null): Promise<PersonView | null> {
    this.sql.exec("UPDATE persons SET locale = ? WHERE person_id = ?", locale, personId);
    return personView(this.sql, personId);
  }

  async erase(personId: string): Promise<PersonView | null> {
    const before = personView(this.sql, personId);
    if (before) erasePerson(this.sql, personId);
    // Dropped regardless: an index entry left by an earlier, interrupted erase goes too.
    await this.unindexPerson(personId);
    return before;
  }

  override async alarm(): Promise<void> {
    const next = sweepExpired(this.sql, Date.now());
    if (next !== null) await this.ctx.storage.setAlarm(next);
  }

  private get sql(): SqlStorage {
    return this.ctx.storage.sql;
  }

  /** Get-or-create without awaiting anything, so the caller's writes stay in one transaction. */
  private ensureSync(arrival: Arrival, localeHint: string | null, nowMs: number): { personId: string; created: boolean } {
    const sql = this.sql;
    adoptTarget(sql, arrival.target);
    const key = doorAddressKey(arrival.address);
    const existing = personOfAddress(sql, key);
    if (existing) {
      addRoute(sql, key, arrival.route_name);
      return { personId: existing, created: false };
    }
    const personId = createPerson(sql, nowMs, localeHint);
    attachAddress(sql, personId, arrival.address, [arrival.route_name], nowMs);
    return { personId, created: true };
  }

  /** Lists person `personId` in the ledger, so the person doors find this directory by id alone. */
  private async indexPerson(personId: string, target: Arrival["target"]): Promise<void> {
    const k = personKey(personId);
    // No thread_id: forgetting the person thread drops a thread's ledger entries, and must not drop this one.
    await ledgerShard(this.env, k).put(k, { message_id: personId, thread_id: "", route_name: personDirectoryName(target.kind, target.name) }, null);
  }

  private async unindexPerson(personId: string): Promise<void> {
    const k = personKey(personId);
    await ledgerShard(this.env, k).drop([k]);
  }

  /** Arms the sweep no later than `at`. */
  private async arm(at: number): Promise<void> {
    const current = await this.ctx.storage.getAlarm();
    if (current === null || current > at) await this.ctx.storage.setAlarm(at);
  }
}

/** An address row back as the door address it was keyed by. */
function toDoorAddress(a: { door: Door; channel: string | null; our_identity: string | null; address: string }): DoorAddress {
  return a.door === "channel"
    ? { door: "channel", channel: a.channel ?? "", our_identity: a.our_identity ?? "", address: a.address }
    : { door: "api", address: a.address };
}

/**
 * NotificationFeed: one object per notification feed (platform-facts A1 "Internal
 * sink"): `shared` and `identity:<user_id>`. A thin shell over the SQLite ring of
 * src/notifications/feed-ring.ts; the contract is src/notifications/rpc.ts.
 *
 * An identity feed has an idle TTL: each push moves its expiry (and the object's one alarm) to
 * now + TTL, and the alarm deletes the object's whole storage once the feed has been idle that
 * long, so an identity nobody writes to any more costs nothing. The shared feed never expires.
 */
import { DurableObject } from "cloudflare:workers";
import type { FeedPush, NotificationFeedRpc } from "../src/notifications/rpc";
import type { Env } from "../src/platform/env";
import { type Clock, systemClock } from "../src/platform/clock";
import { startObject } from "../src/platform/persistence/object-start";
import {
  clearEntries,
  createRing,
  eraseRecipients,
  expiresAt,
  insertTrimmed,
  newestAsJsonArray,
  ringExists,
  upgradeRing,
  setExpiresAt,
} from "../src/notifications/feed-ring";
import { claimSendKey, pruneSendKeys, settleSendKey, upgradeSendKeys } from "../src/notifications/send-keys";
import type { KeyVerdict } from "../src/platform/http/idempotency";

export class NotificationFeed extends DurableObject<Env> implements NotificationFeedRpc {
  /** The clock the object reads time from. */
  private readonly clock: Clock = systemClock;

  /** The ring's tables exist (created by the first push; gone after an idle delete). */
  private ready = false;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    // The tables are created by the first write, so a read never leaves a stored object behind.
    startObject(ctx, {
      migrate: (storage) => {
        this.ready = upgradeRing(storage.sql);
        upgradeSendKeys(storage.sql);
      },
    });
  }

  private get sql(): SqlStorage {
    return this.ctx.storage.sql;
  }

  private expired(now: number): boolean {
    const at = expiresAt(this.sql);
    return at !== null && now >= at;
  }

  async push(notification: string, opts: FeedPush): Promise<void> {
    if (!this.ready) {
      createRing(this.sql);
      this.ready = true;
    }
    const now = this.clock.now();
    // Idle past its TTL but not yet deleted (the alarm is late): the old entries are gone already.
    if (this.expired(now)) clearEntries(this.sql);
    insertTrimmed(this.sql, notification, opts.cap);
    if (opts.idleTtlMs !== null) {
      const at = now + opts.idleTtlMs;
      setExpiresAt(this.sql, at);
      await this.ctx.storage.setAlarm(at);
    }
  }

  async list(limit: number, since?: string): Promise<string> {
    if (!this.ready && !ringExists(this.sql)) return "[]";
    this.ready = true;
    if (this.expired(this.clock.now())) return "[]";
    return newestAsJsonArray(this.sql, limit, since);
  }

  async claimSendKey(key: string, fingerprint: string, expiresAtMs: number): Promise<KeyVerdict<string>> {
    const verdict = claimSendKey(this.sql, key, fingerprint, this.clock.now(), expiresAtMs);
    // The alarm deletes the key when its window ends; an earlier alarm re-arms itself at the next one.
    if (verdict.kind === "new") {
      const armed = await this.ctx.storage.getAlarm();
      if (armed === null || armed > expiresAtMs) await this.ctx.storage.setAlarm(expiresAtMs);
    }
    return verdict;
  }

  async settleSendKey(key: string, fingerprint: string, answer: string | null): Promise<void> {
    settleSendKey(this.sql, key, fingerprint, answer);
  }

  async eraseRecipients(recipients: string[]): Promise<string[]> {
    if (!this.ready && !ringExists(this.sql)) return [];
    this.ready = true;
    return eraseRecipients(this.sql, recipients);
  }

  /**
   * Deletes an identity feed idle past its TTL; a push since the alarm was set moved it later. On
   * a send keys object, deletes the keys whose window ended.
   */
  override async alarm(): Promise<void> {
    const nextKey = pruneSendKeys(this.sql, this.clock.now());
    if (nextKey !== null) await this.ctx.storage.setAlarm(nextKey);
    if (!this.ready && !ringExists(this.sql)) return;
    const at = expiresAt(this.sql);
    if (at === null) return;
    if (this.clock.now() < at) return void (await this.ctx.storage.setAlarm(at));
    await this.ctx.storage.deleteAll();
    this.ready = false;
  }
}

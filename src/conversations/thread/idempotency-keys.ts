/**
 * The `Idempotency-Key`s of the doors that hand this thread work (the api message door, the event
 * door, operator send; src/platform/http/idempotency.ts): each key, within its scope (the door, the
 * route and the calling key's thread principal), names the record its first request created, with
 * that request's fingerprint, until its window ends (the inbound dedupe window, set by the door).
 *
 * The row is written in the same synchronous stretch as the record it names, so a record and its
 * key land together or not at all, and a retry that reaches the object after a restart finds both.
 * A key never outlives its record: the prune pass and forget drop it with the record (store.ts),
 * so a record's retention bounds its key's window too.
 *
 * Statements: none on a request without a key; with one, a read of the key's row (its primary
 * key) and, for a new key, its insert.
 */
import type { AnswerRecord } from "../model/record";
import type { AcceptKey, AcceptResult } from "../model/thread-rpc";
import { type ObjectSchema, keyValueVersionRow, objectSql } from "../../platform/persistence/object-sql";

/** The keys' table, on its own version line (meta `idempotency_schema_version`) beside the records'. */
export const THREAD_KEYS_SCHEMA: ObjectSchema = {
  name: "thread-idempotency",
  versionRow: keyValueVersionRow("meta", "idempotency_schema_version"),
  steps: [
    [
      `CREATE TABLE IF NOT EXISTS idempotency_keys (
      scope       TEXT NOT NULL,
      key         TEXT NOT NULL,
      fingerprint TEXT NOT NULL,
      message_id  TEXT NOT NULL,
      thread_id   TEXT NOT NULL,
      answered    INTEGER NOT NULL DEFAULT 0,
      expires_at  INTEGER NOT NULL,
      PRIMARY KEY (scope, key)
    ) WITHOUT ROWID`,
    ],
  ],
};

const STORE = "thread (idempotency keys)";

type KeyRow = { fingerprint: string; message_id: string; thread_id: string; answered: number };

/** The keys of one thread object, with the ones whose first request is still being answered here. */
export class IdempotencyKeys {
  /** `scope\nkey` of requests whose `accept` has not returned yet in this instance. */
  private readonly inFlight = new Set<string>();

  /** `recordOf` reads one stored record (store.ts `getStored`), for a retry of a request answered inline. */
  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly recordOf: (messageId: string) => AnswerRecord | null,
  ) {}

  /**
   * What a request carrying `k` gets before anything is written: null when the key is new here (or
   * its window ended), else the first request's answer, or a refusal (another fingerprint; the
   * first request still being answered).
   */
  check(k: AcceptKey, nowMs: number): AcceptResult | null {
    const row = objectSql(this.storage.sql, STORE)
      .one<KeyRow>`SELECT fingerprint, message_id, thread_id, answered FROM idempotency_keys WHERE scope = ${k.scope} AND key = ${k.key} AND expires_at > ${nowMs}`;
    if (!row) return null;
    if (row.fingerprint !== k.fingerprint) return { kind: "key_reused" };
    if (this.inFlight.has(slot(k))) return { kind: "key_in_flight" };
    if (row.answered === 1) {
      const record = this.recordOf(row.message_id);
      if (record) return { kind: "answered", record, replayed: true };
    }
    return { kind: "accepted", message_id: row.message_id, thread_id: row.thread_id, duplicate: true, replayed: true };
  }

  /** Writes `k` for the record just inserted; call in the insert's synchronous stretch. Until `settle`, a retry is 409. */
  remember(k: AcceptKey, messageId: string, threadId: string): void {
    objectSql(this.storage.sql, STORE).run`INSERT OR REPLACE INTO idempotency_keys (scope, key, fingerprint, message_id, thread_id, answered, expires_at)
      VALUES (${k.scope}, ${k.key}, ${k.fingerprint}, ${messageId}, ${threadId}, 0, ${k.expiresAtMs})`;
    this.inFlight.add(slot(k));
  }

  /** The first request was answered: inline (`answered`; a retry answers the record inline too) or with 202. */
  settle(k: AcceptKey, answered: boolean): void {
    this.inFlight.delete(slot(k));
    if (answered) objectSql(this.storage.sql, STORE).run`UPDATE idempotency_keys SET answered = 1 WHERE scope = ${k.scope} AND key = ${k.key}`;
  }
}

const slot = (k: AcceptKey) => `${k.scope}\n${k.key}`;

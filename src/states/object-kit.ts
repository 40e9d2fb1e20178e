/**
 * What the StateStore object's parts share: its SQLite and synchronous transactions, the stored
 * declaration and attachments, and the checks every subject verb starts with. The parts
 * (src/states/store-declaration.ts, src/states/store-records.ts) are composed over one kit by
 * src/states/compose.ts.
 */
import type { StateRecord, StateRefusal, Subject } from "./rpc";
import type { JsonObject } from "../platform/http/bounded-json";
import { type StoredAttachment, StoredDeclaration, parseAttachments } from "./effective";
import { STATE_STORE, foldedInto, getMeta, subjectOfKey } from "./record-store";
import { objectSql } from "../platform/persistence/object-sql";

export interface StateStoreKit {
  sql: SqlStorage;
  /** Runs `fn` as one transaction (a Durable Object's synchronous block commits as one). */
  transaction<T>(fn: () => T): T;
  declaration(): StoredDeclaration | null;
  attachments(): StoredAttachment[];
  recordCount(): number;
  /** The declaration, and the subject's kind checked against it. */
  declaredFor(subject: Subject): { decl: StoredDeclaration } | StateRefusal;
  recordOf(decl: StoredDeclaration, subject: Subject, canonical: string, row: { data: JsonObject; seq: number }): StateRecord;
}

export const refuse = (status: StateRefusal["status"], error: string): StateRefusal => ({ ok: false, status, error });

export const DAY_MS = 86_400_000;

export function stateStoreKit(storage: DurableObjectStorage): StateStoreKit {
  const sql = storage.sql;
  const declaration = (): StoredDeclaration | null => {
    const raw = getMeta(sql, "declaration");
    return raw ? StoredDeclaration.parse(JSON.parse(raw)) : null;
  };
  return {
    sql,
    transaction: (fn) => storage.transactionSync(fn),
    declaration,
    attachments: () => parseAttachments(getMeta(sql, "attachments")),
    recordCount: () => Number(objectSql(sql, STATE_STORE).one<{ n: number }>`SELECT COUNT(*) AS n FROM records`?.n ?? 0),
    declaredFor(subject) {
      const decl = declaration();
      if (!decl) return refuse(404, "state not found");
      if (!decl.subject_kinds.includes(subject.kind)) return refuse(400, "the subject's kind is not one of the state's subject_kinds");
      return { decl };
    },
    recordOf(decl, subject, canonical, row) {
      return {
        state: decl.name,
        subject,
        data: row.data,
        seq: row.seq,
        canonical_subject: subjectOfKey(canonical),
        folded_from: foldedInto(sql, canonical).map(subjectOfKey),
      };
    },
  };
}

/**
 * The StateStore object's record verbs: read, write (whole or by ops), erase, the audit trail,
 * folds, search, the subject listing, the prune and the erasure by subject key. A write, its audit
 * row and its op id land in one transaction; writes to a subject are serialized by the object.
 */
import type { FoldResult, Page, RecordChange, StateRecord, StateRefusal, Subject, WriteEntry, WriteOrigin, WriteResult } from "./rpc";
import { JsonObject } from "../platform/http/bounded-json";
import { objectSql } from "../platform/persistence/object-sql";
import { parseStored } from "../platform/persistence/stored-json";
import { contains } from "./containment";
import { type StoredAttachment, type StoredDeclaration, effectiveOf } from "./effective";
import { applyOps } from "./ops";
import { checkRecordWrite, checkWholeWriteRegimes } from "./record-rules";
import {
  addAlias,
  appendWrite,
  canonicalOf,
  deleteRecord,
  dropAliasesOf,
  foldedInto,
  liveRecord,
  opIdSeen,
  pruneExpired,
  putRecord,
  rememberOpId,
  STATE_STORE,
  subjectKey,
  subjectOfKey,
  writesOf,
} from "./record-store";
import { DAY_MS, type StateStoreKit, refuse } from "./object-kit";

/** Records one search request reads at most before it answers with a cursor (bounds the object's time per call). */
const SEARCH_SCAN_BUDGET = 5000;

export type BindingSpec = Subject | { key: string; target_kind: Subject["target_kind"]; target_name: string };

export interface StateRecordsPart {
  read(subject: Subject, nowMs: number): StateRecord | null | StateRefusal;
  bindingRead(spec: BindingSpec, nowMs: number): { ok: true; subject: Subject; record: StateRecord | null; attachments: StoredAttachment[] } | StateRefusal;
  write(subject: Subject, change: RecordChange, origin: WriteOrigin, nowMs: number): WriteResult;
  erase(subject: Subject): { erased: boolean } | StateRefusal;
  writes(subject: Subject, limit: number, cursor: string | null): Page<WriteEntry> | StateRefusal;
  fold(from: Subject, into: Subject, mode: "switch" | "merge", origin: WriteOrigin, nowMs: number): ({ ok: true } & FoldResult) | StateRefusal;
  search(filters: JsonObject, limit: number, cursor: string | null, nowMs: number): Page<{ subject: Subject; updated_at: number }>;
  subjects(kind: string | null, limit: number, cursor: string | null, nowMs: number): Page<Subject>;
  prune(nowMs: number): { expired: number };
  eraseSubjectKey(kind: string, key: string): { removed: number };
}

interface FoldPlan {
  from: Subject;
  into: Subject;
  fromKey: string;
  cFrom: string;
  cInto: string;
  fromRow: ReturnType<typeof liveRecord>;
  intoRow: ReturnType<typeof liveRecord>;
}

export function stateRecordsPart(kit: StateStoreKit): StateRecordsPart {
  const { sql } = kit;

  function read(subject: Subject, nowMs: number): StateRecord | null | StateRefusal {
    const d = kit.declaredFor(subject);
    if ("ok" in d) return d;
    const canonical = canonicalOf(sql, subjectKey(subject));
    const row = liveRecord(sql, canonical, nowMs);
    return row ? kit.recordOf(d.decl, subject, canonical, row) : null;
  }

  function foldSync(
    decl: StoredDeclaration,
    f: FoldPlan,
    mode: "switch" | "merge",
    origin: WriteOrigin,
    nowMs: number,
  ): ({ ok: true } & FoldResult) | StateRefusal {
    const { from, into, fromKey, cFrom, cInto, fromRow, intoRow } = f;
    if (mode === "merge" && fromRow) {
      // The subject folded into keeps what it has; it gains the other's fields it lacks.
      const merged: JsonObject = { ...fromRow.data, ...(intoRow?.data ?? {}) };
      const effective = effectiveOf(decl, kit.attachments());
      if (!effective.ok) return refuse(409, effective.error);
      const invalid = checkRecordWrite(effective.schema, merged);
      if (invalid) return refuse(400, invalid);
      const seq = (intoRow?.seq ?? 0) + 1;
      putRecord(sql, cInto, merged, seq, nowMs, decl.retention_days === null ? null : decl.retention_days * DAY_MS);
      appendWrite(
        sql,
        cInto,
        seq,
        nowMs,
        { ...origin, meta: { fold: "merge" } },
        Object.keys(fromRow.data).map((k) => [k]),
      );
    }
    const members = foldedInto(sql, cFrom).length;
    if (fromRow) deleteRecord(sql, cFrom);
    const flattened = addAlias(sql, cFrom, cInto);
    // `from` itself may have been an alias of cFrom; it now follows cFrom to cInto.
    if (fromKey !== cFrom) addAlias(sql, fromKey, cInto);
    return { ok: true, mode, from, into, already: false, flattened, merged_members: mode === "merge" ? members + 1 : 0 };
  }

  function eraseSubjectKeySync(kind: string, key: string): { removed: number } {
    const rows = objectSql(sql, STATE_STORE)<{ skey: string }>`SELECT skey FROM records WHERE kind = ${kind} AND key = ${key}`;
    let removed = 0;
    for (const { skey } of rows) {
      if (deleteRecord(sql, skey)) removed++;
      dropAliasesOf(sql, skey);
    }
    // A subject folded elsewhere leaves only an alias; erasure takes that too.
    objectSql(sql, STATE_STORE).run`DELETE FROM aliases WHERE kind = ${kind} AND key = ${key}`;
    return { removed };
  }

  return {
    read,

    bindingRead(spec, nowMs) {
      const decl = kit.declaration();
      if (!decl) return refuse(404, "state not found");
      const subject: Subject =
        "kind" in spec ? spec : { target_kind: spec.target_kind, target_name: spec.target_name, kind: decl.default_subject_kind, key: spec.key };
      const record = read(subject, nowMs);
      if (record !== null && "ok" in record) return record;
      return { ok: true as const, subject, record, attachments: kit.attachments() };
    },

    write(subject, change, origin, nowMs) {
      const d = kit.declaredFor(subject);
      if ("ok" in d) return d;
      const { decl } = d;
      const effective = effectiveOf(decl, kit.attachments());
      if (!effective.ok) return refuse(409, effective.error);
      const canonical = canonicalOf(sql, subjectKey(subject));
      const current = liveRecord(sql, canonical, nowMs);
      const before: JsonObject = current?.data ?? {};
      const unchanged = (): WriteResult => ({
        ok: true,
        applied: false,
        record: kit.recordOf(decl, subject, canonical, { data: before, seq: current?.seq ?? 0 }),
        skipped: [],
      });

      let next: JsonObject;
      let paths: Array<Array<string | number>>;
      let skipped: number[] = [];
      if (change.kind === "ops") {
        // A replayed op_id, or an empty batch, changes nothing (platform-facts B5).
        if (change.op_id !== null && opIdSeen(sql, canonical, change.op_id)) return unchanged();
        if (change.ops.length === 0) return unchanged();
        if (change.if_seq !== undefined && change.if_seq !== (current?.seq ?? 0)) return refuse(409, "the record changed while the ops were computed; retry");
        const applied = applyOps(before, change.ops, effective.regimes);
        if (!applied.ok) return refuse(400, `invalid ops: ${applied.error}`);
        next = applied.doc;
        paths = applied.paths;
        skipped = applied.skipped;
      } else {
        next = change.kind === "replace" ? change.data : { ...before, ...change.data };
        const regime = checkWholeWriteRegimes(before, next, effective.regimes);
        if (regime) return refuse(400, regime);
        paths = (change.kind === "replace" ? [...new Set([...Object.keys(before), ...Object.keys(next)])] : Object.keys(change.data)).map((k) => [k]);
      }
      const invalid = checkRecordWrite(effective.schema, next);
      if (invalid) return refuse(400, invalid);

      const seq = (current?.seq ?? 0) + 1;
      // The record, its audit row and its op id land together or not at all.
      kit.transaction(() => {
        putRecord(sql, canonical, next, seq, nowMs, decl.retention_days === null ? null : decl.retention_days * DAY_MS);
        appendWrite(sql, canonical, seq, nowMs, origin, paths);
        if (change.kind === "ops" && change.op_id !== null) rememberOpId(sql, canonical, change.op_id, nowMs);
      });
      return { ok: true, applied: true, record: kit.recordOf(decl, subject, canonical, { data: next, seq }), skipped };
    },

    erase(subject) {
      const d = kit.declaredFor(subject);
      if ("ok" in d) return d;
      const canonical = canonicalOf(sql, subjectKey(subject));
      return kit.transaction(() => {
        const removed = deleteRecord(sql, canonical);
        const aliases = dropAliasesOf(sql, canonical);
        return { erased: removed || aliases > 0 };
      });
    },

    writes(subject, limit, cursor) {
      const d = kit.declaredFor(subject);
      if ("ok" in d) return d;
      const canonical = canonicalOf(sql, subjectKey(subject));
      const before = cursor === null ? null : Number(cursor);
      const items = writesOf(sql, canonical, limit + 1, before !== null && Number.isSafeInteger(before) ? before : null);
      const more = items.length > limit;
      const page = items.slice(0, limit);
      return { items: page, next_cursor: more ? String(page[page.length - 1].seq) : null };
    },

    fold(from, into, mode, origin, nowMs) {
      let decl: StoredDeclaration | null = null;
      for (const s of [from, into]) {
        const d = kit.declaredFor(s);
        if ("ok" in d) return d;
        decl = d.decl;
      }
      if (!decl) return refuse(404, "state not found");
      const fromKey = subjectKey(from);
      const cFrom = canonicalOf(sql, fromKey);
      const cInto = canonicalOf(sql, subjectKey(into));
      if (cFrom === cInto) return { ok: true, mode, from, into, already: true, flattened: 0, merged_members: 0 };
      const fromRow = liveRecord(sql, cFrom, nowMs);
      const intoRow = liveRecord(sql, cInto, nowMs);
      const plan: FoldPlan = { from, into, fromKey, cFrom, cInto, fromRow, intoRow };
      // Everything a fold changes lands in one transaction.
      return kit.transaction(() => foldSync(decl, plan, mode, origin, nowMs));
    },

    search(filters, limit, cursor, nowMs) {
      const items: Array<{ subject: Subject; updated_at: number }> = [];
      let last = cursor ?? "";
      let scanned = 0;
      while (items.length < limit && scanned < SEARCH_SCAN_BUDGET) {
        const rows = objectSql(sql, STATE_STORE)<{ skey: string; data: string; updated_at: number; expires_at: number | null }>`
          SELECT skey, data, updated_at, expires_at FROM records WHERE skey > ${last} ORDER BY skey LIMIT 200`;
        if (rows.length === 0) return { items, next_cursor: null };
        for (const r of rows) {
          scanned++;
          last = r.skey;
          if (r.expires_at !== null && r.expires_at <= nowMs) continue;
          if (contains(parseStored(JsonObject, r.data, "state record data"), filters))
            items.push({ subject: subjectOfKey(r.skey), updated_at: Math.floor(r.updated_at / 1000) });
          if (items.length >= limit) break;
        }
      }
      const more = objectSql(sql, STATE_STORE).one`SELECT 1 AS more FROM records WHERE skey > ${last} LIMIT 1` !== null;
      return { items, next_cursor: more ? last : null };
    },

    subjects(kind, limit, cursor, nowMs) {
      const rows = objectSql(sql, STATE_STORE)<{ skey: string }>`
        SELECT skey FROM records WHERE skey > ${cursor ?? ""} AND (${kind} IS NULL OR kind = ${kind}) AND (expires_at IS NULL OR expires_at > ${nowMs})
        ORDER BY skey LIMIT ${limit + 1}`;
      const page = rows.slice(0, limit);
      return { items: page.map((r) => subjectOfKey(r.skey)), next_cursor: rows.length > limit ? page[page.length - 1].skey : null };
    },

    prune(nowMs) {
      return { expired: pruneExpired(sql, nowMs) };
    },

    eraseSubjectKey(kind, key) {
      return kit.transaction(() => eraseSubjectKeySync(kind, key));
    },
  };
}

/**
 * StateStore: one per declared state (platform-facts A3, B5). A thin shell over
 * src/states/record-store.ts (SQLite) and the pure rules of src/states/ (declaration, compose,
 * ops, containment). Each verb's writes run in one synchronous block, so a write, a fold or a
 * re-declare is atomic, and writes to a subject are serialized by the object itself. The contract
 * is src/states/rpc.ts.
 */
import { DurableObject } from "cloudflare:workers";
import type {
  AttachmentView,
  DeclarationInput,
  FoldResult,
  Page,
  RecordChange,
  StateRecord,
  StateRefusal,
  StateStats,
  StateStoreRpc,
  StateView,
  Subject,
  WriteEntry,
  WriteOrigin,
  WriteResult,
} from "../src/states/rpc";
import type { Env } from "../src/platform/env";
import type { JsonObject } from "../src/platform/http/bounded-json";
import { type StoredAttachment, StoredDeclaration, effectiveOf, parseAttachments } from "../src/states/effective";
import { isNarrowing, removedKinds } from "../src/states/declaration";
import { contains } from "../src/states/containment";
import { checkRecordWrite, checkWholeWriteRegimes } from "../src/states/record-rules";
import { applyOps } from "../src/states/ops";
import {
  addAlias,
  appendWrite,
  canonicalOf,
  createStateTables,
  deleteRecord,
  dropAliasesOf,
  foldedInto,
  getMeta,
  liveRecord,
  opIdSeen,
  pruneExpired,
  putRecord,
  rememberOpId,
  setMeta,
  subjectKey,
  subjectOfKey,
  wipeState,
  writesOf,
} from "../src/states/record-store";

const refuse = (status: StateRefusal["status"], error: string): StateRefusal => ({ ok: false, status, error });
const DAY_MS = 86_400_000;
/** Records one search request reads at most before it answers with a cursor (bounds the object's time per call). */
const SEARCH_SCAN_BUDGET = 5000;

export class StateStore extends DurableObject<Env> implements StateStoreRpc {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    createStateTables(ctx.storage.sql);
  }

  private get sql(): SqlStorage {
    return this.ctx.storage.sql;
  }

  private declaration(): StoredDeclaration | null {
    const raw = getMeta(this.sql, "declaration");
    return raw ? StoredDeclaration.parse(JSON.parse(raw)) : null;
  }

  private attachments(): StoredAttachment[] {
    return parseAttachments(getMeta(this.sql, "attachments"));
  }

  private recordCount(): number {
    return Number(this.sql.exec<{ n: number }>("SELECT COUNT(*) AS n FROM records").one().n);
  }

  async declare(name: string, input: DeclarationInput, nowMs: number): Promise<{ ok: true; view: StateView } | StateRefusal> {
    const old = this.declaration();
    if (old && this.recordCount() > 0) {
      const narrowing = isNarrowing(old.resolved_schema, input.resolved_schema);
      if (narrowing) return refuse(409, `the state has records, so a re-declare may only add properties: ${narrowing}`);
      const inUse = removedKinds(old.subject_kinds, input.subject_kinds).filter(
        (k) => this.sql.exec("SELECT 1 FROM records WHERE kind = ? LIMIT 1", k).toArray().length > 0,
      );
      if (inUse.length) return refuse(409, "a subject kind that still has records cannot be removed");
    }
    const decl: StoredDeclaration = { name, ...input, updated_at: new Date(nowMs).toISOString() };
    const effective = effectiveOf(decl, this.attachments());
    if (!effective.ok) return refuse(409, effective.error);
    setMeta(this.sql, "declaration", JSON.stringify(decl));
    return { ok: true, view: this.viewOf(decl) };
  }

  async view(): Promise<StateView | null> {
    const decl = this.declaration();
    return decl ? this.viewOf(decl) : null;
  }

  private viewOf(decl: StoredDeclaration): StateView {
    const attachments = this.attachments();
    const effective = effectiveOf(decl, attachments);
    // A stored declaration always composed when it was stored; the fallback only guards a bug.
    const composed = effective.ok ? effective : { schema: decl.resolved_schema, regimes: [] };
    const views: AttachmentView[] = attachments.map((a) => ({ template: a.template, path: a.path, parameters: a.parameters, declarations: a.declarations }));
    return {
      name: decl.name,
      description: decl.description,
      schema: decl.schema,
      effective_schema: composed.schema,
      subject_kinds: decl.subject_kinds,
      default_subject_kind: decl.default_subject_kind,
      retention_days: decl.retention_days,
      attachments: views,
      regimes: composed.regimes,
      updated_at: decl.updated_at,
    };
  }

  /** Stores `list` as the attachments once it composes with the declaration; bumps updated_at. */
  private saveAttachments(decl: StoredDeclaration, list: StoredAttachment[], nowMs: number): { ok: true; view: StateView } | StateRefusal {
    const effective = effectiveOf(decl, list);
    if (!effective.ok) return refuse(409, effective.error);
    setMeta(this.sql, "attachments", JSON.stringify(list));
    const touched: StoredDeclaration = { ...decl, updated_at: new Date(nowMs).toISOString() };
    setMeta(this.sql, "declaration", JSON.stringify(touched));
    return { ok: true, view: this.viewOf(touched) };
  }

  async attach(attachment: StoredAttachment, nowMs: number): Promise<{ ok: true; view: StateView } | StateRefusal> {
    const decl = this.declaration();
    if (!decl) return refuse(404, "state not found");
    const others = this.attachments().filter((a) => a.template !== attachment.template);
    return this.saveAttachments(decl, [...others, attachment], nowMs);
  }

  async patchAttachment(template: string, declarations: JsonObject, nowMs: number): Promise<{ ok: true; view: StateView } | StateRefusal> {
    const decl = this.declaration();
    if (!decl) return refuse(404, "state not found");
    const list = this.attachments();
    if (!list.some((a) => a.template === template)) return refuse(404, "the template is not attached on this state");
    return this.saveAttachments(
      decl,
      list.map((a) => (a.template === template ? { ...a, declarations } : a)),
      nowMs,
    );
  }

  async detach(template: string, nowMs: number): Promise<{ ok: true; view: StateView } | StateRefusal> {
    const decl = this.declaration();
    if (!decl) return refuse(404, "state not found");
    const list = this.attachments();
    const gone = list.find((a) => a.template === template);
    if (!gone) return refuse(404, "the template is not attached on this state");
    if (this.someRecordHolds(gone.path)) return refuse(409, "records hold values at the attachment's path; erase or rewrite them before detaching");
    return this.saveAttachments(
      decl,
      list.filter((a) => a.template !== template),
      nowMs,
    );
  }

  async bindingRead(spec: Subject | { key: string; target_kind: Subject["target_kind"]; target_name: string }, nowMs: number) {
    const decl = this.declaration();
    if (!decl) return refuse(404, "state not found");
    const subject: Subject =
      "kind" in spec ? spec : { target_kind: spec.target_kind, target_name: spec.target_name, kind: decl.default_subject_kind, key: spec.key };
    const record = await this.read(subject, nowMs);
    if (record !== null && "ok" in record) return record;
    return { ok: true as const, subject, record, attachments: this.attachments() };
  }

  async storedAttachments(): Promise<StoredAttachment[] | null> {
    return this.declaration() ? this.attachments() : null;
  }

  /** Does any record hold a value at `path` (the whole document for the root path)? */
  private someRecordHolds(path: string[]): boolean {
    if (path.length === 0) return this.recordCount() > 0;
    // A JSON path of quoted keys, so any key spelling is taken literally.
    const jsonPath = "$" + path.map((k) => `.${JSON.stringify(k)}`).join("");
    return this.sql.exec("SELECT 1 FROM records WHERE json_type(data, ?) IS NOT NULL LIMIT 1", jsonPath).toArray().length > 0;
  }

  async drop(): Promise<{ records: number }> {
    return { records: wipeState(this.sql) };
  }

  async stats(nowMs: number): Promise<StateStats | null> {
    const decl = this.declaration();
    if (!decl) return null;
    pruneExpired(this.sql, nowMs);
    const byKind: Record<string, number> = {};
    for (const r of this.sql.exec<{ kind: string; n: number }>("SELECT kind, COUNT(*) AS n FROM records GROUP BY kind ORDER BY kind").toArray())
      byKind[r.kind] = Number(r.n);
    const span = this.sql.exec<{ lo: number | null; hi: number | null }>("SELECT MIN(updated_at) AS lo, MAX(updated_at) AS hi FROM records").one();
    const count = (t: string) => Number(this.sql.exec<{ n: number }>(`SELECT COUNT(*) AS n FROM ${t}`).one().n);
    const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
    return {
      name: decl.name,
      records: count("records"),
      by_kind: byKind,
      aliases: count("aliases"),
      writes: count("writes"),
      oldest_updated_at: iso(span.lo),
      newest_updated_at: iso(span.hi),
    };
  }

  /** The declaration, and the subject's kind checked against it. */
  private declaredFor(subject: Subject): { decl: StoredDeclaration } | StateRefusal {
    const decl = this.declaration();
    if (!decl) return refuse(404, "state not found");
    if (!decl.subject_kinds.includes(subject.kind)) return refuse(400, "the subject's kind is not one of the state's subject_kinds");
    return { decl };
  }

  private recordOf(decl: StoredDeclaration, subject: Subject, canonical: string, row: { data: JsonObject; seq: number }): StateRecord {
    return {
      state: decl.name,
      subject,
      data: row.data,
      seq: row.seq,
      canonical_subject: subjectOfKey(canonical),
      folded_from: foldedInto(this.sql, canonical).map(subjectOfKey),
    };
  }

  async read(subject: Subject, nowMs: number): Promise<StateRecord | null | StateRefusal> {
    const d = this.declaredFor(subject);
    if ("ok" in d) return d;
    const canonical = canonicalOf(this.sql, subjectKey(subject));
    const row = liveRecord(this.sql, canonical, nowMs);
    return row ? this.recordOf(d.decl, subject, canonical, row) : null;
  }

  async write(subject: Subject, change: RecordChange, origin: WriteOrigin, nowMs: number): Promise<WriteResult> {
    const d = this.declaredFor(subject);
    if ("ok" in d) return d;
    const { decl } = d;
    const effective = effectiveOf(decl, this.attachments());
    if (!effective.ok) return refuse(409, effective.error);
    const sql = this.sql;
    const canonical = canonicalOf(sql, subjectKey(subject));
    const current = liveRecord(sql, canonical, nowMs);
    const before: JsonObject = current?.data ?? {};
    const unchanged = (): WriteResult => ({
      ok: true,
      applied: false,
      record: this.recordOf(decl, subject, canonical, { data: before, seq: current?.seq ?? 0 }),
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
    this.ctx.storage.transactionSync(() => {
      putRecord(sql, canonical, next, seq, nowMs, decl.retention_days === null ? null : decl.retention_days * DAY_MS);
      appendWrite(sql, canonical, seq, nowMs, origin, paths);
      if (change.kind === "ops" && change.op_id !== null) rememberOpId(sql, canonical, change.op_id, nowMs);
    });
    return { ok: true, applied: true, record: this.recordOf(decl, subject, canonical, { data: next, seq }), skipped };
  }

  async erase(subject: Subject): Promise<{ erased: boolean } | StateRefusal> {
    const d = this.declaredFor(subject);
    if ("ok" in d) return d;
    const canonical = canonicalOf(this.sql, subjectKey(subject));
    return this.ctx.storage.transactionSync(() => {
      const removed = deleteRecord(this.sql, canonical);
      const aliases = dropAliasesOf(this.sql, canonical);
      return { erased: removed || aliases > 0 };
    });
  }

  async writes(subject: Subject, limit: number, cursor: string | null): Promise<Page<WriteEntry> | StateRefusal> {
    const d = this.declaredFor(subject);
    if ("ok" in d) return d;
    const canonical = canonicalOf(this.sql, subjectKey(subject));
    const before = cursor === null ? null : Number(cursor);
    const items = writesOf(this.sql, canonical, limit + 1, before !== null && Number.isSafeInteger(before) ? before : null);
    const more = items.length > limit;
    const page = items.slice(0, limit);
    return { items: page, next_cursor: more ? String(page[page.length - 1].seq) : null };
  }

  async fold(from: Subject, into: Subject, mode: "switch" | "merge", origin: WriteOrigin, nowMs: number): Promise<({ ok: true } & FoldResult) | StateRefusal> {
    for (const s of [from, into]) {
      const d = this.declaredFor(s);
      if ("ok" in d) return d;
    }
    const decl = this.declaration()!;
    const sql = this.sql;
    const fromKey = subjectKey(from);
    const cFrom = canonicalOf(sql, fromKey);
    const cInto = canonicalOf(sql, subjectKey(into));
    if (cFrom === cInto) return { ok: true, mode, from, into, already: true, flattened: 0, merged_members: 0 };
    const fromRow = liveRecord(sql, cFrom, nowMs);
    const intoRow = liveRecord(sql, cInto, nowMs);
    // Everything a fold changes lands in one transaction.
    return this.ctx.storage.transactionSync(() => this.foldSync(decl, { from, into, fromKey, cFrom, cInto, fromRow, intoRow }, mode, origin, nowMs));
  }

  private foldSync(
    decl: StoredDeclaration,
    f: {
      from: Subject;
      into: Subject;
      fromKey: string;
      cFrom: string;
      cInto: string;
      fromRow: ReturnType<typeof liveRecord>;
      intoRow: ReturnType<typeof liveRecord>;
    },
    mode: "switch" | "merge",
    origin: WriteOrigin,
    nowMs: number,
  ): ({ ok: true } & FoldResult) | StateRefusal {
    const sql = this.sql;
    const { from, into, fromKey, cFrom, cInto, fromRow, intoRow } = f;
    if (mode === "merge" && fromRow) {
      // The subject folded into keeps what it has; it gains the other's fields it lacks.
      const merged: JsonObject = { ...fromRow.data, ...(intoRow?.data ?? {}) };
      const effective = effectiveOf(decl, this.attachments());
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

  async search(filters: JsonObject, limit: number, cursor: string | null, nowMs: number): Promise<Page<{ subject: Subject; updated_at: number }>> {
    const items: Array<{ subject: Subject; updated_at: number }> = [];
    let last = cursor ?? "";
    let scanned = 0;
    while (items.length < limit && scanned < SEARCH_SCAN_BUDGET) {
      const rows = this.sql
        .exec<{ skey: string; data: string; updated_at: number; expires_at: number | null }>(
          "SELECT skey, data, updated_at, expires_at FROM records WHERE skey > ? ORDER BY skey LIMIT 200",
          last,
        )
        .toArray();
      if (rows.length === 0) return { items, next_cursor: null };
      for (const r of rows) {
        scanned++;
        last = r.skey;
        if (r.expires_at !== null && r.expires_at <= nowMs) continue;
        if (contains(JSON.parse(r.data) as JsonObject, filters)) items.push({ subject: subjectOfKey(r.skey), updated_at: Math.floor(r.updated_at / 1000) });
        if (items.length >= limit) break;
      }
    }
    const more = this.sql.exec("SELECT 1 FROM records WHERE skey > ? LIMIT 1", last).toArray().length > 0;
    return { items, next_cursor: more ? last : null };
  }

  async subjects(kind: string | null, limit: number, cursor: string | null, nowMs: number): Promise<Page<Subject>> {
    const rows = this.sql
      .exec<{ skey: string }>(
        "SELECT skey FROM records WHERE skey > ? AND (? IS NULL OR kind = ?) AND (expires_at IS NULL OR expires_at > ?) ORDER BY skey LIMIT ?",
        cursor ?? "",
        kind,
        kind,
        nowMs,
        limit + 1,
      )
      .toArray();
    const page = rows.slice(0, limit);
    return { items: page.map((r) => subjectOfKey(r.skey)), next_cursor: rows.length > limit ? page[page.length - 1].skey : null };
  }

  async prune(nowMs: number): Promise<{ expired: number }> {
    return { expired: pruneExpired(this.sql, nowMs) };
  }

  async eraseSubjectKey(kind: string, key: string): Promise<{ removed: number }> {
    return this.ctx.storage.transactionSync(() => this.eraseSubjectKeySync(kind, key));
  }

  private eraseSubjectKeySync(kind: string, key: string): { removed: number } {
    const sql = this.sql;
    const rows = sql.exec<{ skey: string }>("SELECT skey FROM records WHERE kind = ? AND key = ?", kind, key).toArray();
    let removed = 0;
    for (const { skey } of rows) {
      if (deleteRecord(sql, skey)) removed++;
      dropAliasesOf(sql, skey);
    }
    // A subject folded elsewhere leaves only an alias; erasure takes that too.
    sql.exec("DELETE FROM aliases WHERE kind = ? AND key = ?", kind, key);
    return { removed };
  }
}

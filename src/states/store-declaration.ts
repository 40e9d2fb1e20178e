/**
 * The StateStore object's declaration verbs: declare (checked against the records it guards),
 * the view, the template attachments, the stats and the drop. Each verb's writes run in one
 * synchronous block, so a re-declare is atomic.
 */
import type { AttachmentView, DeclarationInput, StateRefusal, StateStats, StateView } from "./rpc";
import type { JsonObject } from "../platform/http/bounded-json";
import { isNarrowing, removedKinds } from "./declaration";
import { type StoredAttachment, type StoredDeclaration, effectiveOf } from "./effective";
import { objectSql, sqlText } from "../platform/persistence/object-sql";
import { STATE_STORE, pruneExpired, setMeta, wipeState } from "./record-store";
import { type StateStoreKit, refuse } from "./object-kit";

type ViewOrRefusal = { ok: true; view: StateView } | StateRefusal;

export interface StateDeclarationPart {
  declare(name: string, input: DeclarationInput, nowMs: number): ViewOrRefusal;
  view(): StateView | null;
  attach(attachment: StoredAttachment, nowMs: number): ViewOrRefusal;
  patchAttachment(template: string, declarations: JsonObject, nowMs: number): ViewOrRefusal;
  detach(template: string, nowMs: number): ViewOrRefusal;
  storedAttachments(): StoredAttachment[] | null;
  drop(): { records: number };
  stats(nowMs: number): StateStats | null;
}

export function stateDeclarationPart(kit: StateStoreKit): StateDeclarationPart {
  const { sql } = kit;

  function viewOf(decl: StoredDeclaration): StateView {
    const attachments = kit.attachments();
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
  function saveAttachments(decl: StoredDeclaration, list: StoredAttachment[], nowMs: number): ViewOrRefusal {
    const effective = effectiveOf(decl, list);
    if (!effective.ok) return refuse(409, effective.error);
    setMeta(sql, "attachments", JSON.stringify(list));
    const touched: StoredDeclaration = { ...decl, updated_at: new Date(nowMs).toISOString() };
    setMeta(sql, "declaration", JSON.stringify(touched));
    return { ok: true, view: viewOf(touched) };
  }

  /** Does any record hold a value at `path` (the whole document for the root path)? */
  function someRecordHolds(path: string[]): boolean {
    if (path.length === 0) return kit.recordCount() > 0;
    // A JSON path of quoted keys, so any key spelling is taken literally.
    const jsonPath = "$" + path.map((k) => `.${JSON.stringify(k)}`).join("");
    return objectSql(sql, STATE_STORE).one`SELECT 1 AS held FROM records WHERE json_type(data, ${jsonPath}) IS NOT NULL LIMIT 1` !== null;
  }

  return {
    declare(name, input, nowMs) {
      const old = kit.declaration();
      if (old && kit.recordCount() > 0) {
        const narrowing = isNarrowing(old.resolved_schema, input.resolved_schema);
        if (narrowing) return refuse(409, `the state has records, so a re-declare may only add properties: ${narrowing}`);
        const inUse = removedKinds(old.subject_kinds, input.subject_kinds).filter(
          (k) => objectSql(sql, STATE_STORE).one`SELECT 1 AS held FROM records WHERE kind = ${k} LIMIT 1` !== null,
        );
        if (inUse.length) return refuse(409, "a subject kind that still has records cannot be removed");
      }
      const decl: StoredDeclaration = { name, ...input, updated_at: new Date(nowMs).toISOString() };
      const effective = effectiveOf(decl, kit.attachments());
      if (!effective.ok) return refuse(409, effective.error);
      setMeta(sql, "declaration", JSON.stringify(decl));
      return { ok: true, view: viewOf(decl) };
    },

    view() {
      const decl = kit.declaration();
      return decl ? viewOf(decl) : null;
    },

    attach(attachment, nowMs) {
      const decl = kit.declaration();
      if (!decl) return refuse(404, "state not found");
      const others = kit.attachments().filter((a) => a.template !== attachment.template);
      return saveAttachments(decl, [...others, attachment], nowMs);
    },

    patchAttachment(template, declarations, nowMs) {
      const decl = kit.declaration();
      if (!decl) return refuse(404, "state not found");
      const list = kit.attachments();
      if (!list.some((a) => a.template === template)) return refuse(404, "the template is not attached on this state");
      return saveAttachments(
        decl,
        list.map((a) => (a.template === template ? { ...a, declarations } : a)),
        nowMs,
      );
    },

    detach(template, nowMs) {
      const decl = kit.declaration();
      if (!decl) return refuse(404, "state not found");
      const list = kit.attachments();
      const gone = list.find((a) => a.template === template);
      if (!gone) return refuse(404, "the template is not attached on this state");
      if (someRecordHolds(gone.path)) return refuse(409, "records hold values at the attachment's path; erase or rewrite them before detaching");
      return saveAttachments(
        decl,
        list.filter((a) => a.template !== template),
        nowMs,
      );
    },

    storedAttachments() {
      return kit.declaration() ? kit.attachments() : null;
    },

    drop() {
      return { records: wipeState(sql) };
    },

    stats(nowMs) {
      const decl = kit.declaration();
      if (!decl) return null;
      pruneExpired(sql, nowMs);
      const byKind: Record<string, number> = {};
      const q = objectSql(sql, STATE_STORE);
      for (const r of q<{ kind: string; n: number }>`SELECT kind, COUNT(*) AS n FROM records GROUP BY kind ORDER BY kind`) byKind[r.kind] = Number(r.n);
      const span = q.one<{ lo: number | null; hi: number | null }>`SELECT MIN(updated_at) AS lo, MAX(updated_at) AS hi FROM records` ?? { lo: null, hi: null };
      // The table names are this function's own constants, never input.
      const count = (t: "aliases" | "writes" | "op_ids" | "records") => Number(q.one<{ n: number }>`SELECT COUNT(*) AS n FROM ${sqlText(t)}`?.n ?? 0);
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
    },
  };
}

/**
 * The StateStore objects' RPC contract (spec §2.10, §4.10–4.11; platform-facts A3, B5).
 * One object per declared state (`idFromName(state name)`) holds the state's declaration, its
 * template attachments and every record of it, with the write audit trail and the op ids already
 * applied. Every write to any subject of a state runs in that object, one at a time, so writes to
 * one subject are serialized and atomic (and a fold, which touches two subjects, is atomic too).
 */
import type { Env } from "../platform/env";
import type { JsonObject, JsonValue } from "../platform/http/bounded-json";
import type { StoredAttachment } from "./effective";
import type { DeltaOp } from "./ops";

import type { AttachmentView, FoldResult, Page, StateRecord, StateStats, StateView, Subject, WriteEntry, WriteOrigin } from "./views";

export type { AttachmentView, FoldResult, Page, StateRecord, StateStats, StateView, Subject, WriteEntry, WriteOrigin };

/** What the declare door hands the object: the body as given, with its schema resolved to an object. */
export interface DeclarationInput {
  description: string;
  /** The schema as the operator gave it (a raw object, or a TemplatedText served back as given). */
  schema: JsonValue;
  /** `schema` resolved (rendered and parsed when it was a TemplatedText). */
  resolved_schema: JsonObject;
  subject_kinds: string[];
  default_subject_kind: string;
  retention_days: number | null;
}

/** A record write: replace the document, merge top-level fields into it, or apply an op batch. */
export type RecordChange =
  | { kind: "replace"; data: JsonObject }
  | { kind: "merge"; data: JsonObject }
  /** `if_seq`: apply only if the record is still at this sequence (0: no record), else refuse 409: jq computed the ops from that version. */
  | { kind: "ops"; ops: DeltaOp[]; op_id: string | null; if_seq?: number };

/** A refusal the doors turn into an HTTP status. */
export interface StateRefusal {
  ok: false;
  status: 400 | 404 | 409;
  error: string;
}

export type WriteResult = { ok: true; applied: boolean; record: StateRecord; skipped: number[] } | StateRefusal;

/** The verbs of one state's object. */
export interface StateStoreRpc {
  /** Declares or re-declares the state (additive-only once it has records). */
  declare(name: string, input: DeclarationInput, nowMs: number): Promise<{ ok: true; view: StateView } | StateRefusal>;
  /** The declaration with its computed parts; null when the state is not declared. */
  view(): Promise<StateView | null>;
  /** Deletes the state with every record, alias, audit row and attachment. */
  drop(): Promise<{ records: number }>;
  stats(nowMs: number): Promise<StateStats | null>;
  read(subject: Subject, nowMs: number): Promise<StateRecord | null | StateRefusal>;
  write(subject: Subject, change: RecordChange, origin: WriteOrigin, nowMs: number): Promise<WriteResult>;
  /** Erases the subject's record (its canonical record, aliases and audit rows). */
  erase(subject: Subject): Promise<{ erased: boolean } | StateRefusal>;
  writes(subject: Subject, limit: number, cursor: string | null): Promise<Page<WriteEntry> | StateRefusal>;
  fold(from: Subject, into: Subject, mode: "switch" | "merge", origin: WriteOrigin, nowMs: number): Promise<({ ok: true } & FoldResult) | StateRefusal>;
  search(filters: JsonObject, limit: number, cursor: string | null, nowMs: number): Promise<Page<{ subject: Subject; updated_at: number }>>;
  subjects(kind: string | null, limit: number, cursor: string | null, nowMs: number): Promise<Page<Subject>>;
  /** Removes expired records (retention); answers how many. */
  prune(nowMs: number): Promise<{ expired: number }>;
  /** Attaches (or re-attaches) a template: its fragment composes into the effective schema (409 on overlap). */
  attach(attachment: StoredAttachment, nowMs: number): Promise<{ ok: true; view: StateView } | StateRefusal>;
  /** Replaces an attachment's declarations. */
  patchAttachment(template: string, declarations: JsonObject, nowMs: number): Promise<{ ok: true; view: StateView } | StateRefusal>;
  /** Detaches a template; refused (409) while a record holds a value at its path. */
  detach(template: string, nowMs: number): Promise<{ ok: true; view: StateView } | StateRefusal>;
  /** The attachments as stored, with their programs; null when the state is not declared. */
  storedAttachments(): Promise<StoredAttachment[] | null>;
  /**
   * A turn's read for a state binding, in one call: the subject (a full one, or a key that takes
   * the binding target and the state's default subject kind), its record and the attachments.
   */
  bindingRead(
    subject: Subject | { key: string; target_kind: Subject["target_kind"]; target_name: string },
    nowMs: number,
  ): Promise<{ ok: true; subject: Subject; record: StateRecord | null; attachments: StoredAttachment[] } | StateRefusal>;
  /** Erasure: removes every record (of any target) whose subject is (`kind`, `key`). */
  eraseSubjectKey(kind: string, key: string): Promise<{ removed: number }>;
}

/** The object of state `name`. */
export function stateStoreStub(env: Env, name: string): StateStoreRpc {
  return env.STATE_STORES.get(env.STATE_STORES.idFromName(name));
}

/**
 * StateStore: one per declared state (platform-facts A3, B5). A shell over the state's parts
 * (src/states/compose.ts): the declaration verbs (declare, attachments, view, stats) and the
 * record verbs (read, write, fold, search, erase) over src/states/record-store.ts (SQLite) and the
 * pure rules of src/states/. Each verb's writes run in one synchronous block, so a write, a fold or
 * a re-declare is atomic, and writes to a subject are serialized by the object itself. The
 * contract is src/states/rpc.ts.
 */
import { DurableObject } from "cloudflare:workers";
import type {
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
import { startObject } from "../src/platform/persistence/object-start";
import type { JsonObject } from "../src/platform/http/bounded-json";
import type { StoredAttachment } from "../src/states/effective";
import { createStateTables } from "../src/states/record-store";
import type { BindingSpec } from "../src/states/store-records";
import { type StateStoreParts, composeStateStore } from "../src/states/compose";

export class StateStore extends DurableObject<Env> implements StateStoreRpc {
  private readonly parts: StateStoreParts;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    startObject(ctx, { migrate: (storage) => createStateTables(storage.sql) });
    this.parts = composeStateStore(ctx.storage);
  }

  async declare(name: string, input: DeclarationInput, nowMs: number): Promise<{ ok: true; view: StateView } | StateRefusal> {
    return this.parts.declaration.declare(name, input, nowMs);
  }

  async view(): Promise<StateView | null> {
    return this.parts.declaration.view();
  }

  async attach(attachment: StoredAttachment, nowMs: number): Promise<{ ok: true; view: StateView } | StateRefusal> {
    return this.parts.declaration.attach(attachment, nowMs);
  }

  async patchAttachment(template: string, declarations: JsonObject, nowMs: number): Promise<{ ok: true; view: StateView } | StateRefusal> {
    return this.parts.declaration.patchAttachment(template, declarations, nowMs);
  }

  async detach(template: string, nowMs: number): Promise<{ ok: true; view: StateView } | StateRefusal> {
    return this.parts.declaration.detach(template, nowMs);
  }

  async storedAttachments(): Promise<StoredAttachment[] | null> {
    return this.parts.declaration.storedAttachments();
  }

  async drop(): Promise<{ records: number }> {
    return this.parts.declaration.drop();
  }

  async stats(nowMs: number): Promise<StateStats | null> {
    return this.parts.declaration.stats(nowMs);
  }

  async bindingRead(spec: BindingSpec, nowMs: number) {
    return this.parts.records.bindingRead(spec, nowMs);
  }

  async read(subject: Subject, nowMs: number): Promise<StateRecord | null | StateRefusal> {
    return this.parts.records.read(subject, nowMs);
  }

  async write(subject: Subject, change: RecordChange, origin: WriteOrigin, nowMs: number): Promise<WriteResult> {
    return this.parts.records.write(subject, change, origin, nowMs);
  }

  async erase(subject: Subject): Promise<{ erased: boolean } | StateRefusal> {
    return this.parts.records.erase(subject);
  }

  async writes(subject: Subject, limit: number, cursor: string | null): Promise<Page<WriteEntry> | StateRefusal> {
    return this.parts.records.writes(subject, limit, cursor);
  }

  async fold(from: Subject, into: Subject, mode: "switch" | "merge", origin: WriteOrigin, nowMs: number): Promise<({ ok: true } & FoldResult) | StateRefusal> {
    return this.parts.records.fold(from, into, mode, origin, nowMs);
  }

  async search(filters: JsonObject, limit: number, cursor: string | null, nowMs: number): Promise<Page<{ subject: Subject; updated_at: number }>> {
    return this.parts.records.search(filters, limit, cursor, nowMs);
  }

  async subjects(kind: string | null, limit: number, cursor: string | null, nowMs: number): Promise<Page<Subject>> {
    return this.parts.records.subjects(kind, limit, cursor, nowMs);
  }

  async prune(nowMs: number): Promise<{ expired: number }> {
    return this.parts.records.prune(nowMs);
  }

  async eraseSubjectKey(kind: string, key: string): Promise<{ removed: number }> {
    return this.parts.records.eraseSubjectKey(kind, key);
  }
}

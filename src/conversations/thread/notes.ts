/**
 * The thread's private notes (docs/inbox.md, "Private notes"): operators' words on a conversation,
 * never delivered to its customer. Kept in the object's `notes` table on their own schema line
 * (meta `notes_schema_version`), so the records' steps and this table can change apart.
 *
 * A note is a copy of the conversation like its records (docs/security.md, "Every copy of a
 * conversation"): it expires a retention window after its write, pruned by the thread's alarm (the
 * earliest expiry is one of its instants, kept in memory so arming reads nothing); it goes when the
 * alarm prunes the thread's last record, and with the thread's forget (and so a person's erase).
 *
 * Statements: the doors' own only; nothing on a message's path.
 */
import { seedOf } from "./inbox-instants";
import { MAX_NOTES_PER_THREAD, type NoteAddResult, type NoteDeleteResult, type StoredNote } from "../model/notes";
import { type ObjectSchema, type ObjectSql, keyValueVersionRow, objectSql } from "../../platform/persistence/object-sql";
import type { ThreadDeps } from "./deps";

/** The notes' table, on its own version line beside the records'. */
export const THREAD_NOTES_SCHEMA: ObjectSchema = {
  name: "thread-notes",
  versionRow: keyValueVersionRow("meta", "notes_schema_version"),
  steps: [
    [
      `CREATE TABLE IF NOT EXISTS notes (
      seq        INTEGER PRIMARY KEY AUTOINCREMENT,
      id         TEXT NOT NULL UNIQUE,
      author     TEXT NOT NULL,
      text       TEXT NOT NULL,
      created_at INTEGER NOT NULL,
      expires_at INTEGER NOT NULL
    )`,
      "CREATE INDEX IF NOT EXISTS notes_expiry ON notes(expires_at)",
    ],
  ],
};

/**
 * The inbox event a note raises, as the thread's inbox emits it (ThreadInbox.emit): the note's id
 * and author, never its text, since events leave the object (metrics, the route's event callback).
 */
export type NoteAddedEvent = { kind: "note_added"; at: number; route_name: string; by: string; detail: { note_id: string; by: string } };

type NoteRow = { id: string; author: string; text: string; created_at: number; expires_at: number };

const fromRow = (r: NoteRow): StoredNote => ({ id: r.id, by: r.author, text: r.text, created_at: r.created_at, expires_at: r.expires_at });

/** One thread's notes. */
export class ThreadNotes {
  /** The earliest stored expiry (undefined: not read by this instance yet). */
  private due: number | null | undefined = undefined;

  /** `holdsRecords`: does the thread hold a record (a note needs a conversation to be about)? */
  constructor(
    private readonly deps: Pick<ThreadDeps, "storage" | "clock" | "settings">,
    private readonly parts: { inbox: { emit(events: NoteAddedEvent[]): void }; holdsRecords: () => boolean },
  ) {}

  /** The live notes, oldest first; null when the thread holds no record (nothing to note). */
  live(): StoredNote[] | null {
    if (!this.parts.holdsRecords()) return null;
    const now = this.deps.clock.now();
    return this.sql("live notes")<NoteRow>`SELECT id, author, text, created_at, expires_at FROM notes WHERE expires_at > ${now} ORDER BY seq`.map(fromRow);
  }

  /**
   * Writes a note by `by` through route `routeName`'s door, and tells the inbox (`note_added`,
   * without the text). Refused when the thread holds no record, or already holds the most live
   * notes it may (counted and inserted in one synchronous step, so two writers cannot both pass).
   */
  add(routeName: string, by: string, text: string): NoteAddResult {
    if (!this.parts.holdsRecords()) return { ok: false, reason: "no_thread" };
    const now = this.deps.clock.now();
    const q = this.sql("add note");
    const count = q.one<{ n: number }>`SELECT COUNT(*) AS n FROM notes WHERE expires_at > ${now}`?.n ?? 0;
    if (count >= MAX_NOTES_PER_THREAD) return { ok: false, reason: "full" };
    const note: StoredNote = {
      id: crypto.randomUUID(),
      by,
      text,
      created_at: now,
      expires_at: now + this.deps.settings().conversations.answerRetentionTtlSeconds * 1000,
    };
    q.run`INSERT INTO notes (id, author, text, created_at, expires_at) VALUES (${note.id}, ${note.by}, ${note.text}, ${note.created_at}, ${note.expires_at})`;
    const due = this.dueAt();
    this.due = due === null ? note.expires_at : Math.min(due, note.expires_at);
    this.parts.inbox.emit([{ kind: "note_added", at: now, route_name: routeName, by, detail: { note_id: note.id, by } }]);
    return { ok: true, note };
  }

  /** Deletes live note `id`: only its author may, or an admin. */
  remove(id: string, by: string, admin: boolean): NoteDeleteResult {
    const now = this.deps.clock.now();
    const q = this.sql("delete note");
    const row = q.one<{ author: string }>`SELECT author FROM notes WHERE id = ${id} AND expires_at > ${now}`;
    if (!row) return { ok: false, reason: "not_found" };
    if (row.author !== by && !admin) return { ok: false, reason: "not_author", by: row.author };
    q.run`DELETE FROM notes WHERE id = ${id}`;
    // The earliest expiry may have gone with it: read again at the next arm.
    this.due = undefined;
    return { ok: true };
  }

  /** This instance knows the thread holds no note (only this object writes them). */
  knownEmpty(): boolean {
    return this.due === null;
  }

  /** The alarm fired: the next look reads the earliest expiry again. */
  reload(): void {
    this.due = undefined;
  }

  /** The earliest instant a note expires (the alarm's wake for `prune`). From memory, unless `fresh`. */
  dueAt(fresh = false): number | null {
    if (fresh || this.due === undefined) {
      // The first look after a (re)load takes the shared read of the inbox instants.
      const seed = seedOf(this.deps.storage, "notesDue");
      this.due = seed !== undefined ? seed : (this.sql("notes due").one<{ e: number | null }>`SELECT MIN(expires_at) AS e FROM notes`?.e ?? null);
    }
    return this.due;
  }

  /** Deletes the notes past their expiry (the alarm's pass); answers how many went. */
  prune(nowMs: number): number {
    const gone = this.sql("prune notes").run`DELETE FROM notes WHERE expires_at <= ${nowMs}`;
    this.due = undefined;
    return gone;
  }

  /** Forget, or the thread's last record pruned: every note goes with the conversation. */
  clear(): void {
    this.sql("clear notes").run`DELETE FROM notes`;
    this.due = null;
  }

  private sql(name: string): ObjectSql {
    return objectSql(this.deps.storage.sql, `thread notes (${name})`);
  }
}

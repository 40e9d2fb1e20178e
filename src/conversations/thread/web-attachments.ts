/**
 * A web visitor's uploads (docs/channels.md, "Attachments"), kept in the visitor's own thread
 * beside the session and the transcript: one row per upload, its bytes in the WEB_ATTACHMENTS
 * bucket under `attachmentKey(id)`. The row is what makes an upload the visitor's: the doors serve
 * and send only ids this thread holds, whatever the bucket holds.
 *
 * - An upload not yet sent lives `UNSENT_TTL_MS`; sending it binds it to the message's record
 *   (when the visitor's entry of that message is written here, `bindFromPart`), and from then on it
 *   expires with that record, exactly as the record's transcript entries do (`expire`).
 * - A forget, an erase or a session's end marks the rows it reaches as due now (`doom*`), so reads
 *   treat them as gone at once; `reap` then deletes their objects from the bucket and the rows. A
 *   bucket failure leaves the rows due, and the object's alarm reaps them again.
 */
import { type WebAttachment, attachmentKey } from "../model/web";
import { type ObjectSchema, type ObjectSql, keyValueVersionRow, objectSql, sqlList } from "../../platform/persistence/object-sql";

/** An upload that no message carried is deleted this long after it was made. */
export const UNSENT_TTL_MS = 3_600_000;

/** How long the alarm waits before it deletes again after the bucket refused. */
const RETRY_MS = 30_000;

/** Uploads one visitor may hold unsent at once. */
export const MAX_UNSENT = 20;

/** The uploads' table, on its own version line (meta `web_attachments_schema_version`). */
export const WEB_ATTACHMENTS_SCHEMA: ObjectSchema = {
  name: "thread-web-attachments",
  versionRow: keyValueVersionRow("meta", "web_attachments_schema_version"),
  steps: [
    [
      `CREATE TABLE IF NOT EXISTS web_attachments (
        id           TEXT PRIMARY KEY,
        kind         TEXT NOT NULL,
        content_type TEXT NOT NULL,
        bytes        INTEGER NOT NULL,
        filename     TEXT NOT NULL,
        at           INTEGER NOT NULL,
        message_id   TEXT,
        expires_at   INTEGER NOT NULL
      )`,
      "CREATE INDEX IF NOT EXISTS web_attachments_expiry ON web_attachments(expires_at)",
      "CREATE INDEX IF NOT EXISTS web_attachments_message ON web_attachments(message_id)",
    ],
  ],
};

type Row = { id: string; kind: string; content_type: string; bytes: number; filename: string };

const asAttachment = (r: Row): WebAttachment => ({
  attachment_id: r.id,
  kind: r.kind === "image" ? "image" : "document",
  content_type: r.content_type,
  bytes: r.bytes,
  filename: r.filename,
});

/** The ids a transcript entry's part names (`{attachments: [{attachment_id}]}`), as the intake writes it. */
function idsInPart(part: unknown): string[] {
  if (!part || typeof part !== "object" || !("attachments" in part) || !Array.isArray(part.attachments)) return [];
  return part.attachments.flatMap((a: unknown) =>
    a && typeof a === "object" && "attachment_id" in a && typeof a.attachment_id === "string" ? [a.attachment_id] : [],
  );
}

export class WebAttachments {
  /** The earliest expiry of a row (undefined: read it at the next use). */
  private due: number | null | undefined = undefined;
  /** After the bucket refused a delete, the alarm tries again no sooner than this. */
  private retryAt = 0;

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly now: () => number,
    /** Deletes objects from the WEB_ATTACHMENTS bucket. */
    private readonly drop: (keys: string[]) => Promise<void>,
    /** Re-arms the object's alarm once an expiry was written. */
    private readonly arm: () => Promise<void>,
  ) {}

  private sql(name: string): ObjectSql {
    return objectSql(this.storage.sql, `thread web attachments (${name})`);
  }

  /** Records an upload (unsent); false when the visitor already holds MAX_UNSENT unsent ones. */
  add(a: WebAttachment): boolean {
    const now = this.now();
    const unsent = this.sql("count unsent")<{
      n: number;
    }>`SELECT COUNT(*) AS n FROM web_attachments WHERE message_id IS NULL AND expires_at > ${now}`[0].n;
    if (unsent >= MAX_UNSENT) return false;
    const expiresAt = now + UNSENT_TTL_MS;
    this.sql("add").run`INSERT INTO web_attachments (id, kind, content_type, bytes, filename, at, message_id, expires_at)
      VALUES (${a.attachment_id}, ${a.kind}, ${a.content_type}, ${a.bytes}, ${a.filename}, ${now}, NULL, ${expiresAt})`;
    this.lower(expiresAt);
    return true;
  }

  /** Forgets an upload whose bytes could not be stored (nothing else refers to it yet). */
  remove(id: string): void {
    this.sql("remove").run`DELETE FROM web_attachments WHERE id = ${id}`;
    this.due = undefined;
  }

  /**
   * The live uploads `ids` name, in order; or the index of the first one this thread does not hold
   * (never uploaded here, expired, forgotten).
   */
  read(ids: readonly string[]): WebAttachment[] | { missing: number } {
    if (!ids.length) return [];
    const rows = this.sql("read")<Row>`SELECT id, kind, content_type, bytes, filename FROM web_attachments
      WHERE id IN (${sqlList(ids)}) AND expires_at > ${this.now()}`;
    const byId = new Map(rows.map((r) => [r.id, r]));
    const out: WebAttachment[] = [];
    for (const [i, id] of ids.entries()) {
      const r = byId.get(id);
      if (!r) return { missing: i };
      out.push(asAttachment(r));
    }
    return out;
  }

  /**
   * The visitor's entry of message `messageId` was written with `part`: the uploads it names that
   * no message carried yet now belong to that message and expire with its entry. An upload sent
   * again keeps the first message's lifetime, so it never outlives the first record naming it.
   */
  bindFromPart(part: unknown, messageId: string, expiresAt: number): void {
    const ids = idsInPart(part);
    if (!ids.length) return;
    this.sql("bind").run`UPDATE web_attachments SET message_id = ${messageId}, expires_at = ${expiresAt}
      WHERE id IN (${sqlList(ids)}) AND message_id IS NULL AND expires_at > ${this.now()}`;
    this.due = undefined;
  }

  /** Record `messageId` reached its retention: its uploads expire with it. True when any did. */
  expire(messageId: string, expiresAt: number): boolean {
    const changed = this.sql("expire")<{
      id: string;
    }>`UPDATE web_attachments SET expires_at = ${expiresAt} WHERE message_id = ${messageId} AND expires_at > ${this.now()} RETURNING id`;
    if (changed.length) this.due = undefined;
    return changed.length > 0;
  }

  /** The records `messageIds` were forgotten: their uploads are gone from now on (`reap` deletes them). */
  doomFor(messageIds: readonly string[]): void {
    for (let i = 0; i < messageIds.length; i += 50)
      this.sql("doom for").run`UPDATE web_attachments SET expires_at = 0 WHERE message_id IN (${sqlList(messageIds.slice(i, i + 50))})`;
    this.due = undefined;
  }

  /** The session ended: uploads no message carried go; with `all`, every upload goes. */
  doom(all: boolean): void {
    if (all) this.sql("doom all").run`UPDATE web_attachments SET expires_at = 0`;
    else this.sql("doom unsent").run`UPDATE web_attachments SET expires_at = 0 WHERE message_id IS NULL`;
    this.due = undefined;
  }

  /**
   * The earliest expiry as this instance knows it (undefined: unknown). It is read with the
   * transcript's in one statement (WebVisitor.dueAt), so a message costs no read of its own.
   */
  knownDue(): number | null | undefined {
    return this.due;
  }

  /** The earliest expiry, as read from storage. */
  setDue(at: number | null): void {
    this.due = at;
  }

  /** When the alarm must reap next: the earliest expiry, but no sooner than a failed delete's pause. */
  wake(): number | null {
    return this.due === null || this.due === undefined ? null : Math.max(this.due, this.retryAt);
  }

  private lower(at: number): void {
    if (this.due === null || (typeof this.due === "number" && at < this.due)) this.due = at;
  }

  /**
   * Deletes the uploads past their expiry: their objects first, then their rows. A bucket that
   * fails keeps the rows (they read as gone) and the alarm tries again. Answers how many went.
   */
  async reap(): Promise<number> {
    let gone = 0;
    for (;;) {
      const ids = this.sql("reap due")<{ id: string }>`SELECT id FROM web_attachments WHERE expires_at <= ${this.now()} LIMIT 500`.map((r) => r.id);
      if (!ids.length) break;
      try {
        await this.drop(ids.map(attachmentKey));
      } catch (err) {
        console.error(
          JSON.stringify({ event: "web_attachments_delete_failed", count: ids.length, reason: err instanceof Error ? err.message : "unknown error" }),
        );
        this.due = undefined;
        this.retryAt = this.now() + RETRY_MS;
        await this.arm();
        return gone;
      }
      this.sql("reap rows").run`DELETE FROM web_attachments WHERE id IN (${sqlList(ids)})`;
      gone += ids.length;
      if (ids.length < 500) break;
    }
    this.due = undefined;
    this.retryAt = 0;
    return gone;
  }
}

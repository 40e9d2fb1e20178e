/**
 * A web visitor's side of a thread (docs/channels.md "Web"): the session that lets a browser
 * speak on this thread, the transcript the page shows, and the live sockets that watch it.
 *
 * - A session is one row: the identity it was minted for, the SHA-256 of its secret (the
 *   secret itself is never stored, and keys the row), its expiry, its last use and the link
 *   parameters captured with it. An anonymous visitor's thread keeps one (its address is its
 *   device's: a new session replaces it); a verified user's thread keeps one per device, at most
 *   MAX_DEVICE_SESSIONS, the least recently used dropped past it. Each is checked, refreshed,
 *   swept and ended on its own. The visitor's profile (pre-chat answers, the site's vouched
 *   claims) is kept beside them and ends with the last of them (`WEB_PROFILE_SCHEMA`). A
 *   just-minted session is `pending` with a short expiry until its credential first comes back,
 *   so a page load that never returns leaves nothing lasting: the object's alarm is armed at the
 *   earliest session expiry and sweeps the sessions past it (`sweepExpired`), pending or not, and
 *   the object then deletes its whole storage when they were all it held
 *   (src/conversations/thread/vacancy.ts).
 * - The transcript is append-only, numbered by `seq`: a reconnect asks for what follows the last
 *   seq it rendered, so a reload shows each entry once. Visitor entries are written when their
 *   message is accepted, answers when delivery "sends" them here.
 * - The transcript is a copy of records (docs/security.md "Every copy of a conversation"): each
 *   entry dies with its record. It is written with the earliest expiry its record can have (a
 *   retention window from now: a record's retention starts at its terminal transition, which comes
 *   later), moved to the record's own expiry when the record reaches it (`expireFor`), read as gone
 *   once past it and deleted by the alarm (`pruneExpired`). Forgetting the record's thread deletes
 *   it wherever it lives (`forgetEntries`), also in the visitor's own thread when the record lived
 *   on a linked person's.
 * - Sockets hibernate (the runtime holds them while the object sleeps); an entry is pushed to each
 *   socket whose own session still lives. A socket remembers the session it was opened under (its
 *   attachment holds the session's secret hash); a push that finds that session ended, expired or
 *   replaced sends it nothing and closes it (WEB_SESSION_ENDED_CODE), while the sockets of the
 *   user's other devices go on. The check is one read of this object's own SQLite per push, no D1
 *   and no call out.
 */
import { z } from "zod";
import { parseMarkdown } from "../../shared/markdown";
import { RATEABLE_ROLES, WEB_HEADERS, type WebEntry, WebEntryRole, type WebFrame, type WebProfile, type WebSessionCheck } from "../model/web";
import type { AnswerRating } from "../model/record";
import { type ObjectSchema, type ObjectSql, keyValueVersionRow, objectSql, sqlList, sqlPart } from "../../platform/persistence/object-sql";
import { parseStored } from "../../platform/persistence/stored-json";
import { channelThreadId } from "../../shared/thread-id";
import type { WebAttachments } from "./web-attachments";
import { must } from "../../platform/must";
import { ProfileValue, VOUCHED_KEYS, type Vouched } from "../../shared/visitor-profile";

/**
 * The visitor's profile (`web_profile`, one row): the pre-chat answers and the site's vouched
 * claims, on its own version line (meta `web_profile_schema_version`) beside the records'. It
 * belongs to the visitor's sessions: it is read only through a live session's check, a new
 * session replacing a live one (the same verified visitor on another device) keeps it, and ending
 * the last session (a rotation, the sweep, forget, erase) or outliving it deletes it.
 */
export const WEB_PROFILE_SCHEMA: ObjectSchema = {
  name: "thread-web-profile",
  versionRow: keyValueVersionRow("meta", "web_profile_schema_version"),
  steps: [["CREATE TABLE IF NOT EXISTS web_profile (id INTEGER PRIMARY KEY CHECK (id = 1), answers TEXT, vouched TEXT, at INTEGER NOT NULL)"]],
};

const StoredAnswers = z.record(z.string(), ProfileValue);
const StoredVouched = z.partialRecord(z.enum(VOUCHED_KEYS), z.string());

/**
 * Where a web record's entries belong: the visitor's own thread on the route, which holds the
 * session and the page's sockets, also when the record lives on a linked person's thread.
 */
export function webHome(rec: { route_name: string; client_address: string | null }): string | null {
  return rec.client_address ? channelThreadId(rec.route_name, rec.client_address) : null;
}

/** Appends an entry in another thread object (a linked person's record, shown in the visitor's own thread). */
export type RemoteAppend = (
  home: string,
  role: WebEntry["role"],
  text: string,
  part: unknown,
  messageId: string | null,
  expiresAt: number,
  stopped?: boolean,
) => Promise<number | null>;

/** Moves the expiry of a record's entries in another thread object (the record reached its retention). */
export type RemoteExpire = (home: string, messageId: string, expiresAt: number) => Promise<void>;

/** The other thread objects a record's entries may live in (see `webHome`). */
export interface RemoteTranscript {
  append: RemoteAppend;
  expire: RemoteExpire;
}

/** Where the object's hibernatable sockets are reached (the object's ctx, behind a seam for tests). */
export interface WebSockets {
  all(): WebSocket[];
  accept(ws: WebSocket): void;
}

const SessionRow = z.object({
  identity: z.string(),
  secret_hash: z.string(),
  expires_at: z.number(),
  params: z.string().nullable(),
});

const EntryRow = z.object({
  seq: z.number(),
  role: WebEntryRole,
  text: z.string(),
  part: z.string().nullable(),
  message_id: z.string().nullable(),
  at: z.number(),
  stopped: z.number().nullable(),
  rating: z.enum(["up", "down"]).nullable(),
});

/**
 * The entry as the page gets it: an answer entry of a record says the visitor's own rating (null:
 * none), the others say nothing of ratings.
 */
function pageEntry(e: Omit<WebEntry, "rating" | "md">, rating: AnswerRating | null): WebEntry {
  const shown = e.role === "visitor" ? "" : e.text || questionPrompt(e.part);
  const entry: WebEntry = shown ? { ...e, md: parseMarkdown(shown) } : { ...e };
  if (e.message_id !== null && RATEABLE_ROLES.has(e.role)) entry.rating = rating;
  return entry;
}

/** A question part's prompt (what the page shows for an entry without text), or "". */
function questionPrompt(part: unknown): string {
  if (!part || typeof part !== "object" || !("question" in part)) return "";
  const q = part.question;
  return q && typeof q === "object" && "prompt" in q && typeof q.prompt === "string" ? q.prompt : "";
}

/** Where the live entries are: not past their expiry (an entry without one predates expiries: see `pruneExpired`). */
/** An entry not past its expiry at `now`. */
const live = (now: number) => sqlPart`(expires_at IS NULL OR expires_at > ${now})`;

export const WEB_SESSION_ENDED_CODE = 4401;

/** A socket's attachment: the secret hash of the session it was opened under. */
interface SocketSession {
  session: string;
}

export class WebVisitor {
  /**
   * The sessions' expiries by secret hash (undefined: not read yet). Only this class writes
   * `web_session`, so the map stays exact once read; the object reads it when it starts
   * (`loadExpiry`), so arming the alarm and pushing a draft read nothing.
   */
  private sessions: Map<string, number> | undefined = undefined;

  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly sockets: WebSockets,
    private readonly now: () => number,
    /** This object's thread id, once it knows it. */
    private readonly ownId: () => string | null = () => null,
    private readonly remote: RemoteTranscript | null = null,
    /** The answer retention in force (`CONVERSATIONS_ANSWER_RETENTION_TTL_SECONDS`), ms. */
    private readonly retentionMs: () => number = () => 2_592_000_000,
    /** Re-arms the object's alarm after an entry's expiry was written (ThreadAlarm.arm). */
    private readonly arm: () => Promise<void> = async () => {},
    /** What a page that just opened its stream is told of the running turn (src/conversations/thread/live-turn.ts). */
    private readonly liveFrames: () => WebFrame[] = () => [],
    /** The visitor's uploads (src/conversations/thread/web-attachments.ts): they live and die with the entries that show them. */
    readonly attachments: WebAttachments | null = null,
  ) {}

  /** The earliest entry expiry, kept in memory like the records' (undefined: read it at the next use). */
  private due: number | null | undefined = undefined;

  /**
   * Appends the entry of a record of this thread where its visitor's page reads it: here when this
   * is the visitor's own thread, else in that thread's object. The entry expires a retention window
   * from now unless the record's own expiry moves it (`expireFor`).
   */
  appendFor(
    rec: { route_name: string; client_address: string | null },
    role: WebEntry["role"],
    text: string,
    part: unknown,
    messageId: string | null,
    stopped = false,
  ): number | Promise<number | null> {
    const home = webHome(rec);
    const own = this.ownId();
    const expiresAt = this.now() + this.retentionMs();
    if (!home || home === own || !this.remote) return this.append(role, text, part, messageId, expiresAt, stopped);
    return this.remote.append(home, role, text, part, messageId, expiresAt, stopped);
  }

  /**
   * A record of this thread reached its retention (`expiresAt`): its entries, wherever its visitor's
   * page reads them, expire with it. A failure to reach another object is logged and leaves those
   * entries their earlier expiry, so they still never outlive the record.
   */
  async expireFor(rec: { route_name: string; client_address: string | null; message_id: string }, expiresAt: number): Promise<void> {
    const home = webHome(rec);
    if (!home) return;
    if (home === this.ownId() || !this.remote) {
      await this.expire(rec.message_id, expiresAt);
      return;
    }
    try {
      await this.remote.expire(home, rec.message_id, expiresAt);
    } catch (err) {
      console.error(
        JSON.stringify({ event: "web_transcript_expire_failed", message_id: rec.message_id, reason: err instanceof Error ? err.message : "unknown error" }),
      );
    }
  }

  /** Sets the expiry of record `messageId`'s entries (and of the uploads it carried) here, and re-arms the alarm for it. */
  async expire(messageId: string, expiresAt: number): Promise<void> {
    const changed = this.sql("transcript expire")<{
      seq: number;
    }>`UPDATE web_transcript SET expires_at = ${expiresAt} WHERE message_id = ${messageId} RETURNING seq`;
    const uploads = this.attachments?.expire(messageId, expiresAt) ?? false;
    if (!changed.length && !uploads) return;
    this.due = undefined;
    await this.arm();
  }

  /**
   * The records `messageIds` were forgotten or erased on their thread: their entries go (and the
   * uploads they carried: `reap` deletes them), and the session ends (its open pages are told and
   * closed, since they show what was forgotten). The visitor's next page load mints a new session
   * on a new address.
   */
  forgetEntries(messageIds: string[]): number {
    this.attachments?.doomFor(messageIds);
    let removed = 0;
    for (let i = 0; i < messageIds.length; i += 50) {
      const ids = messageIds.slice(i, i + 50);
      removed += this.sql("transcript forget")`DELETE FROM web_transcript WHERE message_id IN (${sqlList(ids)}) RETURNING seq`.length;
      this.sql("ratings forget").run`DELETE FROM web_ratings WHERE message_id IN (${sqlList(ids)})`;
    }
    this.due = undefined;
    this.end(false);
    return removed;
  }

  /**
   * The earliest instant an entry expires (the alarm's wake for `pruneExpired`); an entry written
   * before entries had expiries makes it now, so the next pass gives it one. From memory, unless
   * `fresh` (the alarm's pass acts on what is stored).
   */
  dueAt(fresh = false): number | null {
    const uploads = this.attachments;
    if (fresh || this.due === undefined || (uploads && uploads.knownDue() === undefined)) {
      // The uploads' earliest expiry rides in the same statement: no read of its own on a message.
      const row = this.sql("transcript due")<{
        e: number | null;
        legacy: number;
        a: number | null;
      }>`SELECT MIN(expires_at) AS e, EXISTS (SELECT 1 FROM web_transcript WHERE expires_at IS NULL) AS legacy,
           (SELECT MIN(expires_at) FROM web_attachments) AS a FROM web_transcript`[0];
      this.due = row.legacy ? this.now() : row.e;
      uploads?.setDue(row.a);
    }
    const wake = uploads?.wake() ?? null;
    return wake === null ? this.due : this.due === null ? wake : Math.min(this.due, wake);
  }

  /** Deletes the bytes and rows of the uploads past their expiry or ended (see WebAttachments.reap). */
  async reap(): Promise<void> {
    await this.attachments?.reap();
  }

  /** Deletes the entries past their expiry (the alarm's pass); answers how many went. */
  pruneExpired(nowMs: number): number {
    // Entries written before expiries existed get a retention window from now.
    this.sql("transcript backfill expiry").run`UPDATE web_transcript SET expires_at = ${nowMs + this.retentionMs()} WHERE expires_at IS NULL`;
    const gone = this.sql("transcript prune")`DELETE FROM web_transcript WHERE expires_at <= ${nowMs} RETURNING seq`.length;
    // The visitor's rating of an entry goes with it.
    if (gone)
      this.sql("ratings prune").run`DELETE FROM web_ratings WHERE message_id NOT IN (SELECT message_id FROM web_transcript WHERE message_id IS NOT NULL)`;
    this.due = undefined;
    return gone;
  }

  /** The tag for statement `name`, named in its errors. */
  private sql(name: string): ObjectSql {
    return objectSql(this.storage.sql, `thread web (${name})`);
  }

  /**
   * Starts a session, pending until its credential first comes back. With `keep` 1 (an anonymous
   * visitor) it replaces any other; above 1 (a verified user's devices) it joins them, and the least
   * recently used past `keep` end as `endSession` ends them. `vouched` (a verified visitor's token
   * claims) replaces the claims the profile keeps; absent, they stay.
   */
  open(identity: string, secretHash: string, pendingTtlMs: number, params: Record<string, string> | null, keep = 1, vouched?: Vouched): void {
    const now = this.now();
    const expiresAt = now + pendingTtlMs;
    // The profile outlives only the replacement of a live session or a device joining one (the
    // same visitor elsewhere): after expired or ended ones, the visitor starts over.
    if (!this.hasSession()) this.sql("profile clear").run`DELETE FROM web_profile`;
    const sessions = this.sessionMap();
    if (keep <= 1) {
      this.sql("session clear").run`DELETE FROM web_session`;
      sessions.clear();
    }
    this.sql("session open").run`INSERT OR REPLACE INTO web_session (secret_hash, identity, expires_at, pending, params, used_at)
      VALUES (${secretHash}, ${identity}, ${expiresAt}, 1, ${params ? JSON.stringify(params) : null}, ${now})`;
    sessions.set(secretHash, expiresAt);
    if (keep > 1) {
      const dropped = this.sql("sessions past the cap")<{
        secret_hash: string;
      }>`SELECT secret_hash FROM web_session ORDER BY used_at DESC, rowid DESC LIMIT -1 OFFSET ${keep}`;
      for (const row of dropped) this.endSession(row.secret_hash);
    }
    if (vouched) {
      const text = Object.keys(vouched).length ? JSON.stringify(vouched) : null;
      this.sql("profile vouch").run`INSERT INTO web_profile (id, answers, vouched, at) VALUES (1, NULL, ${text}, ${now})
        ON CONFLICT(id) DO UPDATE SET vouched = excluded.vouched, at = excluded.at`;
    }
  }

  /** Keeps the visitor's pre-chat answers (replacing earlier ones), already checked against the form by the door. */
  keepAnswers(answers: Record<string, ProfileValue>): void {
    this.sql("profile answers").run`INSERT INTO web_profile (id, answers, vouched, at) VALUES (1, ${JSON.stringify(answers)}, NULL, ${this.now()})
      ON CONFLICT(id) DO UPDATE SET answers = excluded.answers, at = excluded.at`;
  }

  /** The visitor's profile as kept (null: nothing given). */
  profile(): WebProfile | null {
    const row = this.sql("profile read")<{ answers: string | null; vouched: string | null }>`SELECT answers, vouched FROM web_profile WHERE id = 1`[0];
    if (!row || (row.answers === null && row.vouched === null)) return null;
    return {
      answers: row.answers === null ? null : parseStored(StoredAnswers, row.answers, "web_profile.answers"),
      vouched: row.vouched === null ? null : parseStored(StoredVouched, row.vouched, "web_profile.vouched"),
    };
  }

  /** Reads the sessions' expiries (once per instance, when the object starts). */
  loadExpiry(): void {
    const rows = this.sql("session expiries")<{ expires_at: number; secret_hash: string }>`SELECT secret_hash, expires_at FROM web_session`;
    this.sessions = new Map(rows.map((r) => [r.secret_hash, r.expires_at]));
  }

  private sessionMap(): Map<string, number> {
    if (this.sessions === undefined) this.loadExpiry();
    return must(this.sessions, "the loaded sessions");
  }

  /** When the alarm must sweep a session (the earliest expiry; null: there is none). From memory once read. */
  expiryDue(): number | null {
    let due: number | null = null;
    for (const at of this.sessionMap().values()) if (due === null || at < due) due = at;
    return due;
  }

  /**
   * The alarm's sweep: ends each session past its expiry (a pending one whose credential never
   * came back, or a confirmed one unused for its lifetime), as `endSession` would, and leaves the
   * others; true when one ended.
   */
  sweepExpired(now: number): boolean {
    const due = this.expiryDue();
    if (due === null || due > now) return false;
    this.loadExpiry();
    let ended = false;
    for (const [hash, at] of this.sessionMap()) {
      if (at > now) continue;
      this.endSession(hash);
      ended = true;
    }
    return ended;
  }

  /**
   * Checks a presented credential: the identity and the secret's hash must both match a live
   * session. A match refreshes that session's expiry (and confirms it when pending). `params`
   * replaces its captured link parameters when given (a later navigation that carried some).
   *
   * The row is found by the hash itself: a lookup's timing could only tell a prober about hashes
   * of secrets (SHA-256 of 32 random bytes), which they cannot choose to match.
   */
  check(identity: string, secretHash: string, ttlMs: number, params?: Record<string, string>): WebSessionCheck {
    const row = this.sql("session read")`SELECT identity, secret_hash, expires_at, params FROM web_session WHERE secret_hash = ${secretHash}`[0];
    const session = row ? SessionRow.parse(row) : null;
    const now = this.now();
    if (!session || session.expires_at <= now || session.identity !== identity || !sameHash(session.secret_hash, secretHash)) return { ok: false };
    const kept = params !== undefined ? (Object.keys(params).length ? JSON.stringify(params) : session.params) : session.params;
    this.sql("session refresh")
      .run`UPDATE web_session SET expires_at = ${now + ttlMs}, pending = 0, params = ${kept}, used_at = ${now} WHERE secret_hash = ${secretHash}`;
    this.sessionMap().set(secretHash, now + ttlMs);
    return { ok: true, params: kept ? z.record(z.string(), z.string()).parse(JSON.parse(kept)) : null, profile: this.profile() };
  }

  /** Keeps a one-time stream ticket's hash for session `sessionHash` (the widget's socket cannot carry a header). */
  keepTicket(ticketHash: string, ttlMs: number, sessionHash: string): void {
    const now = this.now();
    this.sql("ticket prune").run`DELETE FROM web_ticket WHERE expires_at <= ${now}`;
    this.sql("ticket keep")
      .run`INSERT OR REPLACE INTO web_ticket (ticket_hash, expires_at, session_hash) VALUES (${ticketHash}, ${now + ttlMs}, ${sessionHash})`;
  }

  /** Spends a stream ticket: its session's hash once, within its lifetime, while that session lives; else null. */
  spendTicket(ticketHash: string): string | null {
    const row = this.sql("ticket spend")<{
      expires_at: number;
      session_hash: string;
    }>`DELETE FROM web_ticket WHERE ticket_hash = ${ticketHash} RETURNING expires_at, session_hash`[0];
    return row && row.expires_at > this.now() && this.liveSessionHashes().has(row.session_hash) ? row.session_hash : null;
  }

  /**
   * Ends every session (and with `transcript`, the transcript too); open sockets are told and
   * closed. The uploads no message carried go with the sessions, every upload with the transcript:
   * the caller then deletes their bytes (`reap`).
   */
  end(transcript: boolean): void {
    this.attachments?.doom(transcript);
    this.sql("session end").run`DELETE FROM web_session`;
    this.sql("tickets end").run`DELETE FROM web_ticket`;
    this.sql("profile end").run`DELETE FROM web_profile`;
    this.sessionMap().clear();
    if (transcript) {
      this.sql("transcript clear").run`DELETE FROM web_transcript`;
      this.sql("ratings clear").run`DELETE FROM web_ratings`;
      this.due = undefined;
    }
    for (const ws of this.sockets.all()) closeEnded(ws);
  }

  /**
   * Ends one session (one device's): its row and tickets go, and the sockets opened under it are
   * told and closed; the other sessions and their sockets go on.
   */
  endSession(secretHash: string): void {
    this.sql("session end one").run`DELETE FROM web_session WHERE secret_hash = ${secretHash}`;
    this.sql("tickets end one").run`DELETE FROM web_ticket WHERE session_hash = ${secretHash}`;
    this.sessionMap().delete(secretHash);
    if (this.sessionMap().size === 0) {
      this.sql("profile end").run`DELETE FROM web_profile`;
      // The last session took the uploads no message carried with it (the caller reaps them).
      this.attachments?.doom(false);
    }
    for (const ws of this.sockets.all()) if (heldSession(ws) === secretHash) closeEnded(ws);
  }

  /** True while a live session exists (a page may still be watching). */
  hasSession(): boolean {
    return this.sql("session live")<{ n: number }>`SELECT 1 AS n FROM web_session WHERE expires_at > ${this.now()} LIMIT 1`.length > 0;
  }

  /**
   * Appends one entry that expires at `expiresAt`, pushes it to the open sockets and returns its
   * seq; `stopped` marks the answer of a turn a stop door ended.
   */
  append(role: WebEntry["role"], text: string, part: unknown, messageId: string | null, expiresAt: number, stopped = false): number {
    const at = this.now();
    const row = this.sql("transcript append")<{
      seq: number;
    }>`INSERT INTO web_transcript (role, text, part, message_id, at, expires_at, stopped) VALUES (${role}, ${text}, ${part === null || part === undefined ? null : JSON.stringify(part)}, ${messageId}, ${at}, ${expiresAt}, ${stopped ? 1 : null}) RETURNING seq`[0];
    if (this.due === null || (typeof this.due === "number" && expiresAt < this.due)) this.due = expiresAt;
    // The uploads a visitor's message carried belong to its record from now on.
    if (role === "visitor" && messageId) this.attachments?.bindFromPart(part, messageId, expiresAt);
    const entry = pageEntry({ seq: row.seq, role, text, part: part ?? null, at: new Date(at).toISOString(), message_id: messageId }, null);
    if (stopped) entry.stopped = true;
    const frame = JSON.stringify({ type: "entry", entry } satisfies WebFrame);
    const sockets = this.sockets.all();
    const live = sockets.length ? this.liveSessionHashes() : null;
    for (const ws of sockets) {
      try {
        const held = heldSession(ws);
        if (!live || !held || !live.has(held)) ws.close(WEB_SESSION_ENDED_CODE, "session ended");
        else ws.send(frame);
      } catch {
        // A socket closing under us: its page reconnects with its last seq.
      }
    }
    return row.seq;
  }

  /**
   * Sends a live frame (the visitor's turn, its draft) to the open pages of the live sessions, as
   * `append` pushes an entry, but stores nothing and reads nothing: the sessions' expiries are held
   * in memory (only this class writes them), so a draft costs no statement.
   */
  pushLive(frame: WebFrame): void {
    const sockets = this.sockets.all();
    if (!sockets.length) return;
    const now = this.now();
    const sessions = this.sessionMap();
    const text = JSON.stringify(frame);
    for (const ws of sockets) {
      try {
        const held = heldSession(ws);
        const until = held ? sessions.get(held) : undefined;
        if (until !== undefined && until > now) ws.send(text);
      } catch {
        // A socket closing under us: its page learns the turn again when it reconnects.
      }
    }
  }

  /** Appends an entry of no record of this thread (a notification), expiring a retention window from now. */
  appendNotice(text: string, part: unknown): number {
    return this.append("bot", text, part, null, this.now() + this.retentionMs());
  }

  /** The secret hashes of the live sessions (not ended, not expired), read from storage. */
  private liveSessionHashes(): Set<string> {
    const rows = this.sql("session live hashes")<{ secret_hash: string }>`SELECT secret_hash FROM web_session WHERE expires_at > ${this.now()}`;
    return new Set(rows.map((r) => r.secret_hash));
  }

  /** The live entries after `after`, oldest first (an entry past its expiry reads as gone), with the visitor's ratings. */
  entriesAfter(after: number, limit = 1000): WebEntry[] {
    return this.sql("transcript read")`SELECT t.seq, t.role, t.text, t.part, t.message_id, t.at, t.stopped, r.rating FROM web_transcript t
       LEFT JOIN web_ratings r ON r.message_id = t.message_id WHERE t.seq > ${after} AND ${live(this.now())} ORDER BY t.seq LIMIT ${limit}`.map((r) => {
      const e = EntryRow.parse(r);
      const entry = pageEntry(
        {
          seq: e.seq,
          role: e.role,
          text: e.text,
          part: e.part === null ? null : JSON.parse(e.part),
          at: new Date(e.at).toISOString(),
          message_id: e.message_id,
        },
        e.rating,
      );
      if (e.stopped) entry.stopped = true;
      return entry;
    });
  }

  /** Does the transcript hold a live answer entry (the target's or an operator's) of record `messageId`? */
  answerEntry(messageId: string): boolean {
    const roles = [...RATEABLE_ROLES];
    return (
      this.sql("answer entry")`SELECT 1 FROM web_transcript WHERE message_id = ${messageId} AND role IN (${sqlList(roles)}) AND ${live(this.now())} LIMIT 1`
        .length > 0
    );
  }

  /** Keeps the visitor's rating of record `messageId`'s entries (null: none), shown on reload. */
  setRating(messageId: string, rating: AnswerRating | null): void {
    if (rating === null) this.sql("rating clear").run`DELETE FROM web_ratings WHERE message_id = ${messageId}`;
    else this.sql("rating set").run`INSERT OR REPLACE INTO web_ratings (message_id, rating) VALUES (${messageId}, ${rating})`;
  }

  /**
   * Opens a live socket under session `session`: the backlog after `after`, then `ready`, then the
   * running turn and its draft when a turn is not settled (a reload mid-answer shows the draft);
   * later entries and frames follow as they come. At most `maxSockets` per session: each of a
   * verified user's devices has its own allowance.
   */
  connect(after: number, maxSockets: number, session: string): Response {
    if (this.sockets.all().filter((ws) => heldSession(ws) === session).length >= maxSockets)
      return Response.json({ error: "too many open streams for this visitor", code: "too_many_streams" }, { status: 429 });
    if (!this.liveSessionHashes().has(session))
      return Response.json({ error: "no web session for this conversation", code: "session_missing" }, { status: 401 });
    const [client, server] = Object.values(new WebSocketPair());
    this.sockets.accept(server);
    server.serializeAttachment({ session } satisfies SocketSession);
    for (const entry of this.entriesAfter(after)) server.send(JSON.stringify({ type: "entry", entry } satisfies WebFrame));
    const last = this.sql("transcript last")<{ seq: number | null }>`SELECT MAX(seq) AS seq FROM web_transcript`[0]?.seq ?? 0;
    server.send(JSON.stringify({ type: "ready", after: Math.max(after, last) } satisfies WebFrame));
    for (const frame of this.liveFrames()) server.send(JSON.stringify(frame));
    return new Response(null, { status: 101, webSocket: client });
  }
}

/** The secret hash of the session socket `ws` was opened under (null: none, or a socket closing). */
function heldSession(ws: WebSocket): string | null {
  try {
    return (ws.deserializeAttachment() as SocketSession | null)?.session ?? null;
  } catch {
    return null;
  }
}

/** Tells a page its session ended and closes its socket. */
function closeEnded(ws: WebSocket): void {
  try {
    ws.send(JSON.stringify({ type: "ended" } satisfies WebFrame));
    ws.close(WEB_SESSION_ENDED_CODE, "session ended");
  } catch {
    // Already closing.
  }
}

/** Compares two hex hashes without an early exit on the first differing character. */
function sameHash(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/**
 * The thread object's fetch: the web door forwards a visitor's stream request here with the
 * credential it read (the identity and the secret's hash), the cursor and the caps, as headers only
 * the Worker can set (an object's fetch is not reachable from outside).
 */
export async function webStream(web: WebVisitor, request: Request): Promise<Response> {
  if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") return Response.json({ error: "expected a WebSocket upgrade" }, { status: 426 });
  const h = request.headers;
  const identity = h.get(WEB_HEADERS.identity) ?? "";
  const hash = h.get(WEB_HEADERS.secretHash) ?? "";
  const ttlMs = Number(h.get(WEB_HEADERS.ttlMs) ?? "0");
  const after = Number(h.get(WEB_HEADERS.after) ?? "0");
  const max = Number(h.get(WEB_HEADERS.maxStreams) ?? "1");
  const ticket = h.get(WEB_HEADERS.ticketHash);
  const session = ticket ? web.spendTicket(ticket) : identity && hash && web.check(identity, hash, ttlMs).ok ? hash : null;
  if (!session) return Response.json({ error: "no web session for this conversation", code: "session_missing" }, { status: 401 });
  return web.connect(Number.isSafeInteger(after) && after > 0 ? after : 0, max, session);
}

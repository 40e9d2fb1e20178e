/**
 * A web visitor's side of a thread (docs/channels.md "Web"): the session that lets a browser
 * speak on this thread, the transcript the page shows, and the live sockets that watch it.
 *
 * - The session is one row: the identity it was minted for, the SHA-256 of its secret (the
 *   secret itself is never stored), its expiry and the link parameters captured with it. A
 *   just-minted session is `pending` with a short expiry until its credential first comes back,
 *   so a page load that never returns leaves nothing lasting.
 * - The transcript is append-only, numbered by `seq`: a reconnect asks for what follows the last
 *   seq it rendered, so a reload shows each entry once. Visitor entries are written when their
 *   message is accepted, answers when delivery "sends" them here.
 * - Sockets hibernate (the runtime holds them while the object sleeps); an entry is pushed to each
 *   socket whose session is still the live one. A socket remembers the session it was opened under
 *   (its attachment holds the session's secret hash); a push that finds that session ended, expired
 *   or replaced sends it nothing and closes it (WEB_SESSION_ENDED_CODE). The check is one read of
 *   this object's own SQLite per push, no D1 and no call out.
 */
import { z } from "zod";
import { WEB_HEADERS, type WebEntry, WebEntryRole, type WebSessionCheck } from "../model/web";
import { execStatement } from "../../platform/persistence/object-sql";
import { channelThreadId } from "../model/thread-id";

/**
 * Where a web record's entries belong: the visitor's own thread on the route, which holds the
 * session and the page's sockets, also when the record lives on a linked person's thread.
 */
export function webHome(rec: { route_name: string; client_address: string | null }): string | null {
  return rec.client_address ? channelThreadId(rec.route_name, rec.client_address) : null;
}

/** Appends an entry in another thread object (a linked person's record, shown in the visitor's own thread). */
export type RemoteAppend = (home: string, role: WebEntry["role"], text: string, part: unknown, messageId: string | null) => Promise<number | null>;

/** Where the object's hibernatable sockets are reached (the object's ctx, behind a seam for tests). */
export interface WebSockets {
  all(): WebSocket[];
  accept(ws: WebSocket): void;
}

const SessionRow = z.object({
  identity: z.string(),
  secret_hash: z.string(),
  expires_at: z.number(),
  pending: z.number(),
  params: z.string().nullable(),
});

const EntryRow = z.object({
  seq: z.number(),
  role: WebEntryRole,
  text: z.string(),
  part: z.string().nullable(),
  message_id: z.string().nullable(),
  at: z.number(),
});

/** Frames a socket receives (WEB stream protocol, docs/channels.md). */
export type WebFrame = { type: "ready"; after: number } | { type: "entry"; entry: WebEntry } | { type: "ended" };

export const WEB_SESSION_ENDED_CODE = 4401;

/** A socket's attachment: the secret hash of the session it was opened under. */
interface SocketSession {
  session: string;
}

export class WebVisitor {
  constructor(
    private readonly storage: DurableObjectStorage,
    private readonly sockets: WebSockets,
    private readonly now: () => number,
    /** This object's thread id, once it knows it. */
    private readonly ownId: () => string | null = () => null,
    private readonly remote: RemoteAppend | null = null,
  ) {}

  /**
   * Appends the entry of a record of this thread where its visitor's page reads it: here when this
   * is the visitor's own thread, else in that thread's object.
   */
  appendFor(
    rec: { route_name: string; client_address: string | null },
    role: WebEntry["role"],
    text: string,
    part: unknown,
    messageId: string | null,
  ): number | Promise<number | null> {
    const home = webHome(rec);
    const own = this.ownId();
    if (!home || home === own || !this.remote) return this.append(role, text, part, messageId);
    return this.remote(home, role, text, part, messageId);
  }

  private exec<T extends Record<string, SqlStorageValue>>(name: string, query: string, ...args: SqlStorageValue[]): T[] {
    return execStatement<T>(this.storage.sql, `thread web (${name})`, query, args).rows;
  }

  /** Starts a session (replacing any): pending until its credential first comes back. */
  open(identity: string, secretHash: string, pendingTtlMs: number, params: Record<string, string> | null): void {
    this.exec("session clear", "DELETE FROM web_session");
    this.exec(
      "session open",
      "INSERT INTO web_session (id, identity, secret_hash, expires_at, pending, params) VALUES (1, ?, ?, ?, 1, ?)",
      identity,
      secretHash,
      this.now() + pendingTtlMs,
      params ? JSON.stringify(params) : null,
    );
  }

  /**
   * Checks a presented credential: the identity and the secret's hash must both match a live
   * session. A match refreshes the expiry (and confirms a pending session). `params` replaces the
   * captured link parameters when given (a later navigation that carried some).
   */
  check(identity: string, secretHash: string, ttlMs: number, params?: Record<string, string>): WebSessionCheck {
    const row = this.exec("session read", "SELECT identity, secret_hash, expires_at, pending, params FROM web_session WHERE id = 1")[0];
    const session = row ? SessionRow.parse(row) : null;
    const now = this.now();
    if (!session || session.expires_at <= now || session.identity !== identity || !sameHash(session.secret_hash, secretHash)) return { ok: false };
    const kept = params !== undefined ? (Object.keys(params).length ? JSON.stringify(params) : session.params) : session.params;
    this.exec("session refresh", "UPDATE web_session SET expires_at = ?, pending = 0, params = ? WHERE id = 1", now + ttlMs, kept);
    return { ok: true, params: kept ? z.record(z.string(), z.string()).parse(JSON.parse(kept)) : null };
  }

  /** Keeps a one-time stream ticket's hash (the widget's socket cannot carry a header). */
  keepTicket(ticketHash: string, ttlMs: number): void {
    const now = this.now();
    this.exec("ticket prune", "DELETE FROM web_ticket WHERE expires_at <= ?", now);
    this.exec("ticket keep", "INSERT OR REPLACE INTO web_ticket (ticket_hash, expires_at) VALUES (?, ?)", ticketHash, now + ttlMs);
  }

  /** Spends a stream ticket: true once, within its lifetime, while the session lives. */
  spendTicket(ticketHash: string): boolean {
    const row = this.exec<{ expires_at: number }>("ticket spend", "DELETE FROM web_ticket WHERE ticket_hash = ? RETURNING expires_at", ticketHash)[0];
    return Boolean(row && row.expires_at > this.now() && this.hasSession());
  }

  /** Ends the session (and with `transcript`, the transcript too); open sockets are told and closed. */
  end(transcript: boolean): void {
    this.exec("session end", "DELETE FROM web_session");
    this.exec("tickets end", "DELETE FROM web_ticket");
    if (transcript) this.exec("transcript clear", "DELETE FROM web_transcript");
    for (const ws of this.sockets.all()) {
      try {
        ws.send(JSON.stringify({ type: "ended" } satisfies WebFrame));
        ws.close(WEB_SESSION_ENDED_CODE, "session ended");
      } catch {
        // Already closing.
      }
    }
  }

  /** True while a live session exists (a page may still be watching). */
  hasSession(): boolean {
    const row = this.exec<{ expires_at: number }>("session live", "SELECT expires_at FROM web_session WHERE id = 1")[0];
    return Boolean(row && row.expires_at > this.now());
  }

  /** Appends one entry, pushes it to the open sockets and returns its seq. */
  append(role: WebEntry["role"], text: string, part: unknown, messageId: string | null): number {
    const at = this.now();
    const row = this.exec<{ seq: number }>(
      "transcript append",
      "INSERT INTO web_transcript (role, text, part, message_id, at) VALUES (?, ?, ?, ?, ?) RETURNING seq",
      role,
      text,
      part === null || part === undefined ? null : JSON.stringify(part),
      messageId,
      at,
    )[0];
    const entry: WebEntry = { seq: row.seq, role, text, part: part ?? null, at: new Date(at).toISOString(), message_id: messageId };
    const frame = JSON.stringify({ type: "entry", entry } satisfies WebFrame);
    const sockets = this.sockets.all();
    const live = sockets.length ? this.liveSessionHash() : null;
    for (const ws of sockets) {
      try {
        const held = (ws.deserializeAttachment() as SocketSession | null)?.session;
        if (live === null || !held || !sameHash(held, live)) ws.close(WEB_SESSION_ENDED_CODE, "session ended");
        else ws.send(frame);
      } catch {
        // A socket closing under us: its page reconnects with its last seq.
      }
    }
    return row.seq;
  }

  /** The secret hash of the live session, or null when there is none (ended, expired). */
  private liveSessionHash(): string | null {
    const row = this.exec<{ secret_hash: string; expires_at: number }>("session live hash", "SELECT secret_hash, expires_at FROM web_session WHERE id = 1")[0];
    return row && row.expires_at > this.now() ? row.secret_hash : null;
  }

  /** The entries after `after`, oldest first. */
  entriesAfter(after: number, limit = 1000): WebEntry[] {
    return this.exec(
      "transcript read",
      "SELECT seq, role, text, part, message_id, at FROM web_transcript WHERE seq > ? ORDER BY seq LIMIT ?",
      after,
      limit,
    ).map((r) => {
      const e = EntryRow.parse(r);
      return {
        seq: e.seq,
        role: e.role,
        text: e.text,
        part: e.part === null ? null : JSON.parse(e.part),
        at: new Date(e.at).toISOString(),
        message_id: e.message_id,
      };
    });
  }

  /** Opens a live socket: the backlog after `after`, then `ready`; later entries follow as appended. */
  connect(after: number, maxSockets: number): Response {
    if (this.sockets.all().length >= maxSockets)
      return Response.json({ error: "too many open streams for this visitor", code: "too_many_streams" }, { status: 429 });
    const session = this.liveSessionHash();
    if (session === null) return Response.json({ error: "no web session for this conversation", code: "session_missing" }, { status: 401 });
    const [client, server] = Object.values(new WebSocketPair());
    this.sockets.accept(server);
    server.serializeAttachment({ session } satisfies SocketSession);
    for (const entry of this.entriesAfter(after)) server.send(JSON.stringify({ type: "entry", entry } satisfies WebFrame));
    const last = this.exec<{ seq: number | null }>("transcript last", "SELECT MAX(seq) AS seq FROM web_transcript")[0]?.seq ?? 0;
    server.send(JSON.stringify({ type: "ready", after: Math.max(after, last) } satisfies WebFrame));
    return new Response(null, { status: 101, webSocket: client });
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
  const admitted = ticket ? web.spendTicket(ticket) : Boolean(identity && hash && web.check(identity, hash, ttlMs).ok);
  if (!admitted) return Response.json({ error: "no web session for this conversation", code: "session_missing" }, { status: 401 });
  return web.connect(Number.isSafeInteger(after) && after > 0 ? after : 0, max);
}

/**
 * ConsoleHub: one object per conversation route, holding the operator consoles that watch the
 * route live (docs/console.md "Live updates"). A thin shell: the tickets live in its
 * SQLite (src/console/hub-store.ts), the sockets in the runtime's WebSocket hibernation, so a
 * hub with quiet consoles is evicted from memory and costs nothing until the next notice. The
 * contract is src/console/rpc.ts.
 *
 * Each socket carries its ticket's holder (the user, the SHA-256 of the key that minted the ticket,
 * the route) and the instant its session ends (SOCKET_MAX_AGE_MS after the ticket was spent) as its
 * attachment. The key is checked again when the ticket is spent and before every push
 * (src/console/live-check.ts): a socket whose key was revoked, disabled or narrowed gets nothing
 * more and is closed (code KEY_REVOKED_CODE); one whose session is over is closed too (code
 * SESSION_OVER_CODE) and the console comes back with a new ticket. A push checks each distinct key
 * once: one read of its access epoch, D1 only after a change to that key was published.
 * Keep-alive `ping` text frames are answered `pong` by the runtime without waking the object.
 *
 * Presence (src/console/presence.ts): a console may send `{type: "presence", thread_id, state}`
 * (viewing, typing, left). The hub names the sender from the socket's holder, keeps the
 * announcement in that socket's attachment only (it dies with the socket), and fans it out to the
 * other users' sockets through the same checked push as a notice. A new socket gets the live
 * announcements at once; a socket that closes while it shows on a thread is announced gone. A
 * socket's frames past PRESENCE_FRAMES_PER_WINDOW are dropped; anything else closes it (1003).
 *
 * The sockets are bounded: SOCKETS_PER_KEY per key (a key's next one closes its oldest, code
 * SUPERSEDED_CODE) and SOCKETS_PER_HUB in all (a ticket past it is refused with 429, before it
 * is spent).
 */
import { DurableObject } from "cloudflare:workers";
import type { ConsoleHubRpc, ConsoleNotice } from "../src/console/rpc";
import type { Env } from "../src/platform/env";
import { type Clock, systemClock } from "../src/platform/clock";
import { startObject } from "../src/platform/persistence/object-start";
import { createHubStore, keepTicketRow, spendTicketRow } from "../src/console/hub-store";
import { type TicketHolder, holderStillAllowed } from "../src/console/live-check";
import {
  KEY_REVOKED_CODE,
  SESSION_OVER_CODE,
  SOCKETS_PER_HUB,
  SOCKETS_PER_KEY,
  SOCKET_MAX_AGE_MS,
  SUPERSEDED_CODE,
  isTicketShaped,
  ticketHash,
} from "../src/console/tickets";
import {
  type PresenceBudget,
  type PresenceEntry,
  type PresenceMark,
  parsePresenceFrame,
  presenceEntry,
  presenceFrame,
  presenceMark,
  spendPresenceBudget,
} from "../src/console/presence";

interface SocketSession extends TicketHolder {
  until: number;
  /** What this console announced last, while it holds. */
  presence?: PresenceMark;
  budget?: PresenceBudget;
}

const refusal = (status: number, error: string, code?: string) => Response.json(code ? { error, code } : { error }, { status });

export class ConsoleHub extends DurableObject<Env> implements ConsoleHubRpc {
  /** The clock the object reads time from. */
  private readonly clock: Clock = systemClock;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    startObject(ctx, { migrate: (storage) => createHubStore(storage.sql) });
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
  }

  async keepTicket(ticketHash: string, holder: TicketHolder, expiresAtMs: number): Promise<void> {
    keepTicketRow(this.ctx.storage.sql, ticketHash, holder, expiresAtMs, this.clock.now());
  }

  async notify(notices: ConsoleNotice[]): Promise<number> {
    if (!notices.length) return 0;
    return this.deliver(JSON.stringify({ type: "notices", notices }), null);
  }

  /**
   * Sends `frame` to every live socket whose key may still read the route, except those `skip`
   * names, closing the ones whose session is over or whose key may not (without sending); answers
   * how many sockets got it. A frame `from` a console goes nowhere once that console's own key may
   * not read the route. Every push goes through here, so none bypasses the key check.
   */
  private async deliver(frame: string, skip: ((s: SocketSession) => boolean) | null, from: SocketSession | null = null): Promise<number> {
    const sockets = this.ctx.getWebSockets();
    if (!sockets.length) return 0;
    const now = this.clock.now();
    // One check per distinct key, all before anything is sent.
    const verdicts = new Map<string, Promise<boolean>>();
    const verdictOf = (s: SocketSession) => {
      const k = `${s.key_hash}\u0000${s.route_name}`;
      let v = verdicts.get(k);
      if (!v) verdicts.set(k, (v = holderStillAllowed(this.env, s, now)));
      return v;
    };
    // What a console says is passed on only while its own key may still read the route.
    const silenced = from !== null && (from.until <= now || !(await verdictOf(from)));
    const plan = await Promise.all(
      sockets.map(async (ws) => {
        const session = sessionOf(ws);
        if (!session || session.until <= now) return { ws, verdict: "over" as const };
        if (!(await verdictOf(session))) return { ws, verdict: "revoked" as const };
        return { ws, verdict: skip?.(session) ? ("skip" as const) : ("send" as const) };
      }),
    );
    let reached = 0;
    for (const { ws, verdict } of plan) {
      try {
        if (verdict === "over") ws.close(SESSION_OVER_CODE, "session over: open a new ticket");
        else if (verdict === "revoked") ws.close(KEY_REVOKED_CODE, "the key may no longer read this route");
        else if (verdict === "send" && !silenced) {
          ws.send(frame);
          reached += 1;
        }
      } catch {
        // A socket closing under us: nothing to tell it.
      }
    }
    return reached;
  }

  override async fetch(request: Request): Promise<Response> {
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") return refusal(426, "expected a WebSocket upgrade");
    const ticket = new URL(request.url).searchParams.get("ticket") ?? "";
    const open = this.ctx.getWebSockets();
    if (open.length >= SOCKETS_PER_HUB) return refusal(429, "too many consoles watch this route; close one and try again", "too_many_consoles");
    const holder = isTicketShaped(ticket) ? spendTicketRow(this.ctx.storage.sql, await ticketHash(ticket), this.clock.now()) : null;
    // A ticket outlives nothing: the key that minted it must still read the route now.
    if (holder === null || !(await holderStillAllowed(this.env, holder, this.clock.now())))
      return refusal(401, "live ticket is invalid, expired or already used");
    const mine = open
      .map((ws) => ({ ws, session: ws.deserializeAttachment() as Partial<SocketSession> | null }))
      .filter((o) => o.session?.key_hash === holder.key_hash)
      .sort((a, b) => (a.session?.until ?? 0) - (b.session?.until ?? 0));
    for (const { ws } of mine.slice(0, Math.max(0, mine.length - SOCKETS_PER_KEY + 1))) {
      try {
        ws.close(SUPERSEDED_CODE, "this key opened another console");
      } catch {
        // Already closing.
      }
    }
    const [client, server] = Object.values(new WebSocketPair());
    this.ctx.acceptWebSocket(server);
    const session: SocketSession = { ...holder, until: this.clock.now() + SOCKET_MAX_AGE_MS };
    server.serializeAttachment(session);
    server.send(JSON.stringify({ type: "ready", until: new Date(session.until).toISOString() }));
    // Who is on which thread already; the key was checked just above.
    const present = presenceNow(open, holder.user_id, this.clock.now());
    if (present.length) server.send(presenceFrame(present));
    return new Response(null, { status: 101, webSocket: client });
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    // Consoles send only presence (the runtime answers `ping` itself); anything else is a protocol error.
    const session = sessionOf(ws);
    const said = typeof message === "string" && session ? parsePresenceFrame(message, session.route_name) : null;
    if (!session || !said) {
      ws.close(1003, "this socket takes presence frames only");
      return;
    }
    const now = this.clock.now();
    const spent = spendPresenceBudget(session.budget, now);
    const mark = spent.ok ? presenceMark(said.thread_id, said.state, now) : session.presence;
    ws.serializeAttachment({ ...session, budget: spent.budget, presence: mark ?? undefined } satisfies SocketSession);
    // Past its budget a socket's frames are dropped: presence is a hint, and a late one is harmless.
    if (!spent.ok) return;
    await this.announce(session, presenceEntry(session.route_name, session.user_id, said.thread_id, said.state, now));
  }

  /** Fans one console's announcement out to the others (an operator's own windows excepted). */
  private announce(from: SocketSession, entry: PresenceEntry): Promise<number> {
    return this.deliver(presenceFrame([entry]), (s) => s.user_id === from.user_id, from);
  }

  override async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    try {
      ws.close(code === 1005 || code === 1006 ? 1000 : code, reason);
    } catch {
      // Already closed (the runtime may answer the close itself).
    }
    // A console that goes while it still shows on a thread is gone from it at once.
    const session = sessionOf(ws);
    const now = this.clock.now();
    if (session?.presence && session.presence.until > now)
      await this.announce(session, presenceEntry(session.route_name, session.user_id, session.presence.thread_id, "left", now)).catch(() => 0);
  }
}

/** The session a socket carries, or null when its attachment is not one. */
function sessionOf(ws: WebSocket): SocketSession | null {
  const s = ws.deserializeAttachment() as Partial<SocketSession> | null;
  return s?.key_hash && s.route_name && s.user_id && s.until ? (s as SocketSession) : null;
}

/** What the other consoles on the hub show now: each one's live announcement, `viewer`'s own left out. */
function presenceNow(sockets: WebSocket[], viewer: string, now: number): PresenceEntry[] {
  const out: PresenceEntry[] = [];
  for (const ws of sockets) {
    const s = sessionOf(ws);
    if (!s?.presence || s.user_id === viewer || s.presence.until <= now || s.until <= now) continue;
    out.push({
      route_name: s.route_name,
      thread_id: s.presence.thread_id,
      user_id: s.user_id,
      state: s.presence.state,
      until: new Date(s.presence.until).toISOString(),
    });
  }
  return out;
}

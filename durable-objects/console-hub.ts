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

interface SocketSession extends TicketHolder {
  until: number;
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
    const sockets = this.ctx.getWebSockets();
    if (!sockets.length || !notices.length) return 0;
    const now = this.clock.now();
    const frame = JSON.stringify({ type: "notices", notices });
    // One check per distinct key, all before anything is sent.
    const verdicts = new Map<string, Promise<boolean>>();
    const verdictOf = (s: SocketSession) => {
      const k = `${s.key_hash}\u0000${s.route_name}`;
      let v = verdicts.get(k);
      if (!v) verdicts.set(k, (v = holderStillAllowed(this.env, s, now)));
      return v;
    };
    const plan = await Promise.all(
      sockets.map(async (ws) => {
        const session = ws.deserializeAttachment() as Partial<SocketSession> | null;
        if (!session?.key_hash || !session.route_name || !session.until || session.until <= now) return { ws, verdict: "over" as const };
        return { ws, verdict: (await verdictOf(session as SocketSession)) ? ("send" as const) : ("revoked" as const) };
      }),
    );
    let reached = 0;
    for (const { ws, verdict } of plan) {
      try {
        if (verdict === "over") ws.close(SESSION_OVER_CODE, "session over: open a new ticket");
        else if (verdict === "revoked") ws.close(KEY_REVOKED_CODE, "the key may no longer read this route");
        else {
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
    return new Response(null, { status: 101, webSocket: client });
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    // Consoles only listen; anything but the auto-answered ping is a protocol error.
    if (message !== "ping") ws.close(1003, "this socket only sends");
  }

  override async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    try {
      ws.close(code === 1005 || code === 1006 ? 1000 : code, reason);
    } catch {
      // Already closed (the runtime may answer the close itself).
    }
  }
}

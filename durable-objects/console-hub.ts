/**
 * ConsoleHub: one object per conversation route, holding the operator consoles that watch the
 * route live (docs/console.md "Live updates"). A thin shell: the tickets live in its
 * SQLite (src/console/hub-store.ts), the sockets in the runtime's WebSocket hibernation, so a
 * hub with quiet consoles is evicted from memory and costs nothing until the next notice. The
 * contract is src/console/rpc.ts.
 *
 * Each socket carries its user and the instant its session ends (SOCKET_MAX_AGE_MS after the
 * ticket was spent) as its attachment; a notice that finds a session over closes that socket
 * instead (code SESSION_OVER_CODE) and the console comes back with a new ticket, so the key's
 * grants are checked again. Keep-alive `ping` text frames are answered `pong` by the runtime
 * without waking the object.
 */
import { DurableObject } from "cloudflare:workers";
import type { ConsoleHubRpc, ConsoleNotice } from "../src/console/rpc";
import type { Env } from "../src/platform/env";
import { createHubStore, keepTicketRow, spendTicketRow } from "../src/console/hub-store";
import { SESSION_OVER_CODE, SOCKET_MAX_AGE_MS, isTicketShaped, ticketHash } from "../src/console/tickets";

interface SocketSession {
  user_id: string;
  until: number;
}

const refusal = (status: number, error: string) => Response.json({ error }, { status });

export class ConsoleHub extends DurableObject<Env> implements ConsoleHubRpc {
  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    createHubStore(ctx.storage.sql);
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
  }

  async keepTicket(ticketHash: string, userId: string, expiresAtMs: number): Promise<void> {
    keepTicketRow(this.ctx.storage.sql, ticketHash, userId, expiresAtMs, Date.now());
  }

  async notify(notices: ConsoleNotice[]): Promise<number> {
    const sockets = this.ctx.getWebSockets();
    if (!sockets.length || !notices.length) return 0;
    const now = Date.now();
    const frame = JSON.stringify({ type: "notices", notices });
    let reached = 0;
    for (const ws of sockets) {
      const session = ws.deserializeAttachment() as SocketSession | null;
      try {
        if (!session || session.until <= now) {
          ws.close(SESSION_OVER_CODE, "session over: open a new ticket");
          continue;
        }
        ws.send(frame);
        reached += 1;
      } catch {
        // A socket closing under us: nothing to tell it.
      }
    }
    return reached;
  }

  override async fetch(request: Request): Promise<Response> {
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") return refusal(426, "expected a WebSocket upgrade");
    const ticket = new URL(request.url).searchParams.get("ticket") ?? "";
    const userId = isTicketShaped(ticket) ? spendTicketRow(this.ctx.storage.sql, await ticketHash(ticket), Date.now()) : null;
    if (userId === null) return refusal(401, "live ticket is invalid, expired or already used");
    const [client, server] = Object.values(new WebSocketPair());
    this.ctx.acceptWebSocket(server);
    const session: SocketSession = { user_id: userId, until: Date.now() + SOCKET_MAX_AGE_MS };
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

/**
 * Live updates of one route (docs/console.md "Live updates"): a ticket minted with the key
 * (`POST …/live-tickets`), then one WebSocket to the route's ConsoleHub with that one-time ticket
 * in the query (a browser cannot put the key in a WebSocket header, and the key never goes in a
 * URL). Notices carry ids and a status; the views re-read what changed through the doors. A lost
 * socket comes back with a fresh ticket after a growing pause (1 s … 30 s); a session the hub ends
 * (code 4001, every 10 minutes) comes back at once, re-checking the key's grants.
 */
import { ApiError, call, messageOf, path } from "./api";
import { DOORS } from "./doors";

export type Notice =
  | { type: "thread"; route_name: string; thread_id: string; status: string; at: string }
  | { type: "failed"; route_name: string; thread_id: string; message_id: string };

export type LiveState = { state: "connecting" | "live" | "offline"; message?: string };

const PING_MS = 25_000;
const MAX_PAUSE_MS = 30_000;

export class LiveRoute {
  private ws: WebSocket | null = null;
  private stopped = false;
  private pause = 1000;
  private ping: number | undefined;
  private retry: number | undefined;

  constructor(
    private readonly route: string,
    private readonly onNotices: (n: Notice[]) => void,
    private readonly onState: (s: LiveState) => void,
  ) {}

  start(): void {
    void this.connect();
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.ping);
    clearTimeout(this.retry);
    this.ws?.close(1000, "console left the route");
    this.ws = null;
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    this.onState({ state: "connecting" });
    let ticket: { ticket: string; socket_path: string };
    try {
      ticket = await call("POST", path(DOORS.liveTicket[1], { route_name: this.route }));
    } catch (err) {
      // A refusal (403, 404) will not change by retrying; anything else may.
      const final = err instanceof ApiError && err.status >= 400 && err.status < 500 && err.status !== 429;
      this.onState({ state: "offline", message: `Live updates are off: ${messageOf(err)}` });
      if (!final) this.later();
      return;
    }
    if (this.stopped) return;
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(`${scheme}//${location.host}${ticket.socket_path}?ticket=${encodeURIComponent(ticket.ticket)}`);
    this.ws = ws;
    ws.onmessage = (ev) => {
      let frame: { type?: string; notices?: Notice[] };
      try {
        frame = JSON.parse(String(ev.data));
      } catch {
        return;
      }
      if (frame.type === "ready") {
        this.pause = 1000;
        this.onState({ state: "live" });
      } else if (frame.type === "notices" && Array.isArray(frame.notices)) this.onNotices(frame.notices);
    };
    ws.onclose = (ev) => {
      clearInterval(this.ping);
      if (this.ws !== ws || this.stopped) return;
      this.ws = null;
      if (ev.code === 4001) {
        void this.connect();
        return;
      }
      // The same key opened more consoles on this route than the hub keeps: this, the oldest, gives
      // way. Reconnecting would only push another of them out in turn.
      if (ev.code === 4008) {
        this.onState({ state: "offline", message: "Live updates moved to a newer console window; reload to take them back." });
        return;
      }
      this.onState({ state: "offline", message: "Live updates lost; reconnecting…" });
      this.later();
    };
    clearInterval(this.ping);
    this.ping = window.setInterval(() => {
      if (ws.readyState === WebSocket.OPEN) ws.send("ping");
    }, PING_MS);
  }

  private later(): void {
    clearTimeout(this.retry);
    this.retry = window.setTimeout(() => void this.connect(), this.pause);
    this.pause = Math.min(this.pause * 2, MAX_PAUSE_MS);
  }
}

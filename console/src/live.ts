/**
 * Live updates of the routes the console shows (docs/console.md "Live updates"): a ticket minted
 * with the key (`POST …/live-tickets`), then one WebSocket to the route's ConsoleHub with that
 * one-time ticket in the query (a browser cannot put the key in a WebSocket header, and the key
 * never goes in a URL). Notices carry ids and a status; the views re-read what changed through the
 * doors. A lost socket comes back with a fresh ticket after a growing pause (1 s … 30 s); a session
 * the hub ends (code 4001, every 10 minutes) comes back at once, re-checking the key's grants.
 *
 * One socket per route, shared: the inbox list, a route's thread list and the open thread each
 * `watchRoute` and get the same socket, which closes a few seconds after its last watcher leaves
 * (so moving between screens does not mint a ticket each time). The same socket carries presence
 * (docs/console.md "Presence"): what this console announces, and the other operators' announcements.
 */
import { ApiError, call, messageOf, path } from "./api";
import { DOORS } from "./doors";

export type Notice =
  | { type: "thread"; route_name: string; thread_id: string; status: string; at: string }
  | { type: "failed"; route_name: string; thread_id: string; message_id: string }
  | { type: "turn"; route_name: string; thread_id: string; message_id: string; state: TurnState };

export type TurnState = "queued" | "running" | "tool" | "waiting" | "settled";

export type LiveState = { state: "connecting" | "live" | "offline"; message?: string };

export type PresenceState = "viewing" | "typing" | "left";

/** Another operator's announcement on a thread of the route. */
export interface Presence {
  route_name: string;
  thread_id: string;
  user_id: string;
  state: PresenceState;
  until: string;
}

export interface RouteWatcher {
  notices?: (n: Notice[]) => void;
  state?: (s: LiveState) => void;
  /** Told whenever the route's presence changed; read it with `Watch.present`. */
  presence?: () => void;
}

export interface Watch {
  stop(): void;
  /** Announces this console's operator on `threadId` (left: no longer there). */
  announce(threadId: string, state: PresenceState): void;
  /** The other operators on `threadId` now, each with their latest state. */
  present(threadId: string): Array<{ user_id: string; state: PresenceState }>;
  /** The socket's state now. */
  current(): LiveState;
}

const PING_MS = 25_000;
const MAX_PAUSE_MS = 30_000;
/** How long an announcement holds unless repeated (the hub's own lifetimes, src/console/presence.ts). */
const PRESENCE_TTL_MS = { viewing: 30_000, typing: 8_000 } as const;
/** How long a route's socket stays open after its last watcher left. */
const LINGER_MS = 5_000;

class LiveRoute {
  private ws: WebSocket | null = null;
  private stopped = false;
  private pause = 1000;
  private ping: number | undefined;
  private retry: number | undefined;
  private linger: number | undefined;
  private expiry: number | undefined;
  readonly watchers = new Set<RouteWatcher>();
  state: LiveState = { state: "connecting" };
  /** What this console announced last (repeated after a reconnect). */
  private mine: { thread_id: string; state: PresenceState } | null = null;
  /** thread id → user id → the other operators' announcements that still hold. */
  private readonly others = new Map<string, Map<string, { state: PresenceState; until: number }>>();

  constructor(
    private readonly route: string,
    private readonly onGone: () => void,
  ) {}

  start(): void {
    void this.connect();
  }

  add(w: RouteWatcher): void {
    clearTimeout(this.linger);
    this.watchers.add(w);
  }

  remove(w: RouteWatcher): void {
    this.watchers.delete(w);
    if (this.watchers.size) return;
    clearTimeout(this.linger);
    this.linger = window.setTimeout(() => this.stop(), LINGER_MS);
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.ping);
    clearTimeout(this.retry);
    clearTimeout(this.linger);
    clearTimeout(this.expiry);
    this.ws?.close(1000, "console left the route");
    this.ws = null;
    this.onGone();
  }

  announce(threadId: string, state: PresenceState): void {
    if (state === "left" && this.mine?.thread_id !== threadId) return;
    this.mine = state === "left" ? null : { thread_id: threadId, state };
    this.say(threadId, state);
  }

  present(threadId: string): Array<{ user_id: string; state: PresenceState }> {
    const now = Date.now();
    return [...(this.others.get(threadId) ?? new Map()).entries()]
      .filter(([, p]) => p.until > now)
      .map(([user_id, p]) => ({ user_id, state: p.state }))
      .sort((a, b) => a.user_id.localeCompare(b.user_id));
  }

  private say(threadId: string, state: PresenceState): void {
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify({ type: "presence", thread_id: threadId, state }));
  }

  private setState(s: LiveState): void {
    this.state = s;
    for (const w of this.watchers) w.state?.(s);
  }

  private heard(entries: Presence[]): void {
    for (const p of entries) {
      if (p.route_name !== this.route) continue;
      const byUser = this.others.get(p.thread_id) ?? new Map();
      // A console that says nothing more vanishes after its state's lifetime, counted from now
      // rather than from the hub's `until`, so a skewed clock in this browser does not matter.
      if (p.state === "left") byUser.delete(p.user_id);
      else byUser.set(p.user_id, { state: p.state, until: Date.now() + PRESENCE_TTL_MS[p.state] });
      if (byUser.size) this.others.set(p.thread_id, byUser);
      else this.others.delete(p.thread_id);
    }
    this.presenceChanged();
  }

  /** Tells the watchers, and again when the next announcement runs out. */
  private presenceChanged(): void {
    for (const w of this.watchers) w.presence?.();
    clearTimeout(this.expiry);
    const now = Date.now();
    let next = Number.POSITIVE_INFINITY;
    for (const [thread, byUser] of this.others) {
      for (const [user, p] of byUser) if (p.until <= now) byUser.delete(user);
      if (!byUser.size) this.others.delete(thread);
      for (const p of byUser.values()) next = Math.min(next, p.until);
    }
    if (next !== Number.POSITIVE_INFINITY) this.expiry = window.setTimeout(() => this.presenceChanged(), next - now + 50);
  }

  private async connect(): Promise<void> {
    if (this.stopped) return;
    this.setState({ state: "connecting" });
    let ticket: { ticket: string; socket_path: string };
    try {
      ticket = await call("POST", path(DOORS.liveTicket[1], { route_name: this.route }));
    } catch (err) {
      // A refusal (403, 404) will not change by retrying; anything else may.
      const final = err instanceof ApiError && err.status >= 400 && err.status < 500 && err.status !== 429;
      this.setState({ state: "offline", message: `Live updates are off: ${messageOf(err)}` });
      if (!final) this.later();
      return;
    }
    if (this.stopped) return;
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(`${scheme}//${location.host}${ticket.socket_path}?ticket=${encodeURIComponent(ticket.ticket)}`);
    this.ws = ws;
    ws.onmessage = (ev) => {
      let frame: { type?: string; notices?: Notice[]; presence?: Presence[] };
      try {
        frame = JSON.parse(String(ev.data));
      } catch {
        return;
      }
      if (frame.type === "ready") {
        this.pause = 1000;
        this.setState({ state: "live" });
        if (this.mine) this.say(this.mine.thread_id, this.mine.state);
      } else if (frame.type === "notices" && Array.isArray(frame.notices)) {
        const notices = frame.notices;
        for (const w of this.watchers) w.notices?.(notices);
      } else if (frame.type === "presence" && Array.isArray(frame.presence)) this.heard(frame.presence);
    };
    ws.onclose = (ev) => {
      clearInterval(this.ping);
      if (this.ws !== ws || this.stopped) return;
      this.ws = null;
      // What the others announced is no longer kept up to date.
      this.others.clear();
      this.presenceChanged();
      if (ev.code === 4001) {
        void this.connect();
        return;
      }
      // The same key opened more consoles on this route than the hub keeps: this, the oldest, gives
      // way. Reconnecting would only push another of them out in turn.
      if (ev.code === 4008) {
        this.setState({ state: "offline", message: "Live updates moved to a newer console window; reload to take them back." });
        return;
      }
      this.setState({ state: "offline", message: "Live updates lost; reconnecting…" });
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

const sockets = new Map<string, LiveRoute>();

/** Watches `route` live through its one shared socket; `w` gets the socket's state at once. */
export function watchRoute(route: string, w: RouteWatcher): Watch {
  let live = sockets.get(route);
  if (!live) {
    const made: LiveRoute = new LiveRoute(route, () => {
      if (sockets.get(route) === made) sockets.delete(route);
    });
    sockets.set(route, made);
    made.start();
    live = made;
  }
  const mine = live;
  mine.add(w);
  w.state?.(mine.state);
  let stopped = false;
  return {
    stop: () => {
      if (stopped) return;
      stopped = true;
      mine.remove(w);
    },
    announce: (threadId, state) => mine.announce(threadId, state),
    present: (threadId) => mine.present(threadId),
    current: () => mine.state,
  };
}

/** Closes every socket at once (sign-out). */
export function stopAllLive(): void {
  for (const live of [...sockets.values()]) live.stop();
  sockets.clear();
}

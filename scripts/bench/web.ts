/**
 * Web: messages through the web channel's public doors (docs/channels.md "Web") on a channel route
 * to the built-in echo tool. Each caller is its own visitor: it opens the chat page once (a
 * navigation, which mints its cookie session) and keeps one WebSocket stream open. Closed loop: a
 * caller POSTs a message, waits for the bot entry carrying that message's id on its stream, then
 * sends the next. The latency is POST sent → that answer frame received; the rate is answered
 * messages per second. Anything else (a refusal, a stream that closes, a wrong or missing answer
 * within 30 s) is a failure.
 *
 * All callers come from 127.0.0.1, so they share one network bucket of the rate cap; the route
 * carries a high `turns_per_hour_override` (as the api phases' routes do) so the cap stays out of
 * the figure.
 *
 * Node 20 has no global WebSocket; undici's (the one behind Node's fetch) takes the Cookie and
 * Origin headers a browser would send.
 */
import { type IncomingMessage, get } from "node:http";
import { performance } from "node:perf_hooks";
import { WebSocket } from "undici";
import { http } from "./harness";
import { type Ctx, type Phase, closedLoop } from "./lib";

export const WEB_ROUTE = "bench-web";
export const WEB_IDENTITY = "bench-web";
const ANSWER_TIMEOUT_MS = 30_000;

export async function setupWeb(ctx: Ctx): Promise<void> {
  const created = await http(ctx.base, "POST", `/api/conversations/${WEB_ROUTE}`, {
    key: ctx.admin,
    body: {
      door: "channel",
      channel: "web",
      our_identity: WEB_IDENTITY,
      target_kind: "tool",
      target_name: "echo",
      execution_key: ctx.execUser,
      turns_per_hour_override: 100_000_000,
    },
  });
  if (created.status !== 200) throw new Error(`creating route ${WEB_ROUTE} failed: HTTP ${created.status} ${JSON.stringify(created.body)}`);
}

/**
 * Opens the chat page as a browser navigation and answers the session cookie. Through node:http:
 * fetch marks every request `Sec-Fetch-Mode: cors`, which the page door refuses.
 */
export async function openPage(base: string, identity = WEB_IDENTITY): Promise<string> {
  const res = await new Promise<IncomingMessage>((resolve, reject) =>
    get(`${base}/api/channels/web/chat/${identity}`, { headers: { "sec-fetch-mode": "navigate" } }, resolve).on("error", reject),
  );
  res.resume();
  const cookie = (res.headers["set-cookie"]?.[0] ?? "").split(";")[0];
  if (res.statusCode !== 200 || !cookie.startsWith(`tai_web_${identity}=`)) throw new Error(`opening the chat page failed: HTTP ${res.statusCode}`);
  return cookie;
}

interface Waiter {
  resolve: (r: { at: number; text: string } | string) => void;
  timer: NodeJS.Timeout;
}

/**
 * One visitor: its cookie and its open stream. Answer frames are matched to messages by
 * `message_id`; a frame can arrive before the POST's answer has been read, so arrivals are kept
 * until their message's waiter asks.
 */
export class Visitor {
  private readonly arrived = new Map<string, { at: number; text: string }>();
  private readonly waiting = new Map<string, Waiter>();
  private closedReason: string | null = null;

  private constructor(
    readonly base: string,
    readonly cookie: string,
    private readonly ws: WebSocket,
  ) {}

  static async open(base: string): Promise<Visitor> {
    const cookie = await openPage(base);
    const url = `${base.replace(/^http/, "ws")}/api/channels/web/stream?identity=${WEB_IDENTITY}&after=0`;
    const ws = new WebSocket(url, { headers: { cookie, origin: base } });
    const v = new Visitor(base, cookie, ws);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("the stream sent no ready frame within 10 s")), 10_000);
      ws.addEventListener("message", (ev) => {
        const at = performance.now();
        if (typeof ev.data !== "string" || !ev.data.startsWith("{")) return;
        const frame = JSON.parse(ev.data) as { type: string; entry?: { role: string; text: string; message_id: string | null } };
        if (frame.type === "ready") {
          clearTimeout(timer);
          resolve();
        } else if (frame.type === "entry" && frame.entry?.role === "bot" && frame.entry.message_id) v.arrive(frame.entry.message_id, at, frame.entry.text);
        else if (frame.type === "ended") v.close("the stream ended");
      });
      ws.addEventListener("close", (ev) => {
        clearTimeout(timer);
        reject(new Error(`the stream closed before ready (${ev.code})`));
        v.close(`the stream closed (${ev.code})`);
      });
    });
    return v;
  }

  private arrive(messageId: string, at: number, text: string): void {
    const w = this.waiting.get(messageId);
    if (!w) {
      this.arrived.set(messageId, { at, text });
      return;
    }
    this.waiting.delete(messageId);
    clearTimeout(w.timer);
    w.resolve({ at, text });
  }

  private close(reason: string): void {
    this.closedReason ??= reason;
    for (const [id, w] of this.waiting) {
      clearTimeout(w.timer);
      w.resolve(reason);
      this.waiting.delete(id);
    }
  }

  /** The answer frame for `messageId`: its arrival time and text, or a failure reason. */
  answerOf(messageId: string): Promise<{ at: number; text: string } | string> {
    const seen = this.arrived.get(messageId);
    if (seen) {
      this.arrived.delete(messageId);
      return Promise.resolve(seen);
    }
    if (this.closedReason) return Promise.resolve(this.closedReason);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiting.delete(messageId);
        resolve(`no answer frame within ${ANSWER_TIMEOUT_MS / 1000} s`);
      }, ANSWER_TIMEOUT_MS);
      this.waiting.set(messageId, { resolve, timer });
    });
  }

  stop(): void {
    this.close("stopped");
    this.ws.close();
  }
}

/** Opens `callers` visitors, each with its page session and its stream. */
export function openVisitors(base: string, callers: number): Promise<Visitor[]> {
  return Promise.all(Array.from({ length: callers }, () => Visitor.open(base)));
}

export interface WebResult {
  phase: Phase;
  /** POST sent → its 200 read, milliseconds, sorted: the door's share of the latency. */
  ackMs: number[];
  /** Messages whose answer frame arrived before their POST's 200 was read. */
  framesFirst: number;
}

export async function webPhase(
  visitors: Visitor[],
  runId: string,
  perCaller: number,
  maxSeconds: number,
  label = "web message → answer frame",
): Promise<WebResult> {
  const ackMs: number[] = [];
  let framesFirst = 0;
  const phase = await closedLoop(`${label} (${visitors.length} visitors)`, visitors.length, perCaller, maxSeconds, async (c, i) => {
    const v = visitors[c];
    const text = `web ${runId} ${c}/${i}`;
    const t0 = performance.now();
    const res = await fetch(`${v.base}/api/channels/web/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", cookie: v.cookie, origin: v.base },
      body: JSON.stringify({ identity: WEB_IDENTITY, text }),
    });
    const json = (await res.json().catch(() => null)) as { data?: { message_id?: unknown } } | null;
    if (res.status !== 200) return `HTTP ${res.status}`;
    const id = json?.data?.message_id;
    if (typeof id !== "string") return "no message_id";
    const ackAt = performance.now();
    ackMs.push(ackAt - t0);
    const answer = await v.answerOf(id);
    if (typeof answer === "string") return answer;
    if (answer.text !== text) return "wrong answer";
    if (answer.at < ackAt) framesFirst++;
    return { ms: answer.at - t0 };
  });
  ackMs.sort((a, b) => a - b);
  return { phase, ackMs, framesFirst };
}

/**
 * Stream: web visitors on a channel route to an llm agent whose model streams its answer (a local
 * OpenAI-compatible endpoint, scripts/bench/fake-llm.ts, sending `chunks` content deltas, one every
 * `intervalMs`). Each visitor
 * keeps its WebSocket stream open and, closed loop, sends a message and waits for that message's
 * final entry, recording every `draft` frame on the way (docs/web-channel-client.md).
 *
 * It runs twice on one bridge of its own, with the usage meter on (src/platform/metering/): once
 * with the model answering one JSON body after as long as the stream takes (no drafts: the
 * comparison; the same length keeps the listing's time-batched D1 writes alike in both runs),
 * then streaming. What it shows:
 *   - the drafts reach the page at the throttle rate: about one per 150 ms (the gaps' median at the
 *     throttle; a single gap as received may be shorter by the loopback's jitter), and the first
 *     words arrive long before the answer;
 *   - a draft costs no D1 statement and no stored row: the D1 statements and the object SQL rows
 *     written per message are the same in both runs.
 */
import { randomBytes } from "node:crypto";
import { performance } from "node:perf_hooks";
import { WebSocket } from "undici";
import { startFakeLlm } from "./fake-llm";
import { BOOTSTRAP_TOKEN, http } from "./harness";
import { type Phase, type Row, closedLoop, fmt, percentile } from "./lib";
import { startBridge } from "./server";
import { openPage } from "./web";

const ROUTE = "bench-stream";
const IDENTITY = "bench-stream";
const AGENT = "bench-stream";
/** The page's draft throttle (contract of the thread's live turn). */
export const DRAFT_THROTTLE_MS = 150;
const ANSWER_TIMEOUT_MS = 60_000;

export interface StreamOptions {
  visitors: number;
  perVisitor: number;
  chunks: number;
  intervalMs: number;
}

export const STREAM_DEFAULTS: StreamOptions = { visitors: 4, perVisitor: 5, chunks: 30, intervalMs: 40 };

interface Usage {
  sqlRowsWritten: number;
  d1Statements: number;
}

/** One answer as the page saw it: when each draft and the final entry arrived, and the final text. */
interface Seen {
  drafts: number[];
  finalAt: number | null;
  text: string | null;
}

/** A visitor's page session and stream, keeping every draft and final entry by message id. */
class StreamVisitor {
  readonly seen = new Map<string, Seen>();
  private readonly waiters = new Map<string, () => void>();
  closed: string | null = null;

  private constructor(
    readonly cookie: string,
    private readonly ws: WebSocket,
  ) {}

  static async open(base: string): Promise<StreamVisitor> {
    const cookie = await openPage(base, IDENTITY);
    const ws = new WebSocket(`${base.replace(/^http/, "ws")}/api/channels/web/stream?identity=${IDENTITY}&after=0`, { headers: { cookie, origin: base } });
    const v = new StreamVisitor(cookie, ws);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error("the stream sent no ready frame within 10 s")), 10_000);
      ws.addEventListener("message", (ev) => {
        const at = performance.now();
        if (typeof ev.data !== "string" || !ev.data.startsWith("{")) return;
        const f = JSON.parse(ev.data) as { type: string; message_id?: string; entry?: { role: string; text: string; message_id: string | null } };
        if (f.type === "ready") {
          clearTimeout(timer);
          resolve();
        } else if (f.type === "draft" && f.message_id) v.slot(f.message_id).drafts.push(at);
        else if (f.type === "entry" && f.entry?.role === "bot" && f.entry.message_id) {
          const s = v.slot(f.entry.message_id);
          s.finalAt = at;
          s.text = f.entry.text;
          v.waiters.get(f.entry.message_id)?.();
        }
      });
      ws.addEventListener("close", (ev) => {
        clearTimeout(timer);
        v.closed = `the stream closed (${ev.code})`;
        reject(new Error(v.closed));
        for (const w of v.waiters.values()) w();
      });
    });
    return v;
  }

  private slot(id: string): Seen {
    let s = this.seen.get(id);
    if (!s) {
      s = { drafts: [], finalAt: null, text: null };
      this.seen.set(id, s);
    }
    return s;
  }

  /** Resolves once `id`'s final entry arrived (or the stream closed, or the wait timed out). */
  final(id: string): Promise<Seen | string> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(id);
        const s = this.seen.get(id);
        resolve(s?.finalAt != null ? s : (this.closed ?? `no final entry within ${ANSWER_TIMEOUT_MS / 1000} s`));
      };
      const timer = setTimeout(done, ANSWER_TIMEOUT_MS);
      if (this.seen.get(id)?.finalAt != null) done();
      else this.waiters.set(id, done);
    });
  }

  stop(): void {
    this.ws.close();
  }
}

/** Bootstraps the bridge and declares the agent, its execution key and the web route. */
async function setup(base: string, llmUrl: string): Promise<void> {
  const must = async (what: string, p: Promise<{ status: number; body: { data?: Record<string, string> } }>) => {
    const r = await p;
    if (r.status !== 200 || !r.body.data) throw new Error(`${what} failed: HTTP ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.data;
  };
  const boot = await must(
    "bootstrap",
    http(base, "POST", "/api/keys/bootstrap", { body: { user_id: "stream-admin", description: "bench stream", bootstrap_token: BOOTSTRAP_TOKEN } }),
  );
  const admin: string = boot.token;
  await must(
    "minting the execution key",
    http(base, "POST", "/api/auth/api-keys", {
      key: admin,
      body: { user_id: "stream-exec", description: "bench stream execution key", scopes: [`agent:${AGENT}`] },
    }),
  );
  await must(
    "the llm agent",
    http(base, "POST", "/api/agents-config/entries", {
      key: admin,
      body: { title: AGENT, kind: "llm", description: "streams its answer", config: { base_url: llmUrl, model: "fake", api_key: { env: "FAKE_LLM_KEY" } } },
    }),
  );
  await must(
    "the web route",
    http(base, "POST", `/api/conversations/${ROUTE}`, {
      key: admin,
      body: {
        door: "channel",
        channel: "web",
        our_identity: IDENTITY,
        target_kind: "agent",
        target_name: AGENT,
        execution_key: "stream-exec",
        turns_per_hour_override: 100_000_000,
      },
    }),
  );
}

interface RunFigures {
  phase: Phase;
  firstDraftMs: number[];
  gapsMs: number[];
  draftsPerAnswer: number;
  usage: Usage;
}

/** One closed-loop run: every visitor sends `perVisitor` messages, one after the other. */
async function run(
  base: string,
  visitors: StreamVisitor[],
  o: StreamOptions,
  label: string,
  expected: string,
  readUsage: () => Promise<Usage>,
): Promise<RunFigures> {
  const firstDraftMs: number[] = [];
  const gapsMs: number[] = [];
  let drafts = 0;
  await readUsage();
  const phase = await closedLoop(label, visitors.length, o.perVisitor, 600, async (c, i) => {
    const v = visitors[c];
    const t0 = performance.now();
    const res = await fetch(`${base}/api/channels/web/messages`, {
      method: "POST",
      headers: { "content-type": "application/json", cookie: v.cookie, origin: base },
      body: JSON.stringify({ identity: IDENTITY, text: `stream ${c}/${i}` }),
    });
    const json = (await res.json().catch(() => null)) as { data?: { message_id?: unknown } } | null;
    if (res.status !== 200) return `HTTP ${res.status}`;
    const id = json?.data?.message_id;
    if (typeof id !== "string") return "no message_id";
    const seen = await v.final(id);
    if (typeof seen === "string") return seen;
    if (seen.text !== expected) return "wrong answer";
    drafts += seen.drafts.length;
    if (seen.drafts.length) firstDraftMs.push(seen.drafts[0] - t0);
    for (let k = 1; k < seen.drafts.length; k++) gapsMs.push(seen.drafts[k] - seen.drafts[k - 1]);
    return { ms: (seen.finalAt as number) - t0 };
  });
  const usage = await readUsage();
  firstDraftMs.sort((a, b) => a - b);
  gapsMs.sort((a, b) => a - b);
  return { phase, firstDraftMs, gapsMs, draftsPerAnswer: phase.ok ? drafts / phase.ok : 0, usage };
}

/** The stream phase on a bridge of its own. Returns its table rows, its JSON and its failures. */
export async function runStream(
  o: StreamOptions,
  vars: Record<string, string>,
  env: Record<string, string>,
  cleanups: Array<() => Promise<void> | void>,
): Promise<{ rows: Row[]; json: unknown; failed: number }> {
  // The words `w0 w1 …`, so the drafts show how much of the answer has arrived.
  const text = Array.from({ length: o.chunks }, (_, i) => `w${i}`).join(" ");
  const llm = await startFakeLlm(() => ({ content: text }));
  cleanups.push(() => llm.close());
  const token = randomBytes(32).toString("base64url");
  console.log("bench: starting a bridge with the usage meter on for the stream phase …");
  const bridge = await startBridge(false, { ...vars, USAGE_METER_TOKEN: token, FAKE_LLM_KEY: "bench-llm-key" }, env);
  cleanups.push(() => bridge.stop());
  const base = bridge.baseUrl;
  const readUsage = async (): Promise<Usage> => {
    const res = await fetch(`${base}/__usage`, { headers: { authorization: `Bearer ${token}` } });
    if (res.status !== 200) throw new Error(`reading the usage meter failed: HTTP ${res.status}`);
    return (await res.json()) as Usage;
  };
  await setup(base, llm.url);
  const visitors = await Promise.all(Array.from({ length: o.visitors }, () => StreamVisitor.open(base)));
  cleanups.push(() => visitors.forEach((v) => v.stop()));
  const per = (u: Usage, p: Phase) => ({ d1: p.ok ? u.d1Statements / p.ok : Number.NaN, rows: p.ok ? u.sqlRowsWritten / p.ok : Number.NaN });

  console.log(`bench: stream: ${o.visitors} visitors × ${o.perVisitor} messages, ${o.chunks} chunks every ${o.intervalMs} ms …`);
  // The stream's length: a piece every intervalMs, plus its opening, closing and [DONE] events.
  const modelMs = (o.chunks + 3) * o.intervalMs;
  llm.jsonDelayMs = modelMs;
  await run(base, visitors, { ...o, perVisitor: 1 }, "stream warm-up", text, readUsage);
  const whole = await run(base, visitors, o, `web → llm, one JSON answer (${o.visitors} visitors)`, text, readUsage);
  llm.stream = { chunks: o.chunks, delayMs: o.intervalMs };
  const streamed = await run(base, visitors, o, `web → llm, streamed answer (${o.visitors} visitors)`, text, readUsage);

  const w = per(whole.usage, whole.phase);
  const s = per(streamed.usage, streamed.phase);
  const belowThrottle = streamed.gapsMs.filter((g) => g < DRAFT_THROTTLE_MS - 5).length;
  const mostDrafts = modelMs / DRAFT_THROTTLE_MS + 2;
  const rows: Row[] = [
    { phase: whole.phase, note: `per message: D1 statements ${fmt(w.d1, 2)}, object rows written ${fmt(w.rows, 1)}; drafts ${fmt(whole.draftsPerAnswer, 1)}` },
    {
      phase: streamed.phase,
      note:
        `first draft p50 ${fmt(percentile(streamed.firstDraftMs, 50))} ms (model ${modelMs} ms); drafts/answer ${fmt(streamed.draftsPerAnswer, 1)}; ` +
        `gap p5 ${fmt(percentile(streamed.gapsMs, 5))} / p50 ${fmt(percentile(streamed.gapsMs, 50))} ms (throttle ${DRAFT_THROTTLE_MS}, ${belowThrottle} gaps shorter as received); ` +
        `per message: D1 statements ${fmt(s.d1, 2)}, object rows written ${fmt(s.rows, 1)}`,
    },
  ];
  // The phase's claims, checked: drafts came, none faster than the throttle, the first before the
  // model finished, and streaming cost no D1 statement and no stored row.
  const problems: string[] = [];
  if (streamed.draftsPerAnswer < 1) problems.push("no drafts reached the page");
  if (percentile(streamed.gapsMs, 50) < DRAFT_THROTTLE_MS - 5) problems.push("the drafts came faster than the throttle");
  if (streamed.draftsPerAnswer > mostDrafts) problems.push(`more drafts per answer than the throttle allows (${fmt(mostDrafts, 1)})`);
  if (percentile(streamed.firstDraftMs, 50) >= modelMs) problems.push("the first draft came no earlier than the model's end");
  // A statement or a row per draft would add drafts/answer to each figure; the listing's batched
  // write may land in one flush more or less, so a fraction either way is timing, not drafts.
  if (s.d1 - w.d1 >= 0.5) problems.push("streaming added D1 statements");
  if (s.rows - w.rows >= 0.5 * streamed.draftsPerAnswer) problems.push("streaming added stored rows");
  for (const p of problems) console.log(`bench: stream: ${p}`);
  const json = {
    options: o,
    whole: { ok: whole.phase.ok, failed: whole.phase.failed, per_message: w },
    streamed: {
      ok: streamed.phase.ok,
      failed: streamed.phase.failed,
      per_message: s,
      first_draft_p50_ms: percentile(streamed.firstDraftMs, 50),
      drafts_per_answer: streamed.draftsPerAnswer,
      gap_p5_ms: percentile(streamed.gapsMs, 5),
      gap_p50_ms: percentile(streamed.gapsMs, 50),
      gaps_below_throttle: belowThrottle,
    },
    problems,
  };
  return { rows, json, failed: whole.phase.failed + streamed.phase.failed + problems.length };
}

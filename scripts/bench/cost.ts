/**
 * `npm run bench -- --cost`: what a message costs on Cloudflare, counted from a run (docs/cost.md).
 *
 * It starts its own bridge (the `npm start` path, scripts/bench/server.ts) with the usage meter on
 * (`USAGE_METER_TOKEN`, src/platform/metering/usage-meter.ts), plus loopback fakes for everything
 * outside: an HTTPS callback receiver, the WhatsApp Graph API, and an OpenAI-compatible model.
 * For each kind of message it sends a warm-up message on every thread (a thread's first message
 * creates it and fills the isolate's caches), reads the meter to zero, sends the counted messages,
 * waits for each to finish (callback, send and receipt, answer frame), lets the background work
 * settle, and reads the meter again:
 *
 *   async     api message, 202, answered by a signed HTTPS callback (echo tool)
 *   sync      api message with `wait_seconds`, answered inline (echo tool)
 *   channel   WhatsApp message in, the answer sent to the provider, the provider's delivery receipt in
 *   web       web chat message on an open page (session and stream open), answered on the stream
 *   llm       api message to an llm agent that calls the echo tool twice, then answers (inline)
 *
 * Counted inside the isolate: Worker requests, object requests (RPC calls, fetches, alarms,
 * WebSocket events) and active time, object SQLite and key-value rows, D1 rows, R2 operations.
 * CPU comes from /proc: the workerd process's CPU over the phase, which holds the objects' and
 * the runtime's work as well as the Worker's, so the CPU line is an upper bound. Prices come from
 * scripts/bench/prices.json. Loopback only; every wait is bounded.
 *
 * Options: --senders N threads per kind (4) --messages N counted messages per thread (10)
 * --settle-seconds S quiet time before the meter is read (3) --json --state-in-memory.
 */
import { createHmac, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { type FakeLlm, startFakeLlm, toolCall } from "./fake-llm";
import { type FakeProviders, startFakeProviders } from "./fake-providers";
import { BOOTSTRAP_TOKEN, http } from "./harness";
import { type Ctx, type Phase, closedLoop, cpuMark, cpuSince, fmt, load, machine, meterServer, printFailureLogs, waitFor } from "./lib";
import { type CallbackReceiver, startReceiver } from "./receiver";
import { startBridge } from "./server";
import { setupSync, syncPhase } from "./sync";
import { type TestPki, makeTestPki, trustEnv } from "./tls";
import { openVisitors, setupWeb, webPhase } from "./web";

/** The price list (scripts/bench/prices.json). */
interface Prices {
  read_on: string;
  plan: string;
  sources: string[];
  included_per_month: Record<string, number | string>;
  per_million_usd: Record<LineItem, number>;
  rules: { do_memory_gb: number; do_websocket_messages_per_request: number; note: string };
}

/** What the usage meter answers (src/platform/metering/usage-meter.ts, `Usage`). */
interface Usage {
  workerRequests: number;
  objects: Record<string, { requests: number; alarms: number; webSocketEvents: number; activeMs: number }>;
  sqlRowsRead: number;
  sqlRowsWritten: number;
  statements: Record<string, { runs: number; rowsRead: number; rowsWritten: number }>;
  kvRowsRead: number;
  kvRowsWritten: number;
  alarmsSet: number;
  d1Statements: number;
  d1RowsRead: number;
  d1RowsWritten: number;
  r2ClassA: number;
  r2ClassB: number;
}

const LINE_ITEMS = [
  "workers_requests",
  "workers_cpu_ms",
  "do_requests",
  "do_duration_gb_s",
  "do_sqlite_rows_read",
  "do_sqlite_rows_written",
  "d1_rows_read",
  "d1_rows_written",
  "r2_class_a",
  "r2_class_b",
] as const;
type LineItem = (typeof LINE_ITEMS)[number];

const LABELS: Record<LineItem, string> = {
  workers_requests: "Workers requests",
  workers_cpu_ms: "Workers CPU ms (upper bound)",
  do_requests: "DO requests",
  do_duration_gb_s: "DO duration GB-s",
  do_sqlite_rows_read: "DO SQLite rows read",
  do_sqlite_rows_written: "DO SQLite rows written",
  d1_rows_read: "D1 rows read",
  d1_rows_written: "D1 rows written",
  r2_class_a: "R2 class A",
  r2_class_b: "R2 class B",
};

interface Options {
  senders: number;
  messages: number;
  settleSeconds: number;
  json: boolean;
  stateInMemory: boolean;
}

function parseCostArgs(argv: string[]): Options {
  const o: Options = { senders: 4, messages: 10, settleSeconds: 3, json: false, stateInMemory: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const num = (max: number): number => {
      const v = Number(argv[++i]);
      if (!Number.isFinite(v) || v <= 0 || v > max) throw new Error(`${a} needs a number above 0 and at most ${max}`);
      return v;
    };
    if (a === "--senders") o.senders = Math.floor(num(16));
    else if (a === "--messages") o.messages = Math.floor(num(100));
    else if (a === "--settle-seconds") o.settleSeconds = num(30);
    else if (a === "--json") o.json = true;
    else if (a === "--state-in-memory") o.stateInMemory = true;
    else throw new Error(`unknown option ${a} for --cost (known: --senders, --messages, --settle-seconds, --json, --state-in-memory)`);
  }
  return o;
}

export function loadPrices(): Prices {
  return JSON.parse(readFileSync(join(import.meta.dirname, "prices.json"), "utf8")) as Prices;
}

/** One kind's measured run: the messages it counted, the meter's figures and workerd's CPU. */
interface Measured {
  kind: string;
  label: string;
  phase: Phase;
  usage: Usage;
  workerdCpuMs: number;
}

/** Units of each line item per message. */
export function unitsPerMessage(m: { usage: Usage; workerdCpuMs: number; messages: number }, prices: Prices): Record<LineItem, number> {
  const u = m.usage;
  const objects = Object.values(u.objects);
  const sum = (f: (o: (typeof objects)[number]) => number) => objects.reduce((n, o) => n + f(o), 0);
  const totals: Record<LineItem, number> = {
    workers_requests: u.workerRequests,
    workers_cpu_ms: m.workerdCpuMs,
    do_requests: sum((o) => o.requests + o.alarms + o.webSocketEvents / prices.rules.do_websocket_messages_per_request),
    do_duration_gb_s: (sum((o) => o.activeMs) / 1000) * prices.rules.do_memory_gb,
    do_sqlite_rows_read: u.sqlRowsRead + u.kvRowsRead,
    do_sqlite_rows_written: u.sqlRowsWritten + u.kvRowsWritten + u.alarmsSet,
    d1_rows_read: u.d1RowsRead,
    d1_rows_written: u.d1RowsWritten,
    r2_class_a: u.r2ClassA,
    r2_class_b: u.r2ClassB,
  };
  const per = {} as Record<LineItem, number>;
  for (const item of LINE_ITEMS) per[item] = m.messages > 0 ? totals[item] / m.messages : Number.NaN;
  return per;
}

/** Dollars per million messages of each line item: units per message × the price per million units. */
export function dollarsPerMillion(units: Record<LineItem, number>, prices: Prices): Record<LineItem, number> {
  const out = {} as Record<LineItem, number>;
  for (const item of LINE_ITEMS) out[item] = units[item] * prices.per_million_usd[item];
  return out;
}

const num = (n: number) => (n === 0 ? "0" : Math.abs(n) >= 100 ? n.toFixed(0) : Math.abs(n) >= 1 ? n.toFixed(2) : n.toPrecision(2));
const usd = (n: number) => (n === 0 ? "$0" : n >= 1 ? `$${n.toFixed(2)}` : `$${n.toPrecision(2)}`);

function table(head: string[], rows: string[][], rightFrom = 1): string[] {
  const width = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (c: string[]) => `| ${c.map((v, i) => (i >= rightFrom ? v.padStart(width[i]) : v.padEnd(width[i]))).join(" | ")} |`;
  return [line(head), `|${width.map((w, i) => (i >= rightFrom ? `${"-".repeat(w + 1)}:` : "-".repeat(w + 2))).join("|")}|`, ...rows.map(line)];
}

/** The cost report: one table per kind, then the summary; answers its lines and the figures. */
export function costReport(measured: Measured[], prices: Prices): { lines: string[]; json: unknown } {
  const lines: string[] = [];
  const summary: string[][] = [];
  const json: Record<string, unknown> = {};
  for (const m of measured) {
    const units = unitsPerMessage({ usage: m.usage, workerdCpuMs: m.workerdCpuMs, messages: m.phase.ok }, prices);
    const dollars = dollarsPerMillion(units, prices);
    const total = LINE_ITEMS.reduce((n, i) => n + dollars[i], 0);
    const largest = LINE_ITEMS.reduce((a, b) => (dollars[b] > dollars[a] ? b : a));
    lines.push("", `${m.label}: ${m.phase.ok} messages counted${m.phase.failed ? `, ${m.phase.failed} FAILED ${JSON.stringify(m.phase.failures)}` : ""}`);
    lines.push(
      ...table(
        ["line item", "units / message", "$ / million messages", "share"],
        LINE_ITEMS.map((i) => [LABELS[i], num(units[i]), usd(dollars[i]), total > 0 ? `${((100 * dollars[i]) / total).toFixed(1)} %` : "-"]),
      ),
    );
    lines.push(`total ${usd(total)} per million messages; largest line item: ${LABELS[largest]} (${((100 * dollars[largest]) / total).toFixed(0)} %)`);
    const perClass = Object.entries(m.usage.objects)
      .filter(([, o]) => o.requests + o.alarms + o.webSocketEvents > 0)
      .map(([name, o]) => {
        const calls = (o.requests + o.alarms + o.webSocketEvents / prices.rules.do_websocket_messages_per_request) / m.phase.ok;
        return `${name} ${num(calls)} req, ${num(o.activeMs / m.phase.ok)} ms`;
      });
    lines.push(`objects per message: ${perClass.join("; ")}`);
    lines.push(
      `also per message: D1 statements ${num(m.usage.d1Statements / m.phase.ok)}, object key-value rows read/written ${num(m.usage.kvRowsRead / m.phase.ok)}/${num(m.usage.kvRowsWritten / m.phase.ok)}, alarms set ${num(m.usage.alarmsSet / m.phase.ok)}`,
    );
    const writers = Object.entries(m.usage.statements)
      .sort((a, b) => b[1].rowsWritten - a[1].rowsWritten)
      .slice(0, 6)
      .filter(([, st]) => st.rowsWritten > 0);
    lines.push("SQLite rows written per message, the largest statements (runs per message, rows written per message):");
    for (const [key, st] of writers) lines.push(`  ${num(st.runs / m.phase.ok)} × ${num(st.rowsWritten / m.phase.ok)} rows  ${key}`);
    summary.push([m.label, usd(total), LABELS[largest], usd(dollars[largest])]);
    json[m.kind] = {
      messages: m.phase.ok,
      failed: m.phase.failed,
      units_per_message: units,
      usd_per_million: dollars,
      total_usd_per_million: total,
      largest,
      usage: m.usage,
      workerd_cpu_ms: m.workerdCpuMs,
    };
  }
  lines.push("", "Summary (dollars per million messages, Workers Paid prices, monthly allowances not subtracted):");
  lines.push(...table(["kind", "total", "largest line item", "its cost"], summary));
  return { lines, json };
}

const WHATSAPP = { appSecret: "bench-whatsapp-app-secret", accessToken: "bench-whatsapp-token", verifyToken: "bench-whatsapp-verify", phoneId: "100200300" };
const LLM_AGENT = "bench-llm";
const ROUTES = { async: "cost-async", channel: "cost-whatsapp", llm: "cost-llm" } as const;

/** The fake model: two echo tool calls, then an answer naming what they returned. */
function llmScript(body: { messages: Array<{ role: string; content: string | null }> }): Record<string, unknown> {
  const lastUser = body.messages.map((m) => m.role).lastIndexOf("user");
  const results = body.messages.slice(lastUser + 1).filter((m) => m.role === "tool");
  if (results.length < 2) return { content: null, tool_calls: [toolCall(`call-${results.length + 1}`, "echo", { message: `step ${results.length + 1}` })] };
  return { content: `done after ${results.map((r) => r.content).join(" and ")}` };
}

/** The `data` of a 200 answer; anything else stops the run, naming what failed. */
async function must(what: string, p: Promise<{ status: number; body: unknown }>): Promise<Record<string, string>> {
  const r = await p;
  if (r.status !== 200) throw new Error(`${what} failed: HTTP ${r.status} ${JSON.stringify(r.body)}`);
  return (r.body as { data: Record<string, string> }).data;
}

/** Bootstraps the bridge and declares every route, agent and key the kinds use. */
async function setup(base: string, rx: CallbackReceiver, llm: FakeLlm): Promise<{ ctx: Ctx; callbackSecret: string }> {
  const boot = await must(
    "bootstrap",
    http(base, "POST", "/api/keys/bootstrap", { body: { user_id: "cost-admin", description: "bench --cost", bootstrap_token: BOOTSTRAP_TOKEN } }),
  );
  const admin = boot.token;
  const exec = { user_id: "cost-exec", description: "bench --cost execution key", scopes: ["tool:echo", "agent:echo", `agent:${LLM_AGENT}`] };
  await must("minting the execution key", http(base, "POST", "/api/auth/api-keys", { key: admin, body: exec }));
  const caller = await must(
    "minting the caller key",
    http(base, "POST", "/api/auth/api-keys", { key: admin, body: { user_id: "cost-caller", description: "bench --cost caller", scopes: ["conversations"] } }),
  );
  const ctx: Ctx = { base, admin, caller: caller.api_key, execUser: exec.user_id };
  const common = { execution_key: ctx.execUser, turns_per_hour_override: 100_000_000 };
  await setupSync(ctx);
  await setupWeb(ctx);
  const created = await must(
    "the async route",
    http(base, "POST", `/api/conversations/${ROUTES.async}`, {
      key: admin,
      body: { door: "api", target_kind: "tool", target_name: "echo", callback_url: `${rx.origin}/cost`, ...common },
    }),
  );
  await must(
    "the WhatsApp route",
    http(base, "POST", `/api/conversations/${ROUTES.channel}`, {
      key: admin,
      body: { door: "channel", channel: "whatsapp", our_identity: WHATSAPP.phoneId, target_kind: "tool", target_name: "echo", ...common },
    }),
  );
  await must(
    "the llm agent",
    http(base, "POST", "/api/agents-config/entries", {
      key: admin,
      body: {
        title: LLM_AGENT,
        kind: "llm",
        description: "calls echo twice, then answers",
        config: { base_url: llm.url, model: "fake", api_key: { env: "FAKE_LLM_KEY" }, tool_names: ["echo"] },
      },
    }),
  );
  await must(
    "the llm route",
    http(base, "POST", `/api/conversations/${ROUTES.llm}`, { key: admin, body: { door: "api", target_kind: "agent", target_name: LLM_AGENT, ...common } }),
  );
  return { ctx, callbackSecret: created.callback_secret };
}

/** Sends one signed WhatsApp webhook body. */
async function whatsappWebhook(base: string, value: Record<string, unknown>): Promise<string | null> {
  const body = JSON.stringify({
    object: "whatsapp_business_account",
    entry: [
      {
        id: "bench",
        changes: [
          {
            field: "messages",
            value: { messaging_product: "whatsapp", metadata: { phone_number_id: WHATSAPP.phoneId, display_phone_number: "15550000000" }, ...value },
          },
        ],
      },
    ],
  });
  const sig = `sha256=${createHmac("sha256", WHATSAPP.appSecret).update(body).digest("hex")}`;
  const res = await fetch(`${base}/api/channels/whatsapp/inbound`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-hub-signature-256": sig },
    body,
  });
  const text = await res.text();
  return res.status === 200 ? null : `HTTP ${res.status} ${text.slice(0, 120)}`;
}

let whatsappSeq = 0;

/** A WhatsApp message in; waits for its answer at the fake Graph API, then posts that send's delivery receipt. */
async function whatsappRoundTrip(base: string, fake: FakeProviders, sender: string, text: string): Promise<string | null> {
  const refused = await whatsappWebhook(base, {
    contacts: [{ wa_id: sender, profile: { name: "Bench" } }],
    messages: [{ from: sender, id: `wamid.bench.${++whatsappSeq}`, timestamp: String(Math.floor(Date.now() / 1000)), type: "text", text: { body: text } }],
  });
  if (refused) return refused;
  let providerId = "";
  const sent = await waitFor(
    () => {
      const s = fake.sends.find((x) => x.channel === "whatsapp" && x.body?.to === sender && x.body?.text?.body === text);
      if (s) providerId = s.providerId;
      return !!s;
    },
    30_000,
    20,
  );
  if (!sent) return "no send within 30 s";
  return whatsappWebhook(base, { statuses: [{ id: providerId, status: "delivered", timestamp: String(Math.floor(Date.now() / 1000)), recipient_id: sender }] });
}

/** The async kind: 202, then the signed callback for that message at the receiver. */
async function asyncOnce(ctx: Ctx, rx: CallbackReceiver, sender: string, text: string): Promise<string | null> {
  const r = await http(ctx.base, "POST", `/api/conversations/${ROUTES.async}/messages`, { key: ctx.caller, body: { external_user_id: sender, text } });
  if (r.status !== 202) return `HTTP ${r.status} ${r.body?.error?.code ?? ""}`.trim();
  const id = r.body?.data?.message_id;
  const arrived = await waitFor(() => rx.requests.some((q) => q.rawBody.includes(`"message_id":"${id}"`)), 30_000, 20);
  return arrived ? null : "no callback within 30 s";
}

async function llmOnce(ctx: Ctx, sender: string, text: string): Promise<string | null> {
  const r = await http(ctx.base, "POST", `/api/conversations/${ROUTES.llm}/messages`, {
    key: ctx.caller,
    body: { external_user_id: sender, text, wait_seconds: 30 },
  });
  if (r.status !== 200) return `HTTP ${r.status} ${r.body?.error?.code ?? ""}`.trim();
  if (r.body?.data?.status !== "answered") return `status ${r.body?.data?.status ?? "?"}`;
  return String(r.body.data.answer ?? "").startsWith("done after") ? null : "unexpected answer";
}

/**
 * Runs the cost phase; answers the exit code. `cleanups` is the bench's list of things to stop
 * (scripts/bench.ts stops them whatever happens).
 */
export async function costBench(argv: string[], cleanups: Array<() => Promise<void> | void>): Promise<number> {
  const opts = parseCostArgs(argv);
  const prices = loadPrices();
  if (opts.stateInMemory) {
    if (process.platform !== "linux") throw new Error("--state-in-memory needs Linux's /dev/shm");
    process.env.TMPDIR = "/dev/shm";
  }
  const loadAtStart = load();
  const pki: TestPki = makeTestPki();
  cleanups.push(() => pki.cleanup());
  const rx = await startReceiver(pki);
  cleanups.push(() => rx.stop());
  const fake = await startFakeProviders();
  cleanups.push(() => fake.close());
  const llm = await startFakeLlm(llmScript);
  cleanups.push(() => llm.close());
  const token = randomBytes(32).toString("base64url");
  const vars: Record<string, string> = {
    USAGE_METER_TOKEN: token,
    CONVERSATIONS_PER_ADDRESS_TURNS_PER_HOUR: "100000000",
    CHANNEL_WHATSAPP_APP_SECRET: WHATSAPP.appSecret,
    CHANNEL_WHATSAPP_ACCESS_TOKEN: WHATSAPP.accessToken,
    CHANNEL_WHATSAPP_VERIFY_TOKEN: WHATSAPP.verifyToken,
    CHANNEL_WHATSAPP_API_BASE: fake.base("whatsapp"),
    FAKE_LLM_KEY: "bench-llm-key",
  };
  console.log("bench --cost: starting the bridge with the usage meter on (npm start: inspector off) …");
  const bridge = await startBridge(false, vars, trustEnv(pki));
  cleanups.push(() => bridge.stop());
  meterServer(bridge.pid?.());
  const base = bridge.baseUrl;
  const readUsage = async (): Promise<Usage> => {
    const res = await fetch(`${base}/__usage`, { headers: { authorization: `Bearer ${token}` } });
    if (res.status !== 200) throw new Error(`reading the usage meter failed: HTTP ${res.status}`);
    return (await res.json()) as Usage;
  };
  const { ctx } = await setup(base, rx, llm);
  const S = opts.senders;
  const sender = (kind: string, c: number) => `cost-${kind}-${c}`;
  const visitors = await openVisitors(base, S);
  cleanups.push(() => visitors.forEach((v) => v.stop()));

  const kinds: Array<{ kind: string; label: string; run: (runId: string, perSender: number) => Promise<Phase> }> = [
    {
      kind: "async",
      label: "async api message, signed callback",
      run: (runId, n) => closedLoop("async", S, n, 120, (c, i) => asyncOnce(ctx, rx, sender("async", c), `${runId} ${c}/${i}`)),
    },
    { kind: "sync", label: "sync turn (wait_seconds)", run: (runId, n) => syncPhase(ctx, "cost", S, n, 120, `sync ${runId}`) },
    {
      kind: "channel",
      label: "WhatsApp message, send and receipt",
      run: (runId, n) =>
        closedLoop("channel", S, n, 120, (c, i) => whatsappRoundTrip(base, fake, `1555010${c.toString().padStart(4, "0")}`, `${runId} ${c}/${i}`)),
    },
    { kind: "web", label: "web chat message, page open", run: async (runId, n) => (await webPhase(visitors, runId, n, 120, "web")).phase },
    {
      kind: "llm",
      label: "llm agent turn, two tool calls",
      run: (runId, n) => closedLoop("llm", S, n, 120, (c, i) => llmOnce(ctx, sender("llm", c), `${runId} ${c}/${i}`)),
    },
  ];

  const measured: Measured[] = [];
  let failures = 0;
  for (const k of kinds) {
    console.log(`bench --cost: ${k.label}: ${S} warm-up messages, then ${S} × ${opts.messages} counted …`);
    const warm = await k.run("warm", 1);
    if (warm.failed) console.log(`bench --cost: warm-up failures ${JSON.stringify(warm.failures)}`);
    await new Promise((r) => setTimeout(r, opts.settleSeconds * 1000));
    await readUsage(); // to zero
    const mark = cpuMark();
    const t0 = performance.now();
    const phase = await k.run("count", opts.messages);
    // Background work (listing pushes, the shards' D1 batches) belongs to these messages too.
    await new Promise((r) => setTimeout(r, opts.settleSeconds * 1000));
    const usage = await readUsage();
    const cpu = cpuSince(mark);
    failures += phase.failed;
    measured.push({ kind: k.kind, label: k.label, phase, usage, workerdCpuMs: cpu?.server.workerd ?? Number.NaN });
    console.log(`bench --cost: ${phase.ok} ok, ${phase.failed} failed in ${fmt((performance.now() - t0) / 1000, 1)} s`);
  }

  const m = machine();
  const report = costReport(measured, prices);
  console.log("");
  console.log(
    `machine: ${m.cpus} CPUs (${m.cpu_model}), Node ${m.node}, wrangler ${m.wrangler}, workerd ${m.workerd}; load average at start ${loadAtStart}, at end ${load()}`,
  );
  console.log(`prices: ${prices.plan}, read ${prices.read_on} (scripts/bench/prices.json); the plan's monthly allowances are not subtracted`);
  console.log(
    `each kind: ${S} threads, one warm-up message each (uncounted), then ${opts.messages} counted messages each; the meter read ${opts.settleSeconds} s after the last`,
  );
  for (const l of report.lines) console.log(l);
  if (failures) printFailureLogs("bench --cost", bridge);
  if (opts.json) console.log(JSON.stringify({ machine: m, prices_read_on: prices.read_on, senders: S, messages: opts.messages, kinds: report.json }));
  return failures ? 1 : 0;
}

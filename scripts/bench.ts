/**
 * `npm run bench`: one run against a real `wrangler dev` (started through scripts/bench/harness.ts, i.e.
 * the same `npm start` path: D1 migrations, then `wrangler dev` on free loopback ports with a
 * throwaway persistence directory). Phases (each in its own module under scripts/bench/, shared
 * helpers in scripts/bench/lib.ts):
 *
 *   ingest    async (202) messages/s, 16 callers over 64 threads, ÷ health (scripts/bench/ingest.ts)
 *   sync      inline (`wait_seconds`) echo turns/s, 16 callers on 16 threads, ÷ health (sync.ts)
 *   web       the web channel's doors: 16 visitors, each with its page session and an open stream,
 *             POST a message and wait for its answer frame; messages/s ÷ health, POST → frame
 *             latency (web.ts)
 *   persons   the person path: inline echo-agent turns on one route without persons,
 *             then with `multichannel: true` on linked callers and on first contacts (persons.ts)
 *   webhook   ack time of signed Telegram webhooks, steady rate then a 5× burst, vs 3 s (webhook.ts)
 *   overhead  inbound → signed HTTPS callback for a 50 ms HTTP tool, bridge vs a direct relay
 *             Worker the bench starts (overhead.ts)
 *   hol       head-of-line isolation: 200 ms HTTP tool, 1 thread back to back vs 64 threads × 3
 *             queued, ratio and FIFO violations at the receiver; sets
 *             CONVERSATIONS_MAX_CONCURRENT_TURNS=64 for the run (hol.ts)
 *   faults    fault recovery: the receiver fails 30 % of callbacks, goes down 10 s, recovers; backoff
 *             scaled to seconds for the run; delivered, double 2xx, drain vs 1.2 × next step (faults.ts)
 *   stream    web visitors on an llm agent whose model streams its answer, on a bridge of its own
 *             with the usage meter on: first draft, drafts per answer, the gap between drafts vs
 *             the 150 ms throttle, and D1 statements and object rows written per message, streamed
 *             vs one JSON answer (stream.ts)
 *   sustained NOT in the default run (it takes many minutes): `--sustained` adds it, `--phases
 *             sustained` runs it alone. 20,000 async messages on 8 hot threads, each answered by a
 *             signed callback that fails 10 % of the time, on a bridge of its own under `--inspect`;
 *             the JavaScript heap after forced GC (DevTools protocol), the heap before GC and
 *             workerd's RSS every 1,000 messages, two heap snapshots diffed by constructor and each
 *             Durable Object's retained size; pass when the heap after GC stays within 10 % after the
 *             warm-up (sustained.ts, heap.ts)
 *
 * `GET /api/health` is measured before ingest and after sync (and web); the ratios use the mean of the two,
 * so a load change on a shared machine shows as two different health figures. Only loopback
 * traffic. It prints a table (and with --json one JSON line), stops everything it started, and
 * exits non-zero when any request failed. On Linux it also prints the CPU each message phase cost
 * per operation, split between the bench itself and the server's processes (workerd and wrangler's
 * Node process, read from /proc), and the rate the machine's CPUs bound that cost to.
 *
 * Options (all optional): --phases ingest,sync,web,persons,webhook,overhead,hol,faults,stream (all) --callers N (16)
 * --threads N ingest threads (64) --ingest N per caller (40) --turns N sync turns per caller (30)
 * --web N web messages per visitor (30) --health N per caller (200) --max-seconds S per closed-loop phase (10) --webhook-rate R steady
 * webhooks/s (10; the burst is 5R) --webhook-seconds S per webhook stage (3) --overhead-callers N
 * (4) --overhead N per caller (25) --json --inspect --state-in-memory (see below). The sustained phase:
 * --sustained, --sustained-messages N (20000) --sustained-threads N (8) --sustained-callers N (16)
 * --sustained-every N messages between heap readings (1000) --sustained-warmup N (5000)
 * --sustained-window N messages not yet called back (200) --sustained-failures share of callbacks
 * answered 503 (0.1) --no-snapshots.
 *
 * The bridge runs as `npm start` runs it: wrangler's programmatic dev API with the DevTools
 * inspector off (scripts/serve.mjs). `--inspect` runs it as `npm start -- --inspect` does, through
 * `wrangler dev` with its inspector proxy, which forwards an event to wrangler's Node process for
 * every subrequest (each D1 query, each Durable Object call): a development-tool cost, shown for
 * comparison. The relay Worker of the overhead phase is always served the same way as the bridge.
 *
 * The servers keep their local state (D1, every Durable Object's SQLite) in a throwaway directory
 * under the temporary directory, on disk as `npm start`'s `.wrangler/state` is: each object's
 * commit then waits for the disk to sync it. `--state-in-memory` puts that directory on /dev/shm
 * (Linux) instead, which separates what the code costs from what this machine's disk costs; the
 * deployed platform commits to its own storage, neither of these.
 *
 * `--cost` runs only the cost phase instead (scripts/bench/cost.ts, docs/cost.md): each kind of
 * message counted with the usage meter on, priced from scripts/bench/prices.json.
 */
import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { BOOTSTRAP_TOKEN, freePort, http } from "./bench/harness";
import { type FakeProviders, startFakeProviders } from "./bench/fake-providers";
import { type CallbackReceiver, startReceiver } from "./bench/receiver";
import { type TestPki, makeTestPki, trustEnv } from "./bench/tls";
import { healthPhase } from "./bench/health";
import { ingestPhase, setupIngest } from "./bench/ingest";
import {
  type Ctx,
  type Phase,
  type Row,
  type Server,
  fmt,
  load,
  machine,
  meterServer,
  percentile,
  printCpu,
  printFailureLogs,
  printTable,
  summary,
} from "./bench/lib";
import { CallbackWaiter, OVERHEAD_ROUTE, TOOL_DELAY_MS, overheadPhase, setupOverhead, startDelayTool } from "./bench/overhead";
import { DOWN_SECONDS, FAULTY_SECONDS, FAULT_HANG_MS, FAULT_VARS, faultsPhase } from "./bench/faults";
import { HOL_MAX_CONCURRENT_TURNS, HOL_THREADS, HOL_TOOL_DELAY_MS, holPhase, setupToolRoute } from "./bench/hol";
import { type ScriptedReceiver, startScriptedReceiver } from "./bench/scripted-receiver";
import { startBridge, startRelay } from "./bench/server";
import { attachInspector } from "./bench/heap";
import {
  FLAT_TOLERANCE,
  SUSTAINED_FAILURE_RATE,
  SUSTAINED_VARS,
  type SustainedOptions,
  printSnapshots,
  setupSustained,
  sustainedPhase,
} from "./bench/sustained";
import { costBench } from "./bench/cost";
import { enablePersons, linkCallers, personsPhase, setupPersons } from "./bench/persons";
import { setupSync, syncPhase } from "./bench/sync";
import { type Visitor, openVisitors, setupWeb, webPhase } from "./bench/web";
import { STREAM_DEFAULTS, runStream } from "./bench/stream";
import { SLACK_DEADLINE_MS, setupWebhook, telegramVars, webhookPhase } from "./bench/webhook";

const DEFAULT_PHASES = ["ingest", "sync", "web", "persons", "webhook", "overhead", "hol", "faults", "stream"] as const;
const ALL_PHASES = [...DEFAULT_PHASES, "sustained"] as const;
type PhaseName = (typeof ALL_PHASES)[number];

interface Options {
  phases: Set<PhaseName>;
  inspector: boolean;
  /** Where the servers' throwaway local state lives: the temporary directory (disk), or /dev/shm. */
  stateInMemory: boolean;
  callers: number;
  threads: number;
  ingest: number;
  turns: number;
  web: number;
  health: number;
  maxSeconds: number;
  webhookRate: number;
  webhookSeconds: number;
  overheadCallers: number;
  overhead: number;
  json: boolean;
  sustained: SustainedOptions;
}

function parseArgs(argv: string[]): Options {
  const o: Options = {
    phases: new Set<PhaseName>(DEFAULT_PHASES),
    inspector: false,
    callers: 16,
    threads: 64,
    ingest: 40,
    turns: 30,
    web: 30,
    health: 200,
    maxSeconds: 10,
    webhookRate: 10,
    webhookSeconds: 3,
    overheadCallers: 4,
    overhead: 25,
    json: false,
    stateInMemory: false,
    sustained: { messages: 20_000, threads: 8, callers: 16, every: 1_000, warmup: 5_000, window: 200, snapshots: true, failures: SUSTAINED_FAILURE_RATE },
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const num = (): number => {
      const v = Number(argv[++i]);
      if (!Number.isFinite(v) || v <= 0) throw new Error(`${a} needs a positive number`);
      return v;
    };
    if (a === "--phases") {
      const names = (argv[++i] ?? "")
        .split(",")
        .map((s) => s.trim())
        .filter(Boolean);
      for (const n of names) if (!(ALL_PHASES as readonly string[]).includes(n)) throw new Error(`unknown phase ${n} (known: ${ALL_PHASES.join(", ")})`);
      if (!names.length) throw new Error("--phases needs a list");
      o.phases = new Set(names as PhaseName[]);
    } else if (a === "--callers") o.callers = Math.floor(num());
    else if (a === "--threads") o.threads = Math.floor(num());
    else if (a === "--ingest") o.ingest = Math.floor(num());
    else if (a === "--turns") o.turns = Math.floor(num());
    else if (a === "--web") o.web = Math.floor(num());
    else if (a === "--health") o.health = Math.floor(num());
    else if (a === "--max-seconds") o.maxSeconds = num();
    else if (a === "--webhook-rate") o.webhookRate = num();
    else if (a === "--webhook-seconds") o.webhookSeconds = num();
    else if (a === "--overhead-callers") o.overheadCallers = Math.floor(num());
    else if (a === "--overhead") o.overhead = Math.floor(num());
    else if (a === "--json") o.json = true;
    else if (a === "--sustained") o.phases.add("sustained");
    else if (a === "--sustained-messages") o.sustained.messages = Math.floor(num());
    else if (a === "--sustained-threads") o.sustained.threads = Math.floor(num());
    else if (a === "--sustained-callers") o.sustained.callers = Math.floor(num());
    else if (a === "--sustained-every") o.sustained.every = Math.floor(num());
    else if (a === "--sustained-warmup") o.sustained.warmup = Math.floor(num());
    else if (a === "--sustained-window") o.sustained.window = Math.floor(num());
    else if (a === "--no-snapshots") o.sustained.snapshots = false;
    else if (a === "--sustained-failures") {
      const v = Number(argv[++i]);
      if (!(v >= 0 && v < 1)) throw new Error("--sustained-failures needs a share from 0 to below 1");
      o.sustained.failures = v;
    } else if (a === "--inspect") o.inspector = true;
    else if (a === "--state-in-memory") o.stateInMemory = true;
    else throw new Error(`unknown option ${a}`);
  }
  return o;
}

/** The Durable Object classes wrangler.toml binds, whose instances the sustained phase weighs. */
function durableObjectClasses(): string[] {
  const toml = readFileSync(join(import.meta.dirname, "..", "wrangler.toml"), "utf8");
  return [...new Set([...toml.matchAll(/^class_name\s*=\s*"([A-Za-z0-9_]+)"/gm)].map((m) => m[1]))];
}

/** Everything the run started, stopped in reverse order whatever happens. */
const cleanups: Array<() => Promise<void> | void> = [];
async function stopAll(): Promise<void> {
  for (let cleanup = cleanups.pop(); cleanup; cleanup = cleanups.pop()) {
    try {
      await cleanup();
    } catch {
      /* keep stopping the rest */
    }
  }
}

/** Bootstraps a fresh bridge: an admin key, the echo execution key and a caller key. */
async function prepare(base: string): Promise<Ctx> {
  const boot = await http(base, "POST", "/api/keys/bootstrap", { body: { user_id: "bench-admin", description: "bench", bootstrap_token: BOOTSTRAP_TOKEN } });
  if (boot.status !== 200) throw new Error(`bootstrap failed: HTTP ${boot.status} ${JSON.stringify(boot.body)}`);
  const admin: string = boot.body.data.token;
  // Least privilege: the echo routes run as a key that may run the echo tool and agent and nothing else.
  const exec = await http(base, "POST", "/api/auth/api-keys", {
    key: admin,
    body: { user_id: "bench-exec", description: "bench execution key", scopes: ["tool:echo", "agent:echo"] },
  });
  if (exec.status !== 200) throw new Error(`minting the execution key failed: HTTP ${exec.status}`);
  const callerKey = await http(base, "POST", "/api/auth/api-keys", {
    key: admin,
    body: { user_id: "bench-caller", description: "bench caller", scopes: ["conversations"] },
  });
  if (callerKey.status !== 200) throw new Error(`minting the caller key failed: HTTP ${callerKey.status}`);
  return { base, admin, caller: callerKey.body.data.api_key, execUser: "bench-exec" };
}

/**
 * The sustained phase on a bridge of its own, always under --inspect: the DevTools protocol is how
 * the heap is collected and read. Returns its table row, its JSON and whether it failed.
 */
async function runSustained(
  s: SustainedOptions,
  vars: Record<string, string>,
  env: Record<string, string>,
  pki: TestPki,
): Promise<{ row: Row; json: unknown; failed: number }> {
  const srx = await startScriptedReceiver(pki);
  cleanups.push(() => srx.stop());
  console.log("bench: starting a bridge under --inspect for the sustained phase …");
  const inspectorPort = await freePort();
  const sBridge = await startBridge(true, { ...vars, ...SUSTAINED_VARS }, env, inspectorPort);
  cleanups.push(() => sBridge.stop());
  const inspector = await attachInspector(inspectorPort);
  cleanups.push(() => inspector.close());
  const sctx = await prepare(sBridge.baseUrl);
  await setupSustained(sctx, `${srx.origin}/bench/sustained`);
  console.log(
    `bench: sustained: ${s.messages} messages on ${s.threads} threads from ${s.callers} callers, at most ${s.window} not yet called back, heap every ${s.every} (warm-up ${s.warmup}) …`,
  );
  const r = await sustainedPhase(sctx, inspector, sBridge.pid?.(), srx, durableObjectClasses(), s, (l) => console.log(`bench: ${l}`));
  printSnapshots(r, (l) => console.log(`bench: ${l}`));
  const after = r.checkpoints.filter((c) => c.messages >= s.warmup);
  const heapMb = (b: number | undefined) => fmt((b ?? Number.NaN) / 2 ** 20, 2);
  const row: Row = {
    phase: r.phase,
    note: `heap after GC ${heapMb(after[0]?.heapAfterGc)} → ${heapMb(after.at(-1)?.heapAfterGc)} MB after warm-up, spread ${fmt(100 * r.spread, 1)} % (target ≤ ${100 * FLAT_TOLERANCE} %: ${r.pass ? "met" : "NOT met"})`,
  };
  const json = {
    options: s,
    checkpoints: r.checkpoints,
    spread: r.spread,
    pass: r.pass,
    objects: r.snapshots.map((x) => ({ at: x.at, retained: Object.fromEntries(x.summary.objects) })),
  };
  await inspector.close();
  return { row, json, failed: r.phase.failed + (r.pass ? 0 : 1) };
}

async function main(): Promise<number> {
  if (process.argv.includes("--cost")) return runCost();
  const opts = parseArgs(process.argv.slice(2));
  const has = (p: PhaseName) => opts.phases.has(p);
  for (const sig of ["SIGINT", "SIGTERM"] as const) process.once(sig, () => void stopAll().finally(() => process.exit(130)));
  // Never leave a wrangler dev process group behind, whatever goes wrong.
  process.once("uncaughtException", (err) => {
    console.error(`bench failed: ${err instanceof Error ? err.stack : String(err)}`);
    void stopAll().finally(() => process.exit(1));
  });

  if (opts.stateInMemory) {
    if (process.platform !== "linux") throw new Error("--state-in-memory needs Linux's /dev/shm");
    // The harness makes every server's directory under the temporary directory.
    process.env.TMPDIR = "/dev/shm";
  }
  const loadAtStart = load();
  try {
    // The rate cap must not interfere: the default is 20 turns/hour per (route, caller).
    const vars: Record<string, string> = { CONVERSATIONS_PER_ADDRESS_TURNS_PER_HOUR: "100000000" };
    let env: Record<string, string> = {};
    let fake: FakeProviders | null = null;
    let pki: TestPki | null = null;
    let rx: CallbackReceiver | null = null;
    let tool: Server | null = null;
    if (has("webhook")) {
      const f = await startFakeProviders();
      fake = f;
      cleanups.push(() => f.close());
      Object.assign(vars, telegramVars(f));
    }
    if (has("overhead") || has("hol") || has("faults") || has("sustained")) {
      const p = makeTestPki();
      pki = p;
      cleanups.push(() => p.cleanup());
      env = trustEnv(p);
    }
    let holTool: Server | null = null;
    let holRx: ScriptedReceiver | null = null;
    let faultRx: ScriptedReceiver | null = null;
    if ((has("hol") || has("faults")) && pki) {
      const t = await startDelayTool(HOL_TOOL_DELAY_MS);
      holTool = t;
      cleanups.push(() => t.stop());
      // One receiver per phase, so the fault script never touches the hol run.
      if (has("hol")) {
        const r = await startScriptedReceiver(pki);
        holRx = r;
        cleanups.push(() => r.stop());
        // Turns in flight are capped per isolate (default 10): let 64 threads run at once.
        vars.CONVERSATIONS_MAX_CONCURRENT_TURNS = String(HOL_MAX_CONCURRENT_TURNS);
        console.log(
          `bench: hol sets CONVERSATIONS_MAX_CONCURRENT_TURNS=${HOL_MAX_CONCURRENT_TURNS} (default 10 per isolate) for the whole run, so ${HOL_THREADS} threads can run turns at once`,
        );
      }
      if (has("faults")) {
        const r = await startScriptedReceiver(pki, FAULT_HANG_MS);
        faultRx = r;
        cleanups.push(() => r.stop());
        console.log(
          `bench: faults runs on a second bridge of its own with ${Object.entries(FAULT_VARS)
            .map(([k, v]) => `${k}=${v}`)
            .join(" ")}`,
        );
      }
    }
    if (has("overhead") && pki) {
      const p = pki;
      const r = await startReceiver(p);
      rx = r;
      cleanups.push(() => r.stop());
      const t = await startDelayTool();
      tool = t;
      cleanups.push(() => t.stop());
    }

    // The sustained phase first, on its own bridge; alone, it needs no other.
    const sustained = has("sustained") && pki ? await runSustained(opts.sustained, vars, env, pki) : null;
    if (sustained && opts.phases.size === 1) {
      console.log("");
      console.log(`load average at start: ${loadAtStart}, at end: ${load()}`);
      printTable([sustained.row]);
      if (opts.json) console.log(JSON.stringify({ machine: machine(), sustained: sustained.json }));
      return sustained.failed ? 1 : 0;
    }

    console.log(
      opts.inspector
        ? "bench: starting the bridge (npm start -- --inspect: wrangler dev, inspector on) …"
        : "bench: starting the bridge (npm start: inspector off) …",
    );
    const bridge = await startBridge(opts.inspector, vars, env);
    cleanups.push(() => bridge.stop());
    const base = bridge.baseUrl;
    // Per-operation CPU of the message phases (health, ingest, sync, web, hol), printed after the table; the
    // client's share includes the tool and the callback receivers the bench serves in its own process.
    meterServer(bridge.pid?.());
    const metered: Phase[] = [];

    const ctx = await prepare(base);

    const rows: Row[] = [];
    const json: Record<string, unknown> = {
      machine: machine(),
      inspector: opts.inspector,
      state_in_memory: opts.stateInMemory,
      callers: opts.callers,
      phases: [...opts.phases],
    };
    let failures = 0;
    const count = (...ps: Phase[]) => ps.forEach((p) => (failures += p.failed));

    // ---- ingest, sync and web, with health before and after --------------------------------
    if (has("ingest") || has("sync") || has("web")) {
      if (has("ingest")) await setupIngest(ctx);
      await setupSync(ctx); // the warm-up uses it either way
      console.log("bench: warming up …");
      await healthPhase(base, "warm-up", opts.callers, 30, 20);
      const warm = await syncPhase(ctx, "warm", opts.callers, 5, 30, "warm-up turns");
      if (warm.failed) console.log(`bench: warm-up turn failures ${JSON.stringify(warm.failures)}`);
      // The visitors open their pages and streams before the timed phases; an idle open stream is
      // a hibernated WebSocket, so it does not weigh on the phases before web.
      let visitors: Visitor[] = [];
      if (has("web")) {
        await setupWeb(ctx);
        console.log(`bench: opening ${opts.callers} web visitors (page session + stream) …`);
        visitors = await openVisitors(base, opts.callers);
        cleanups.push(() => visitors.forEach((v) => v.stop()));
        const warmWeb = await webPhase(visitors, "warm", 5, 30, "web warm-up");
        if (warmWeb.phase.failed) console.log(`bench: web warm-up failures ${JSON.stringify(warmWeb.phase.failures)}`);
      }

      const h1 = await healthPhase(base, "(before)", opts.callers, opts.health, opts.maxSeconds);
      let ingest: Awaited<ReturnType<typeof ingestPhase>> | null = null;
      if (has("ingest")) {
        console.log("bench: ingest …");
        ingest = await ingestPhase(ctx, "run", opts.callers, opts.threads, opts.ingest, opts.maxSeconds);
        console.log(
          `bench: ingest backlog ${ingest.drainSeconds === null ? "NOT drained within 60 s" : `drained ${fmt(ingest.drainSeconds, 1)} s after the phase`}`,
        );
      }
      let sync: Phase | null = null;
      if (has("sync")) {
        console.log("bench: sync turns …");
        sync = await syncPhase(ctx, "run", opts.callers, opts.turns, opts.maxSeconds);
      }
      let web: Awaited<ReturnType<typeof webPhase>> | null = null;
      if (has("web")) {
        console.log("bench: web messages …");
        web = await webPhase(visitors, "run", opts.web, opts.maxSeconds);
      }
      const h2 = await healthPhase(base, "(after)", opts.callers, opts.health, opts.maxSeconds);
      metered.push(...[h1, ingest?.phase, sync, web?.phase, h2].filter((p): p is Phase => !!p));
      const healthRate = (h1.perSecond + h2.perSecond) / 2;
      count(h1, h2);
      rows.push({ phase: h1 });
      json.health_before = summary(h1);
      if (ingest) {
        const ratio = ingest.phase.perSecond / healthRate;
        count(ingest.phase);
        rows.push({
          phase: ingest.phase,
          note: `÷ health ${fmt(ratio, 3)} (target ≥ 0.4)${ingest.drainSeconds === null ? "; backlog not drained in 60 s" : ""}`,
        });
        json.ingest = { ...summary(ingest.phase), threads: opts.threads, ratio, drain_seconds: ingest.drainSeconds };
      }
      if (sync) {
        const ratio = sync.perSecond / healthRate;
        count(sync);
        rows.push({ phase: sync, note: `÷ health ${fmt(ratio, 3)} (target ≥ 0.35)` });
        json.sync = { ...summary(sync), ratio };
      }
      if (web) {
        const ratio = web.phase.perSecond / healthRate;
        const p95 = percentile(web.phase.latencies, 95);
        const ack50 = percentile(web.ackMs, 50);
        count(web.phase);
        rows.push({
          phase: web.phase,
          note: `÷ health ${fmt(ratio, 3)}; POST → answer frame, p95 ${fmt(p95)} ms; the POST's own 200 p50 ${fmt(ack50)} ms; frame before the 200: ${web.framesFirst}/${web.phase.ok}`,
        });
        json.web = {
          ...summary(web.phase),
          p95_ms: p95,
          ratio,
          post_ack_p50_ms: ack50,
          post_ack_p99_ms: percentile(web.ackMs, 99),
          frame_before_post_answer: web.framesFirst,
        };
      }
      rows.push({ phase: h2, note: `mean health ${fmt(healthRate)} /s` });
      json.health_after = summary(h2);
      json.health_mean_per_second = healthRate;
    }

    // ---- the person path ---------------------------------------------------------------------
    if (has("persons")) {
      await setupPersons(ctx);
      console.log("bench: the person path …");
      await personsPhase(ctx, "warm-up", "warm", opts.callers, 5, 30, "one", false);
      const plain = await personsPhase(ctx, "plain, no config", "plain", opts.callers, opts.turns, opts.maxSeconds, "one", false);
      await enablePersons(ctx);
      await linkCallers(ctx, "linked", opts.callers);
      const linked = await personsPhase(ctx, "multichannel, linked persons", "linked", opts.callers, opts.turns, opts.maxSeconds, "pair", true);
      const first = await personsPhase(ctx, "multichannel, first contacts", "first", opts.callers, opts.turns, opts.maxSeconds, "fresh", false);
      count(plain, linked, first);
      const rLinked = linked.perSecond / plain.perSecond;
      const rFirst = first.perSecond / plain.perSecond;
      rows.push({ phase: plain, note: "echo agent, route threads, no person work" });
      rows.push({ phase: linked, note: `÷ plain ${fmt(rLinked, 3)}; one PersonDirectory call per message, person threads` });
      rows.push({ phase: first, note: `÷ plain ${fmt(rFirst, 3)}; every message creates its person` });
      json.persons = { plain: summary(plain), linked: { ...summary(linked), ratio: rLinked }, first: { ...summary(first), ratio: rFirst } };
    }

    // ---- webhook ack -------------------------------------------------------------------------
    if (has("webhook") && fake) {
      await setupWebhook(ctx);
      console.log("bench: telegram webhooks …");
      await webhookPhase(ctx, fake, Math.max(1, Math.round(opts.webhookRate / 2)), 1, 16, 500_000); // warm-up
      const w = await webhookPhase(ctx, fake, opts.webhookRate, opts.webhookSeconds, opts.threads, 700_000);
      count(w.steady, w.burst);
      const p99 = percentile(w.burst.latencies, 99);
      rows.push({ phase: w.steady, note: "open loop; latency = ack time from the scheduled send" });
      rows.push({
        phase: w.burst,
        note: `p99 ${p99 <= SLACK_DEADLINE_MS ? "within" : "OVER"} Slack's 3 s${w.drainSeconds === null ? "; answers NOT all sent within 20 s" : `; all answers sent ${fmt(w.drainSeconds, 1)} s after the burst`}`,
      });
      json.webhook = {
        steady_rate: opts.webhookRate,
        burst_rate: opts.webhookRate * 5,
        steady: summary(w.steady),
        burst: summary(w.burst),
        deadline_ms: SLACK_DEADLINE_MS,
        drain_seconds: w.drainSeconds,
      };
    }

    // ---- turn overhead vs a direct relay ----------------------------------------------------
    if (has("overhead") && rx && tool && pki) {
      const waiter = new CallbackWaiter(rx);
      const secret = await setupOverhead(ctx, tool.baseUrl, `${rx.origin}/bench/bridge`);
      const relaySecret = randomBytes(32).toString("base64url");
      console.log("bench: starting the relay worker …");
      const relay = await startRelay(opts.inspector, { TOOL_URL: tool.baseUrl, CALLBACK_URL: `${rx.origin}/bench/relay`, CALLBACK_SECRET: relaySecret }, env);
      cleanups.push(() => relay.stop());
      const door = `${base}/api/conversations/${OVERHEAD_ROUTE}/messages`;
      console.log("bench: turn overhead …");
      const c = opts.overheadCallers;
      // Warm-up of both paths, then relay / bridge / relay / bridge halves, pooled per side, so a load change hits both.
      await overheadPhase("warm-up relay", relay.baseUrl, null, relaySecret, waiter, "warm-relay", c, 3, 20);
      await overheadPhase("warm-up bridge", door, ctx.caller, secret, waiter, "warm-bridge", c, 3, 20);
      const half = Math.max(1, Math.ceil(opts.overhead / 2));
      const parts: Record<"relay" | "bridge", Phase[]> = { relay: [], bridge: [] };
      for (let round = 0; round < 2; round++) {
        parts.relay.push(await overheadPhase("relay", relay.baseUrl, null, relaySecret, waiter, `relay-${round}`, c, half, opts.maxSeconds / 2));
        parts.bridge.push(await overheadPhase("bridge", door, ctx.caller, secret, waiter, `bridge-${round}`, c, half, opts.maxSeconds / 2));
      }
      const pool = (name: string, ps: Phase[]): Phase => {
        const latencies = ps.flatMap((p) => p.latencies).sort((a, b) => a - b);
        const failuresOf: Record<string, number> = {};
        for (const p of ps) for (const [k, v] of Object.entries(p.failures)) failuresOf[k] = (failuresOf[k] ?? 0) + v;
        const seconds = ps.reduce((s, p) => s + p.seconds, 0);
        const ok = ps.reduce((s, p) => s + p.ok, 0);
        return { name, ok, failed: ps.reduce((s, p) => s + p.failed, 0), seconds, perSecond: ok / seconds, latencies, failures: failuresOf };
      };
      const relayP = pool(`overhead: relay worker → callback (${TOOL_DELAY_MS} ms tool, ${c} callers)`, parts.relay);
      const bridgeP = pool(`overhead: bridge 202 → callback (${TOOL_DELAY_MS} ms tool, ${c} callers)`, parts.bridge);
      count(relayP, bridgeP);
      const r50 = percentile(bridgeP.latencies, 50) / percentile(relayP.latencies, 50);
      const r99 = percentile(bridgeP.latencies, 99) / percentile(relayP.latencies, 99);
      rows.push({ phase: relayP, note: "no object, no storage" });
      rows.push({
        phase: bridgeP,
        note: `p50 ${fmt(r50, 2)}× relay (target ≤ 1.5: ${r50 <= 1.5 ? "met" : "NOT met"}), p99 ${fmt(r99, 2)}× (target ≤ 2: ${r99 <= 2 ? "met" : "NOT met"})`,
      });
      json.overhead = { tool_delay_ms: TOOL_DELAY_MS, callers: c, relay: summary(relayP), bridge: summary(bridgeP), p50_ratio: r50, p99_ratio: r99 };
    }

    // ---- head-of-line isolation -------------------------------------------------------------
    if (has("hol") && holRx && holTool) {
      await setupToolRoute(ctx, "bench-hol", "bench-hol-delay", holTool.baseUrl, HOL_TOOL_DELAY_MS, `${holRx.origin}/bench/hol`);
      console.log("bench: head-of-line isolation …");
      const h = await holPhase(ctx, holRx, "bench-hol");
      metered.push(h.many.phase);
      count(h.single.phase, h.many.phase);
      const fifo = h.single.fifoViolations + h.many.fifoViolations;
      if (fifo) failures += fifo;
      for (const r of [h.single, h.many]) if (r.violationSample) console.log(`bench: hol FIFO violation, ${r.violationSample}`);
      rows.push({ phase: h.single.phase, note: `send → last callback; FIFO violations ${h.single.fifoViolations}` });
      rows.push({
        phase: h.many.phase,
        note: `ratio ${fmt(h.ratio, 3)} (target ≥ 0.5: ${h.ratio >= 0.5 ? "met" : "NOT met"}); FIFO violations ${h.many.fifoViolations} (target 0); queueing took ${fmt(h.many.sendSeconds, 2)} s; MAX_CONCURRENT_TURNS=${HOL_MAX_CONCURRENT_TURNS}`,
      });
      json.hol = {
        tool_delay_ms: HOL_TOOL_DELAY_MS,
        max_concurrent_turns: HOL_MAX_CONCURRENT_TURNS,
        single: summary(h.single.phase),
        many: { ...summary(h.many.phase), send_seconds: h.many.sendSeconds },
        ratio: h.ratio,
        fifo_violations: fifo,
      };
    }

    // ---- fault recovery ----------------------------------------------------------------------
    if (has("faults") && faultRx && holTool) {
      // Its own bridge: the scaled-down delivery settings (1 s callback timeout) must not reach the other phases.
      console.log("bench: starting a second bridge for the fault phase …");
      const faultBridge = await startBridge(opts.inspector, { ...vars, ...FAULT_VARS }, env);
      cleanups.push(() => faultBridge.stop());
      const fctx = await prepare(faultBridge.baseUrl);
      await setupToolRoute(fctx, "bench-faults", "bench-faults-delay", holTool.baseUrl, HOL_TOOL_DELAY_MS, `${faultRx.origin}/bench/faults`);
      console.log(`bench: fault recovery (${FAULTY_SECONDS} s at 30 % failures, ${DOWN_SECONDS} s down, then up) …`);
      const f = await faultsPhase(fctx, faultRx, "bench-faults");
      count(f.phase);
      if (f.duplicates2xx) failures += f.duplicates2xx;
      if (!f.pass) failures += 1;
      const drain = f.drainSeconds === null ? "NOT drained" : `${fmt(f.drainSeconds, 2)} s`;
      console.log(
        `bench: faults: sent ${f.sent}, delivered ${f.delivered}, ids with two 2xx ${f.duplicates2xx}, callbacks seen ${JSON.stringify(f.injected)}, undelivered at recovery ${f.pendingAtRecovery}, drain after recovery ${drain}, next backoff step ${f.nextStepSeconds} s (limit ${fmt(1.2 * f.nextStepSeconds, 1)} s): ${f.pass ? "PASS" : "FAIL"}`,
      );
      rows.push({
        phase: f.phase,
        note: `delivered ${f.delivered}/${f.sent}, double 2xx ${f.duplicates2xx}, drain ${drain} vs 1.2 × ${f.nextStepSeconds} s: ${f.pass ? "PASS" : "FAIL"}`,
      });
      json.faults = {
        sent: f.sent,
        delivered: f.delivered,
        duplicates_2xx: f.duplicates2xx,
        injected: f.injected,
        pending_at_recovery: f.pendingAtRecovery,
        drain_seconds: f.drainSeconds,
        next_step_seconds: f.nextStepSeconds,
        pass: f.pass,
        vars: FAULT_VARS,
        latency: summary(f.phase),
      };
    }

    // ---- streamed answers -----------------------------------------------------------------------
    if (has("stream")) {
      const s = await runStream(STREAM_DEFAULTS, vars, env, cleanups);
      rows.push(...s.rows);
      json.stream = s.json;
      failures += s.failed;
    }

    if (sustained) {
      rows.push(sustained.row);
      json.sustained = sustained.json;
      failures += sustained.failed;
    }

    const m = json.machine as Record<string, string | number>;
    console.log("");
    console.log(`machine: ${m.cpus} CPUs (${m.cpu_model}), ${m.memory_gib} GiB, Node ${m.node}, wrangler ${m.wrangler}, workerd ${m.workerd}`);
    console.log(
      `server: ${opts.inspector ? "npm start -- --inspect (wrangler dev, inspector proxy on)" : "npm start (wrangler's dev API, inspector off)"}; local state ${opts.stateInMemory ? "in memory (/dev/shm)" : "on disk"}; loopback only`,
    );
    const loadAtEnd = load();
    console.log(`load average at start: ${loadAtStart}, at end: ${loadAtEnd}`);
    printTable(rows);
    printCpu(metered);
    if (opts.json) console.log(JSON.stringify({ ...json, load_start: loadAtStart, load_end: loadAtEnd }));
    if (failures) printFailureLogs("bench", bridge);
    return failures ? 1 : 0;
  } finally {
    await stopAll();
  }
}

/** `--cost`: the cost phase alone, with its own bridge (scripts/bench/cost.ts). */
async function runCost(): Promise<number> {
  for (const sig of ["SIGINT", "SIGTERM"] as const) process.once(sig, () => void stopAll().finally(() => process.exit(130)));
  try {
    return await costBench(
      process.argv.slice(2).filter((a) => a !== "--cost"),
      cleanups,
    );
  } finally {
    await stopAll();
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`bench failed: ${err instanceof Error ? err.stack : String(err)}`);
    void stopAll().finally(() => process.exit(1));
  },
);

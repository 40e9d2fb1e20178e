/**
 * `npm run bench`: one run against a real `wrangler dev` (started through the e2e harness, i.e.
 * the same `npm start` path: D1 migrations, then `wrangler dev` on free loopback ports with a
 * throwaway persistence directory) that measures
 *   (a) requests/s of `GET /api/health`, the floor cost of one request through the Worker, and
 *   (b) message-door turns/s with `wait_seconds` on an api route to the built-in `echo` tool,
 *       N concurrent callers, each on its own thread,
 * and prints both, the ratio (b)/(a) (target ≥ 0.25) and p50/p99 latencies. Only loopback
 * traffic. It stops everything it started and exits by itself.
 *
 * Options (all optional): --callers N (8) --turns N per caller (60) --health N per caller (400)
 * --max-seconds S per phase (60) --json (also print one JSON line) --no-inspector (see below).
 *
 * `wrangler dev` always runs its DevTools inspector proxy, which enables the runtime's Network
 * domain and forwards every inspector event (one per subrequest: each D1 query, each Durable
 * Object call) to the wrangler Node process, which formats it and appends it to its debug log
 * file. That is a development-tool cost, not the Worker's. `--no-inspector` prepares the same
 * persistence directory through the harness (D1 migrations), then serves the same Worker through
 * wrangler's programmatic API with the inspector off, to show the figures without that cost.
 */
import { readFileSync, rmSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { BOOTSTRAP_TOKEN, ROOT, freePort, http, startDev } from "../test/e2e/harness";

interface Server {
  baseUrl: string;
  /** The throwaway state directory, removed after the run. */
  persistDir: string;
  stop: () => Promise<void>;
}

/** `wrangler dev` exactly as `npm start` runs it (the e2e harness). */
async function startWranglerDev(vars: Record<string, string>): Promise<Server> {
  return startDev({ vars });
}

/** The same Worker and state layout, served by wrangler's programmatic API with the inspector off. */
async function startWithoutInspector(vars: Record<string, string>): Promise<Server> {
  // The npm start path applies the D1 migrations into a fresh persistence directory; reuse it.
  const prepared = await startDev({ vars });
  await prepared.stop();
  const { unstable_startWorker } = await import("wrangler");
  const port = await freePort();
  const worker = await unstable_startWorker({
    config: join(ROOT, "wrangler.toml"),
    dev: { server: { hostname: "127.0.0.1", port }, inspector: false, persist: prepared.persistDir, logLevel: "warn" },
    bindings: Object.fromEntries(Object.entries(vars).map(([k, v]) => [k, { type: "plain_text" as const, value: v }])),
  });
  await worker.ready;
  return { baseUrl: `http://127.0.0.1:${port}`, persistDir: prepared.persistDir, stop: () => worker.dispose() };
}

interface Options {
  inspector: boolean;
  callers: number;
  turns: number;
  health: number;
  maxSeconds: number;
  json: boolean;
}

function parseArgs(argv: string[]): Options {
  const o: Options = { inspector: true, callers: 8, turns: 60, health: 400, maxSeconds: 60, json: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const num = (): number => {
      const v = Number(argv[++i]);
      if (!Number.isFinite(v) || v <= 0) throw new Error(`${a} needs a positive number`);
      return v;
    };
    if (a === "--callers") o.callers = Math.floor(num());
    else if (a === "--turns") o.turns = Math.floor(num());
    else if (a === "--health") o.health = Math.floor(num());
    else if (a === "--max-seconds") o.maxSeconds = num();
    else if (a === "--json") o.json = true;
    else if (a === "--no-inspector") o.inspector = false;
    else throw new Error(`unknown option ${a}`);
  }
  return o;
}

interface Phase {
  name: string;
  ok: number;
  failed: number;
  seconds: number;
  perSecond: number;
  /** Latencies of successful requests, milliseconds, sorted. */
  latencies: number[];
  failures: Record<string, number>;
}

function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

/**
 * Runs `callers` concurrent loops; loop c performs `perCaller` calls of `once(c, i)` or stops when
 * the phase's time bound runs out. `once` answers a failure reason, or null on success.
 */
async function phase(name: string, callers: number, perCaller: number, maxSeconds: number, once: (caller: number, i: number) => Promise<string | null>): Promise<Phase> {
  const latencies: number[] = [];
  const failures: Record<string, number> = {};
  let ok = 0;
  let failed = 0;
  const start = performance.now();
  const deadline = start + maxSeconds * 1000;
  await Promise.all(
    Array.from({ length: callers }, async (_, c) => {
      for (let i = 0; i < perCaller && performance.now() < deadline; i++) {
        const t0 = performance.now();
        let reason: string | null;
        try {
          reason = await once(c, i);
        } catch (err) {
          reason = err instanceof Error ? err.message : String(err);
        }
        const dt = performance.now() - t0;
        if (reason === null) {
          ok++;
          latencies.push(dt);
        } else {
          failed++;
          failures[reason] = (failures[reason] ?? 0) + 1;
        }
      }
    }),
  );
  const seconds = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  return { name, ok, failed, seconds, perSecond: ok / seconds, latencies, failures };
}

async function healthOnce(base: string): Promise<string | null> {
  const res = await fetch(`${base}/api/health`);
  await res.arrayBuffer();
  return res.status === 200 ? null : `HTTP ${res.status}`;
}

async function turnOnce(base: string, key: string, route: string, caller: number, i: number, runId: string): Promise<string | null> {
  const text = `bench ${caller}/${i}`;
  const res = await fetch(`${base}/api/conversations/${route}/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": key },
    // One thread per caller: distinct external_user_id values; the run id keeps warm-up threads apart.
    body: JSON.stringify({ external_user_id: `${runId}-caller-${caller}`, text, wait_seconds: 30 }),
  });
  const body = (await res.json().catch(() => null)) as { data?: { status?: string; answer?: string } } | null;
  if (res.status !== 200) return `HTTP ${res.status}`;
  if (body?.data?.status !== "answered") return `status ${body?.data?.status ?? "?"}`;
  if (body.data.answer !== text) return "wrong answer";
  return null;
}

function versionOf(pkg: string): string {
  try {
    return (JSON.parse(readFileSync(join(ROOT, "node_modules", pkg, "package.json"), "utf8")) as { version: string }).version;
  } catch {
    return "unknown";
  }
}

function machine(): Record<string, string | number> {
  const cpu = cpus();
  let model = cpu[0]?.model ?? "unknown";
  try {
    const m = /^model name\s*:\s*(.+)$/m.exec(readFileSync("/proc/cpuinfo", "utf8"));
    if (m) model = m[1].trim();
  } catch {
    /* not Linux */
  }
  return {
    cpus: cpu.length,
    cpu_model: model,
    memory_gib: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    wrangler: versionOf("wrangler"),
    workerd: versionOf("workerd"),
  };
}

const fmt = (n: number, d = 1) => (Number.isFinite(n) ? n.toFixed(d) : "n/a");

function describePhase(p: Phase): string {
  const fails = p.failed ? `, ${p.failed} failed ${JSON.stringify(p.failures)}` : "";
  return `${p.name}: ${p.ok} ok in ${fmt(p.seconds, 2)} s = ${fmt(p.perSecond)} /s; latency p50 ${fmt(percentile(p.latencies, 50))} ms, p99 ${fmt(percentile(p.latencies, 99))} ms${fails}`;
}

async function main(): Promise<number> {
  const opts = parseArgs(process.argv.slice(2));
  const route = "bench-echo";
  let dev: Server | null = null;
  const stopAll = async () => {
    const d = dev;
    dev = null;
    await d?.stop();
    if (d) rmSync(d.persistDir, { recursive: true, force: true });
  };
  for (const sig of ["SIGINT", "SIGTERM"] as const) {
    process.once(sig, () => {
      void stopAll().finally(() => process.exit(130));
    });
  }
  // Never leave a wrangler dev process group behind, whatever goes wrong.
  process.once("uncaughtException", (err) => {
    console.error(`bench failed: ${err instanceof Error ? err.stack : String(err)}`);
    void stopAll().finally(() => process.exit(1));
  });

  const loadAtStart = loadavg().map((l) => l.toFixed(2)).join(" ");
  try {
    // The rate cap must not interfere: the default is 20 turns/hour per (route, caller).
    const vars = { CONVERSATIONS_PER_ADDRESS_TURNS_PER_HOUR: "100000000" };
    if (opts.inspector) {
      console.log("bench: starting wrangler dev (npm start path) …");
      dev = await startWranglerDev(vars);
    } else {
      console.log("bench: preparing state through npm start, then serving with wrangler's programmatic API, inspector off …");
      dev = await startWithoutInspector(vars);
    }
    const base = dev.baseUrl;
    const boot = await http(base, "POST", "/api/keys/bootstrap", { body: { user_id: "bench-admin", description: "bench", bootstrap_token: BOOTSTRAP_TOKEN } });
    if (boot.status !== 200) throw new Error(`bootstrap failed: HTTP ${boot.status} ${JSON.stringify(boot.body)}`);
    const admin: string = boot.body.data.token;
    // Least privilege: the route runs as a key that may run echo and nothing else.
    const exec = await http(base, "POST", "/api/auth/api-keys", { key: admin, body: { user_id: "bench-exec", description: "bench execution key", scopes: ["tool:echo"] } });
    if (exec.status !== 200) throw new Error(`minting the execution key failed: HTTP ${exec.status}`);
    const callerKey = await http(base, "POST", "/api/auth/api-keys", { key: admin, body: { user_id: "bench-caller", description: "bench caller", scopes: ["conversations"] } });
    if (callerKey.status !== 200) throw new Error(`minting the caller key failed: HTTP ${callerKey.status}`);
    const key: string = callerKey.body.data.api_key;
    const created = await http(base, "POST", `/api/conversations/${route}`, {
      key: admin,
      body: { door: "api", target_kind: "tool", target_name: "echo", execution_key: "bench-exec", turns_per_hour_override: 100_000_000 },
    });
    if (created.status !== 200) throw new Error(`creating the route failed: HTTP ${created.status} ${JSON.stringify(created.body)}`);

    // Warm-up: JIT, jq/wasm, D1 and Durable Object start-up, connection pools.
    console.log("bench: warming up …");
    await phase("warm-up health", opts.callers, 50, 20, () => healthOnce(base));
    const warm = await phase("warm-up turns", opts.callers, 10, 30, (c, i) => turnOnce(base, key, route, c, i, "warm"));
    if (warm.failed) console.log(`bench: warm-up turn failures ${JSON.stringify(warm.failures)}`);

    // (a) is measured before and after (b) and averaged, so a load change on a shared machine
    // during the run shows up as two different (a) figures instead of silently skewing the ratio.
    const health1 = await phase("(a) GET /api/health, before (b)", opts.callers, opts.health, opts.maxSeconds, () => healthOnce(base));
    const turns = await phase(`(b) message door turns (wait_seconds, echo, ${opts.callers} thread${opts.callers === 1 ? "" : "s"})`, opts.callers, opts.turns, opts.maxSeconds, (c, i) =>
      turnOnce(base, key, route, c, i, "run"),
    );
    const health2 = await phase("(a) GET /api/health, after (b)", opts.callers, opts.health, opts.maxSeconds, () => healthOnce(base));
    const healthRate = (health1.perSecond + health2.perSecond) / 2;
    const ratio = turns.perSecond / healthRate;

    const m = machine();
    console.log("");
    console.log(`machine: ${m.cpus} CPUs (${m.cpu_model}), ${m.memory_gib} GiB, Node ${m.node}, wrangler ${m.wrangler}, workerd ${m.workerd}`);
    console.log(`server: ${opts.inspector ? "wrangler dev (npm start path, inspector proxy on)" : "wrangler unstable_startWorker, inspector off"}`);
    console.log(`callers: ${opts.callers} concurrent, each on its own thread; loopback only`);
    console.log(`load average at start: ${loadAtStart}, at end: ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
    console.log(describePhase(health1));
    console.log(describePhase(turns));
    console.log(describePhase(health2));
    console.log(`(a) mean: ${fmt(healthRate)} /s; (b): ${fmt(turns.perSecond)} turns/s`);
    console.log(`ratio (b)/(a): ${fmt(ratio, 3)} (target ≥ 0.25: ${ratio >= 0.25 ? "met" : "NOT met"})`);
    if (opts.json) {
      const summary = (p: Phase) => ({ ok: p.ok, failed: p.failed, seconds: p.seconds, per_second: p.perSecond, p50_ms: percentile(p.latencies, 50), p99_ms: percentile(p.latencies, 99) });
      console.log(JSON.stringify({ machine: m, inspector: opts.inspector, callers: opts.callers, health_before: summary(health1), turns: summary(turns), health_after: summary(health2), ratio }));
    }
    return turns.failed || health1.failed || health2.failed ? 1 : 0;
  } finally {
    await stopAll();
  }
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(`bench failed: ${err instanceof Error ? err.stack : String(err)}`);
    process.exit(1);
  },
);

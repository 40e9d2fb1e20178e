/**
 * Shared helpers of `npm run bench`: closed- and open-loop load generators, percentiles, the
 * result table and the machine description. Every phase module under scripts/bench/ uses these.
 */
import { execFileSync } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { cpus, loadavg, totalmem } from "node:os";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { ROOT } from "./harness";

/** A server the bench started (the bridge or the relay); `stop` ends it and removes its state. */
export interface Server {
  baseUrl: string;
  stop: () => Promise<void>;
  /** The server's own output so far, when the bench captured it (wrangler dev). */
  logs?: () => string;
  /** The server's process group, when it runs in one of its own (the bridge). */
  pid?: () => number | undefined;
}

/** Prints the last of wrangler's own lines about errors and restarts, to tell a Worker error from a runtime restart. */
export function printFailureLogs(label: string, server: Server): void {
  if (!server.logs) return;
  const lines = server
    .logs()
    .split("\n")
    .filter((l) => /error|restart|exception|warn/i.test(l));
  if (lines.length)
    console.log(
      `${label}: wrangler dev output about the failures (last ${Math.min(20, lines.length)} of ${lines.length} lines):\n${lines.slice(-20).join("\n")}`,
    );
}

/** What one timed phase produced. */
export interface Phase {
  name: string;
  ok: number;
  failed: number;
  seconds: number;
  /** Successes per second over the phase's wall time. */
  perSecond: number;
  /** Latencies of successful operations, milliseconds, sorted. */
  latencies: number[];
  failures: Record<string, number>;
  /** CPU the phase cost (when `meterServer` was called). */
  cpu?: CpuSpent;
}

/**
 * CPU time spent during a phase, in milliseconds: the bench's own process (the client) and the
 * server's process group by command (`workerd`, and `node` for wrangler's dev process). Linux
 * only (read from /proc); absent elsewhere.
 */
export interface CpuSpent {
  client: number;
  server: Record<string, number>;
}

/** The server process group whose CPU the phases meter (the bridge's), set by `meterServer`. */
let meteredGroup: number | null = null;
let clockTicksPerSecond = 100;

/** Meters the CPU of process group `pgid` (the bridge's `wrangler dev`) in every phase from now on. */
export function meterServer(pgid: number | undefined): void {
  if (pgid === undefined || process.platform !== "linux") return;
  meteredGroup = pgid;
  try {
    clockTicksPerSecond = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    /* the Linux default */
  }
}

/** CPU milliseconds so far of every live process in the metered group, by command name. */
function groupCpu(): Record<string, number> | null {
  if (meteredGroup === null) return null;
  const out: Record<string, number> = {};
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue; // gone meanwhile
    }
    // "pid (comm) state ppid pgrp … utime stime …": the command may hold spaces and parentheses.
    const close = stat.lastIndexOf(")");
    const comm = stat.slice(stat.indexOf("(") + 1, close);
    const fields = stat.slice(close + 2).split(" ");
    if (Number(fields[2]) !== meteredGroup) continue;
    const ms = ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicksPerSecond;
    const name = comm.startsWith("workerd") ? "workerd" : comm;
    out[name] = (out[name] ?? 0) + ms;
  }
  return out;
}

export interface CpuMark {
  client: NodeJS.CpuUsage;
  server: Record<string, number> | null;
}

export function cpuMark(): CpuMark {
  return { client: process.cpuUsage(), server: groupCpu() };
}

export function cpuSince(mark: CpuMark): CpuSpent | undefined {
  const after = groupCpu();
  if (!after || !mark.server) return undefined;
  const used = process.cpuUsage(mark.client);
  const server: Record<string, number> = {};
  for (const [name, ms] of Object.entries(after)) server[name] = ms - (mark.server[name] ?? 0);
  return { client: (used.user + used.system) / 1000, server };
}

/** One operation: resolves a failure reason, or null on success. Its latency is measured by the caller. */
export type Once = (caller: number, i: number) => Promise<string | null>;

/** An operation that measures its own latency (e.g. until a callback arrives): resolves the latency or a failure reason. */
export type TimedOnce = (caller: number, i: number) => Promise<{ ms: number } | string>;

function finish(name: string, start: number, mark: CpuMark, latencies: number[], ok: number, failed: number, failures: Record<string, number>): Phase {
  const seconds = (performance.now() - start) / 1000;
  latencies.sort((a, b) => a - b);
  return { name, ok, failed, seconds, perSecond: ok / seconds, latencies, failures, cpu: cpuSince(mark) };
}

const reasonOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

/**
 * Closed loop: `callers` concurrent loops; loop c runs `once(c, i)` `perCaller` times, or stops when
 * `maxSeconds` run out. The latency of an operation is its wall time, unless it reports its own.
 */
export async function closedLoop(name: string, callers: number, perCaller: number, maxSeconds: number, once: Once | TimedOnce): Promise<Phase> {
  const latencies: number[] = [];
  const failures: Record<string, number> = {};
  let ok = 0;
  let failed = 0;
  const mark = cpuMark();
  const start = performance.now();
  const deadline = start + maxSeconds * 1000;
  await Promise.all(
    Array.from({ length: callers }, async (_, c) => {
      for (let i = 0; i < perCaller && performance.now() < deadline; i++) {
        const t0 = performance.now();
        let r: string | null | { ms: number };
        try {
          r = await once(c, i);
        } catch (err) {
          r = reasonOf(err);
        }
        if (r === null || typeof r === "object") {
          ok++;
          latencies.push(r === null ? performance.now() - t0 : r.ms);
        } else {
          failed++;
          failures[r] = (failures[r] ?? 0) + 1;
        }
      }
    }),
  );
  return finish(name, start, mark, latencies, ok, failed, failures);
}

/**
 * Open loop: starts `count` operations at a fixed rate (`perSecond`), whatever the server's
 * answers do, and waits for all of them. Latency is measured from each operation's scheduled start,
 * so a client that falls behind its schedule counts against the server, not for it.
 */
export async function openLoop(name: string, perSecond: number, count: number, once: (i: number) => Promise<string | null>): Promise<Phase> {
  const latencies: number[] = [];
  const failures: Record<string, number> = {};
  let ok = 0;
  let failed = 0;
  const mark = cpuMark();
  const start = performance.now();
  const gap = 1000 / perSecond;
  const pending: Promise<void>[] = [];
  for (let i = 0; i < count; i++) {
    const due = start + i * gap;
    const wait = due - performance.now();
    if (wait > 1) await new Promise((r) => setTimeout(r, wait));
    pending.push(
      (async () => {
        let reason: string | null;
        try {
          reason = await once(i);
        } catch (err) {
          reason = reasonOf(err);
        }
        if (reason === null) {
          ok++;
          latencies.push(performance.now() - due);
        } else {
          failed++;
          failures[reason] = (failures[reason] ?? 0) + 1;
        }
      })(),
    );
  }
  await Promise.all(pending);
  return finish(name, start, mark, latencies, ok, failed, failures);
}

export function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

export const fmt = (n: number, d = 1) => (Number.isFinite(n) ? n.toFixed(d) : "n/a");

/** CPU milliseconds per successful operation: the client, each server process, and their total. */
export function cpuPerOp(p: Phase): Record<string, number> | null {
  if (!p.cpu || p.ok === 0) return null;
  const per: Record<string, number> = { client: p.cpu.client / p.ok };
  for (const [name, ms] of Object.entries(p.cpu.server)) per[name] = ms / p.ok;
  per.total = Object.values(per).reduce((a, b) => a + b, 0);
  return per;
}

/** Prints the CPU each phase cost per operation, and the rate two CPUs would bound it to. */
export function printCpu(phases: Phase[]): void {
  const rows = phases.map((p) => [p.name, cpuPerOp(p)] as const).filter((r): r is [string, Record<string, number>] => r[1] !== null);
  if (!rows.length) return;
  const names = [...new Set(rows.flatMap(([, per]) => Object.keys(per)))].filter((n) => n !== "total");
  const cores = cpus().length;
  console.log(`\nCPU per operation, ms (client = the bench itself; the rest, the server's processes), and the rate ${cores} CPUs bound it to:`);
  for (const [name, per] of rows) {
    const parts = names.map((n) => `${n} ${fmt(per[n] ?? 0, 2)}`).join(", ");
    console.log(`  ${name}: ${parts}; total ${fmt(per.total, 2)} → at most ${fmt((cores * 1000) / per.total, 0)}/s`);
  }
}

export function summary(p: Phase) {
  return {
    cpu_ms_per_op: cpuPerOp(p) ?? undefined,
    ok: p.ok,
    failed: p.failed,
    failures: p.failures,
    seconds: p.seconds,
    per_second: p.perSecond,
    p50_ms: percentile(p.latencies, 50),
    p99_ms: percentile(p.latencies, 99),
  };
}

/** One table row: a phase and a free-text note (ratio, target verdict). */
export interface Row {
  phase: Phase;
  note?: string;
}

export function printTable(rows: Row[]): void {
  const head = ["phase", "ok", "failed", "/s", "p50 ms", "p99 ms", "note"];
  const cells = rows.map(({ phase: p, note }) => [
    p.name,
    String(p.ok),
    p.failed ? `${p.failed} ${JSON.stringify(p.failures)}` : "0",
    fmt(p.perSecond),
    fmt(percentile(p.latencies, 50)),
    fmt(percentile(p.latencies, 99)),
    note ?? "",
  ]);
  const width = head.map((h, i) => Math.max(h.length, ...cells.map((c) => c[i].length)));
  const line = (c: string[]) => `| ${c.map((v, i) => (i >= 1 && i <= 5 ? v.padStart(width[i]) : v.padEnd(width[i]))).join(" | ")} |`;
  console.log(line(head));
  console.log(`|${width.map((w, i) => (i >= 1 && i <= 5 ? "-".repeat(w + 1) + ":" : "-".repeat(w + 2))).join("|")}|`);
  for (const c of cells) console.log(line(c));
}

function versionOf(pkg: string): string {
  try {
    return (JSON.parse(readFileSync(join(ROOT, "node_modules", pkg, "package.json"), "utf8")) as { version: string }).version;
  } catch {
    return "unknown";
  }
}

export function machine(): Record<string, string | number> {
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

export const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");

/** Polls `probe` until it is true or `ms` pass; answers whether it became true. */
export async function waitFor(probe: () => Promise<boolean> | boolean, ms: number, every = 200): Promise<boolean> {
  const deadline = performance.now() + ms;
  for (;;) {
    if (await probe()) return true;
    if (performance.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, every));
  }
}

/** The bridge's address, the keys and route names that `setup` made, handed to every phase. */
export interface Ctx {
  base: string;
  admin: string;
  /** Caller key, scope `conversations` only. */
  caller: string;
  /** The user id of the execution key routes run as. */
  execUser: string;
}

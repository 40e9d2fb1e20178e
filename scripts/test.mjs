/**
 * `npm test`: the static checks (`npm run checks`: import rules, formatting, type checks) and the
 * whole vitest run, side by side. The vitest slots spend much of their time waiting (servers
 * starting, polls), so the checks, at the lowest CPU priority, fill cores that would otherwise idle
 * instead of adding their own minute before the first test. vitest's output streams as it runs; the
 * checks' output is held and printed after it, so the two never interleave. Exits non-zero when
 * either fails.
 *
 * The tests' scratch state goes to memory: every workerd test file writes its D1 database and its
 * Durable Objects' SQLite files under the temporary directory, and so do the e2e servers and the
 * browser's profile (about 2 GB of writes per run). On Linux, TMPDIR points at /dev/shm (a tmpfs)
 * when it is writable and TMPDIR is not already set; on a disk-backed /tmp those writes cost about
 * a quarter of the workerd suite's time.
 *
 * Extra arguments go to vitest (`npm test -- --project workers`).
 */
import { spawn } from "node:child_process";
import { accessSync, constants } from "node:fs";

const npm = process.platform === "win32" ? "npm.cmd" : "npm";
const npx = process.platform === "win32" ? "npx.cmd" : "npx";

function memoryTmpdir() {
  if (process.platform !== "linux" || process.env.TMPDIR) return null;
  try {
    accessSync("/dev/shm", constants.W_OK);
    return "/dev/shm";
  } catch {
    return null;
  }
}
const tmp = memoryTmpdir();
const env = tmp ? { ...process.env, TMPDIR: tmp } : process.env;

/**
 * A vitest process silent this long is taken as stalled: no file here runs longer than about two
 * minutes, and every finished file prints a line. The workerd pool can stall at a runtime's
 * shutdown (cloudflare/workerd#6763); the run then fails here, naming the stall, instead of
 * waiting for an outer timeout.
 */
const STALL_MS = 5 * 60_000;

/** Watched processes run in process groups of their own, so an interrupt here must reach them. */
const groups = new Set();
for (const sig of ["SIGINT", "SIGTERM"]) {
  process.on(sig, () => {
    for (const pid of groups) {
      try {
        process.kill(-pid, sig);
      } catch {
        /* already gone */
      }
    }
    process.exit(130);
  });
}

/**
 * Runs a command to its end; with `hold`, its output is kept and handed back instead of streamed.
 * With `watch`, a process that prints nothing for STALL_MS is stopped (its whole process group).
 */
function run(command, argv, { hold = false, nice = false, watch = false } = {}) {
  const [cmd, cmdArgs] = nice && process.platform !== "win32" ? ["nice", ["-n", "19", command, ...argv]] : [command, argv];
  const child = spawn(cmd, cmdArgs, { stdio: ["ignore", "pipe", "pipe"], env, detached: watch && process.platform !== "win32" });
  if (watch && child.pid) groups.add(child.pid);
  let output = "";
  let stalled = false;
  let timer = null;
  const arm = () => {
    if (!watch) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      stalled = true;
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        child.kill("SIGKILL");
      }
    }, STALL_MS);
  };
  const take = (stream) => (d) => {
    arm();
    if (hold) output += d;
    else stream.write(d);
  };
  child.stdout.on("data", take(process.stdout));
  child.stderr.on("data", take(process.stderr));
  arm();
  return new Promise((resolve) => {
    child.on("error", (err) => resolve({ code: 1, output: `${output}\n${err.message}\n` }));
    child.on("close", (code) => {
      if (timer) clearTimeout(timer);
      groups.delete(child.pid);
      const note = stalled ? `\n${argv.join(" ")}: no output for ${STALL_MS / 60_000} minutes; stopped as stalled\n` : "";
      if (stalled && !hold) process.stderr.write(note);
      resolve({ code: stalled ? 1 : (code ?? 1), output: output + (hold ? note : "") });
    });
  });
}

const checks = run(npm, ["run", "-s", "checks"], { hold: true, nice: true });
const vitest = await run(npx, ["vitest", "run", ...process.argv.slice(2)], { watch: true });
const checked = await checks;
if (checked.output.trim()) process.stdout.write(`\n${checked.output}`);
console.log(`checks (depcheck, format:check, typecheck): ${checked.code === 0 ? "passed" : "FAILED"}`);
process.exit(vitest.code !== 0 ? vitest.code : checked.code);

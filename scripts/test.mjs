/**
 * `npm test`: the static checks (`npm run checks`: import rules, formatting, type checks) and the
 * whole vitest run, side by side. The vitest slots spend much of their time waiting (servers
 * starting, polls), so the checks, at the lowest CPU priority, fill cores that would otherwise idle
 * instead of adding their own minute before the first test. vitest's output streams as it runs; the checks' output is held and
 * printed after it, so the two never interleave. Exits non-zero when either fails.
 *
 * Extra arguments go to vitest (`npm test -- --project workers`).
 */
import { spawn } from "node:child_process";

const npm = process.platform === "win32" ? "npm.cmd" : "npm";
const npx = process.platform === "win32" ? "npx.cmd" : "npx";

// At the lowest priority, so the checks take only what the tests leave idle and never slow them.
const checks =
  process.platform === "win32"
    ? spawn(npm, ["run", "-s", "checks"], { stdio: ["ignore", "pipe", "pipe"] })
    : spawn("nice", ["-n", "19", npm, "run", "-s", "checks"], { stdio: ["ignore", "pipe", "pipe"] });
let checksOutput = "";
checks.stdout.on("data", (d) => (checksOutput += d));
checks.stderr.on("data", (d) => (checksOutput += d));
const checksDone = new Promise((resolve) => checks.on("close", (code) => resolve(code ?? 1)));

const vitest = spawn(npx, ["vitest", "run", ...process.argv.slice(2)], { stdio: "inherit" });
const vitestCode = await new Promise((resolve) => vitest.on("close", (code) => resolve(code ?? 1)));

const checksCode = await checksDone;
if (checksOutput.trim()) process.stdout.write(`\n${checksOutput}`);
console.log(`checks (depcheck, format:check, typecheck): ${checksCode === 0 ? "passed" : "FAILED"}`);
process.exit(vitestCode !== 0 ? vitestCode : checksCode);

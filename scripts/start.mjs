#!/usr/bin/env node
// `npm start`: apply D1 migrations to the local database, then run `wrangler dev` on
// 127.0.0.1:8787 with local persistence. Extra arguments pass through to wrangler dev
// (`npm start -- --port 9000 --var NAME:VALUE`); `--persist-to DIR` is honoured by both steps.
import { spawn, spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const wrangler = join(root, "node_modules", "wrangler", "bin", "wrangler.js");
const args = process.argv.slice(2);

function optionValue(name) {
  for (let i = 0; i < args.length; i++) {
    if (args[i] === name) return args[i + 1];
    if (args[i].startsWith(`${name}=`)) return args[i].slice(name.length + 1);
  }
  return undefined;
}
const has = (name) => args.some((a) => a === name || a.startsWith(`${name}=`));

const persistTo = optionValue("--persist-to");
const configPath = optionValue("--config") ?? optionValue("-c");
const extra = [...(persistTo ? ["--persist-to", persistTo] : []), ...(configPath ? ["--config", configPath] : [])];

const migrate = spawnSync(process.execPath, [wrangler, "d1", "migrations", "apply", "DB", "--local", ...extra], {
  cwd: root,
  stdio: ["ignore", "inherit", "inherit"],
  env: { ...process.env, CI: process.env.CI ?? "true" },
});
if (migrate.status !== 0) {
  console.error("npm start: applying D1 migrations failed");
  process.exit(migrate.status ?? 1);
}

const defaults = [...(has("--ip") ? [] : ["--ip", "127.0.0.1"]), ...(has("--port") ? [] : ["--port", "8787"])];
const dev = spawn(process.execPath, [wrangler, "dev", ...defaults, ...args], { cwd: root, stdio: "inherit" });
for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => dev.kill(sig));
dev.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));

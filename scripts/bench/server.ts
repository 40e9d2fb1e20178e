/**
 * Starting what the bench measures: the bridge (through scripts/bench/harness.ts, i.e. the `npm start`
 * path) and, for the overhead phase, a minimal relay Worker served the same way (wrangler's dev
 * API with the inspector off, or `wrangler dev` with it).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT, freePort, startDev } from "./harness";
import type { Server } from "./lib";

/**
 * The bridge, through the shared harness (the `npm start` path): inspector off, or with `--inspect`
 * when `inspector` is set, on `inspectorPort` when given (the sustained phase attaches to it). `env`
 * reaches workerd's environment (e.g. SSL_CERT_FILE for the test CA).
 */
export async function startBridge(inspector: boolean, vars: Record<string, string>, env: Record<string, string>, inspectorPort?: number): Promise<Server> {
  const dev = await startDev({ vars, env, args: inspector ? ["--inspect"] : [], inspectorPort });
  return { baseUrl: dev.baseUrl, stop: () => dev.close(), logs: dev.logs, pid: dev.pid };
}

/**
 * The direct relay: answers 202 with a message id at once, then (after the response, in
 * `waitUntil`) POSTs the bridge's default kwargs to the tool and the bridge's callback body, signed
 * as decisions §8 says, to the callback URL. No Durable Object, no storage, no D1.
 */
const RELAY_SOURCE = `
const hex = (buf) => [...new Uint8Array(buf)].map((b) => b.toString(16).padStart(2, "0")).join("");
export default {
  async fetch(req, env, ctx) {
    if (req.method !== "POST") return new Response("relay", { status: 200 });
    const inbound = await req.json();
    const message_id = crypto.randomUUID();
    const thread_id = "relay:" + inbound.external_user_id;
    ctx.waitUntil((async () => {
      const tool = await fetch(env.TOOL_URL, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ message: inbound.text, sender: inbound.external_user_id, turn: { id: message_id, inbound: { kind: "message", id: message_id, source: "api" } } }),
      });
      const answer = await tool.json();
      const body = JSON.stringify({ message_id, thread_id, status: "answered", answer });
      const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(env.CALLBACK_SECRET), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
      const sig = "sha256=" + hex(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(body)));
      const res = await fetch(env.CALLBACK_URL, { method: "POST", headers: { "content-type": "application/json", "x-service-signature": sig }, body });
      await res.arrayBuffer();
    })());
    return Response.json({ data: { message_id, thread_id } }, { status: 202 });
  },
};
`;

export async function startRelay(inspector: boolean, vars: Record<string, string>, env: Record<string, string>): Promise<Server> {
  const dir = mkdtempSync(join(tmpdir(), "bench-relay-"));
  writeFileSync(join(dir, "relay.mjs"), RELAY_SOURCE);
  // Same compatibility date as the bridge; no nodejs_compat needed.
  writeFileSync(join(dir, "wrangler.toml"), `name = "bench-relay"\nmain = "relay.mjs"\ncompatibility_date = "2026-04-01"\n`);
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  if (!inspector) {
    Object.assign(process.env, env);
    const { unstable_startWorker } = await import("wrangler");
    const worker = await unstable_startWorker({
      config: join(dir, "wrangler.toml"),
      dev: { server: { hostname: "127.0.0.1", port }, inspector: false, persist: join(dir, "state"), logLevel: "warn" },
      bindings: Object.fromEntries(Object.entries(vars).map(([k, v]) => [k, { type: "plain_text" as const, value: v }])),
    });
    await worker.ready;
    return {
      baseUrl,
      stop: async () => {
        await worker.dispose();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  // `wrangler dev`, as the bridge runs under npm start (inspector proxy on), from the relay's own directory.
  const args = [
    join(ROOT, "node_modules", "wrangler", "bin", "wrangler.js"),
    "dev",
    "--config",
    join(dir, "wrangler.toml"),
    "--ip",
    "127.0.0.1",
    "--port",
    String(port),
    "--inspector-port",
    String(await freePort()),
    "--persist-to",
    join(dir, "state"),
    "--show-interactive-dev-session=false",
    "--log-level",
    "warn",
  ];
  for (const [k, v] of Object.entries(vars)) args.push("--var", `${k}:${v}`);
  const child: ChildProcess = spawn(process.execPath, args, {
    cwd: dir,
    env: { ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false", ...env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let log = "";
  child.stdout?.on("data", (d) => (log += d.toString()));
  child.stderr?.on("data", (d) => (log += d.toString()));
  // Throws, as process.kill does, when there is no process group to signal.
  const signal = (sig: NodeJS.Signals) => {
    if (child.pid === undefined) throw new Error("the server never started");
    process.kill(-child.pid, sig);
  };
  const stop = async () => {
    if (child.exitCode === null) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          try {
            signal("SIGKILL");
          } catch {
            /* gone */
          }
        }, 5_000);
        child.once("exit", () => {
          clearTimeout(timer);
          resolve();
        });
        try {
          signal("SIGTERM");
        } catch {
          resolve();
        }
      });
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) break;
    try {
      if ((await fetch(baseUrl)).status === 200) return { baseUrl, stop };
    } catch {
      /* not up yet */
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  await stop();
  throw new Error(`the relay worker did not start:\n${log}`);
}

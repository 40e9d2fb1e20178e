/**
 * Quiet, useful output, checked on what a person running the service sees:
 * the output of `npm start` (scripts/start.mjs → wrangler dev) and of a failed callback attempt.
 *
 * The start check runs offline-safe on any machine: online, the update check and the
 * `Request.cf` download would not fail, but they would still show (the banner's "update
 * available", the telemetry notice), so the assertions catch a regression either way.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { BOOTSTRAP_TOKEN, type DevServer, MIGRATED_STATE_VAR, ROOT, freePort, http, startDev } from "./harness";
import { pollUntil } from "./support/poll";
import { must } from "../../src/platform/must";

/** ANSI colour codes in wrangler's output. */
const ANSI = /\u001b\[[0-9;]*m/g;
const plain = (s: string) => s.replace(ANSI, "");
const count = (haystack: string, needle: string) => haystack.split(needle).length - 1;

/** Markers of a printed stack trace: a JS frame, a workerd native frame, or an uncaught error. */
const STACK_MARKERS = [/^\s+at .+[:(]/m, /workerd@[0-9a-f]+/, /Uncaught/, /getaddrinfo|ENOTFOUND/];

describe("npm start output", () => {
  let child: ChildProcess | null = null;
  let persistDir = "";

  afterAll(async () => {
    if (child && child.exitCode === null) {
      const c = child;
      await new Promise<void>((resolve) => {
        c.once("exit", () => resolve());
        try {
          process.kill(-must(c.pid, "c.pid"), "SIGTERM");
        } catch {
          resolve();
        }
        setTimeout(() => {
          try {
            process.kill(-must(c.pid, "c.pid"), "SIGKILL");
          } catch {
            /* gone */
          }
        }, 5_000).unref();
      });
    }
    if (persistDir) rmSync(persistDir, { recursive: true, force: true });
  });

  // A cold `npm start` (the jq step, the migrations, wrangler's first bundle) shares the cores with
  // the run's other slots, which are busiest at its start; this tests what it prints, not how fast.
  it("npm start prints no stack trace when offline and builds once", { timeout: 240_000 }, async () => {
    const port = await freePort();
    const inspector = await freePort();
    persistDir = mkdtempSync(join(tmpdir(), "bridge-e2e-start-"));
    // From the migrated template, so the migrations step runs and finds nothing to apply; a first
    // application's output is test/e2e/first-start.e2e.test.ts's to check.
    const template = process.env[MIGRATED_STATE_VAR];
    if (template) cpSync(template, persistDir, { recursive: true });
    // The caller's environment minus every wrangler/miniflare switch, so the defaults tested are
    // the ones scripts/start.mjs sets, not ones this test or the shell happen to set.
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) {
      if (v !== undefined && !/^(WRANGLER_|CLOUDFLARE_|MINIFLARE_)/.test(k)) env[k] = v;
    }
    env.CI = "true";
    let out = "";
    // npm start's own argument handling; the default log level, so build and reload lines show.
    child = spawn(process.execPath, ["scripts/start.mjs", "--port", String(port), "--inspector-port", String(inspector), "--persist-to", persistDir], {
      cwd: ROOT,
      env,
      stdio: ["ignore", "pipe", "pipe"],
      detached: true,
    });
    child.stdout?.on("data", (d) => (out += d.toString()));
    child.stderr?.on("data", (d) => (out += d.toString()));
    await pollUntil(
      "npm start to answer /api/health",
      async () => {
        if (child?.exitCode !== null) throw new Error(`npm start exited early:\n${out}`);
        try {
          return (await fetch(`http://127.0.0.1:${port}/api/health`)).status;
        } catch {
          return 0;
        }
      },
      (status) => status === 200,
      { timeoutMs: 180_000, intervalMs: 250 },
    );
    // Wrangler's start-up network chatter (the Request.cf download, the update check) runs in the
    // background; give it the time it takes to time out or fail before reading the output.
    await new Promise((r) => setTimeout(r, 6_000));
    const text = plain(out);

    for (const marker of STACK_MARKERS) expect(text, `start output matches ${marker}`).not.toMatch(marker);
    expect(text).not.toContain("Unable to fetch the `Request.cf` object");
    expect(text).not.toContain("update available");
    expect(text).not.toMatch(/telemetry/i);

    // One build: the jq step runs once in start.mjs, wrangler bundles once and never rebuilds
    // because of it (no custom build, no "restarting build", no reload).
    expect(text).not.toContain("[custom build]");
    expect(text).not.toContain("restarting build");
    expect(count(text, "Starting local server")).toBe(1);
    expect(text).not.toContain("Reloading local server");
  });
});

describe("a failed callback attempt", () => {
  let dev: DevServer | null = null;

  afterAll(async () => {
    await dev?.close();
  });

  it("logs exactly one structured line per failed attempt and no workerd stack dump or Uncaught error", async () => {
    dev = await startDev({
      vars: {
        // The receiver is a closed port on 127.0.0.1: a private host, allowed for this test.
        OUTBOUND_ALLOW_PRIVATE_HOSTS: "true",
        CONVERSATIONS_DELIVERY_BACKOFF_BASE_SECONDS: "0.5",
        CONVERSATIONS_DELIVERY_BACKOFF_MAX_SECONDS: "1",
        CONVERSATIONS_DELIVERY_MAX_ATTEMPTS: "2",
        CONVERSATIONS_DELIVERY_CLAIM_LEASE_SECONDS: "5",
        CONVERSATIONS_DELIVERY_CALLBACK_TIMEOUT_SECONDS: "2",
        CONVERSATIONS_DELIVERY_SEND_TIMEOUT_SECONDS: "3",
      },
      // Its own output is what this test reads.
      npmStart: true,
    });
    const server = dev;
    const base = server.baseUrl;
    const boot = await http(base, "POST", "/api/keys/bootstrap", { body: { user_id: "root", description: "e2e admin", bootstrap_token: BOOTSTRAP_TOKEN } });
    expect(boot.status).toBe(200);
    const admin = boot.body.data.token as string;
    const closedPort = await freePort(); // bound and released: nothing listens there
    const hook = `https://127.0.0.1:${closedPort}/hooks/never?token=do-not-log`;
    const created = await http(base, "POST", "/api/conversations/unreachable", {
      key: admin,
      body: { door: "api", target_kind: "tool", target_name: "echo", execution_key: "root", callback_url: hook },
    });
    expect(created.status).toBe(200);

    const mark = dev.logs().length;
    const sent = await http(base, "POST", "/api/conversations/unreachable/messages", {
      key: admin,
      body: { external_user_id: "u", text: "words that stay private" },
    });
    expect(sent.status).toBe(202);
    const messageId = sent.body.data.message_id as string;
    const record = await pollUntil(
      "the record to fail after two attempts",
      async () => (await http(base, "GET", `/api/conversations/unreachable/messages/${messageId}`, { key: admin })).body?.data,
      (r) => r?.status === "failed",
      { timeoutMs: 60_000 },
    );
    expect(record).toMatchObject({ status: "failed", attempts: 2 });
    // The lines travel workerd's and wrangler's pipes, which a busy machine slows: wait for the final one.
    const attemptLines = () => [...plain(server.logs().slice(mark)).matchAll(/\{"event":"delivery_attempt_failed"[^{}]*\}/g)].map((m) => JSON.parse(m[0]));
    const structured = await pollUntil("both attempts' log lines", attemptLines, (lines) => lines.some((l) => l.final === true), { timeoutMs: 30_000 });
    const after = plain(dev.logs().slice(mark));
    expect(structured).toEqual([
      { event: "delivery_attempt_failed", message_id: messageId, via: "callback", attempt: 1, reason: "transport", final: false },
      { event: "delivery_attempt_failed", message_id: messageId, via: "callback", attempt: 2, reason: "transport", final: true },
    ]);
    for (const marker of STACK_MARKERS) expect(after, `output after the send matches ${marker}`).not.toMatch(marker);
    expect(after).not.toContain("internal error");
    expect(after).not.toContain("do-not-log");
    expect(after).not.toContain(`127.0.0.1:${closedPort}`);
    expect(after).not.toContain("words that stay private");

    // A name that never resolves (RFC 2606 .invalid): workerd prints its own internal report for
    // a DNS failure, which npm start filters (scripts/dev-output-filter.mjs); the service's one
    // line per attempt still shows.
    const dnsRoute = await http(base, "POST", "/api/conversations/unresolvable", {
      key: admin,
      body: { door: "api", target_kind: "tool", target_name: "echo", execution_key: "root", callback_url: "https://hooks.bridge-e2e.invalid/never" },
    });
    expect(dnsRoute.status).toBe(200);
    const mark2 = dev.logs().length;
    const sent2 = await http(base, "POST", "/api/conversations/unresolvable/messages", { key: admin, body: { external_user_id: "u", text: "x" } });
    expect(sent2.status).toBe(202);
    const id2 = sent2.body.data.message_id as string;
    await pollUntil(
      "the unresolvable callback to fail after two attempts",
      async () => (await http(base, "GET", `/api/conversations/unresolvable/messages/${id2}`, { key: admin })).body?.data,
      (r) => r?.status === "failed",
      { timeoutMs: 60_000 },
    );
    const dnsIds = await pollUntil(
      "both attempts' log lines",
      () => [...plain(server.logs().slice(mark2)).matchAll(/\{"event":"delivery_attempt_failed"[^{}]*\}/g)].map((m) => JSON.parse(m[0])),
      (lines) => lines.some((l) => l.final === true),
      { timeoutMs: 30_000 },
    );
    const dnsOut = plain(dev.logs().slice(mark2));
    expect(dnsIds.map((l) => l.message_id)).toEqual([id2, id2]);
    for (const marker of STACK_MARKERS) expect(dnsOut, `output after the DNS failure matches ${marker}`).not.toMatch(marker);
    expect(dnsOut).not.toContain("internal error");
    expect(dnsOut).not.toContain("DNS lookup failed");
  });
});

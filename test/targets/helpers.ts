/** Test helpers for targets: contexts with injected fetch and clock, a scripted fake endpoint,
 * SSE parsing, and calling the app with env overrides. */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { createApp } from "../../src/app";
import type { Env } from "../../src/platform/env";
import { parseSettings, type Settings } from "../../src/platform/settings/settings";
import { type TargetContext, createTargetContext } from "../../src/targets/dispatch";
import { BASE, type CallOptions, type CallResult } from "../helpers/http";

export function settingsOf(overrides: Record<string, unknown> = {}): Settings {
  const r = parseSettings({ ...env, ...overrides });
  if (!r.ok) throw new Error(`bad test settings: ${r.errors.join("; ")}`);
  return r.settings;
}

export interface Recorded {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: any;
}

/**
 * A fake network edge: every outbound request is recorded and answered by `handler`.
 * Unscripted URLs fail the test loudly instead of reaching the network.
 */
export function fakeFetch(handler: (req: Request, body: any) => Response | Promise<Response>) {
  const calls: Recorded[] = [];
  const fn = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const req = new Request(input, init);
    const text = req.body ? await req.clone().text() : "";
    let body: any = text;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      /* keep text */
    }
    calls.push({ url: req.url, method: req.method, headers: Object.fromEntries(req.headers), body });
    return handler(req, body);
  }) as typeof fetch;
  return { fetch: fn, calls };
}

/** A fetch that never answers until aborted (drives timeouts without timing anything). */
export const hangingFetch = ((_input: RequestInfo | URL, init?: RequestInit) =>
  new Promise<Response>((_resolve, reject) => {
    init?.signal?.addEventListener("abort", () => reject(new DOMException("aborted", "AbortError")));
  })) as typeof fetch;

export function json(value: unknown, status = 200): Response {
  return new Response(JSON.stringify(value), { status, headers: { "content-type": "application/json" } });
}

/** A target context over the test env plus `vars`, with an injected fetch and clock. */
export function testContext(
  opts: { fetch?: typeof fetch; vars?: Record<string, unknown>; now?: () => Date; turn?: TargetContext["turn"] } = {},
): TargetContext {
  const e = { ...env, ...(opts.vars ?? {}) } as Env;
  return createTargetContext(e, settingsOf(opts.vars), {
    fetch:
      opts.fetch ??
      fakeFetch(() => {
        throw new Error("unexpected outbound request");
      }).fetch,
    now: opts.now,
    turn: opts.turn,
  });
}

/**
 * Calls the app in-process with env overrides (settings and secrets that differ from
 * wrangler.toml). Outbound fetches from handlers go through the network edge, so tests using
 * this fake the network with `fakeNetwork` (test/helpers/edge.ts).
 */
export async function callWith<T = any>(
  vars: Record<string, unknown>,
  method: string,
  path: string,
  opts: CallOptions = {},
): Promise<CallResult<T> & { text: string }> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.key) headers["x-api-key"] = opts.key;
  let body: string | undefined;
  if (opts.rawBody !== undefined) body = opts.rawBody;
  else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers["content-type"] ??= "application/json";
  }
  const ctx = createExecutionContext();
  const res = await createApp().fetch(new Request(`${BASE}${path}`, { method, headers, body }), { ...env, ...vars }, ctx);
  const text = await res.text();
  await waitOnExecutionContext(ctx);
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    /* keep text */
  }
  return { status: res.status, body: parsed as T, headers: res.headers, text };
}

/** Splits an SSE body into its events: data frames parsed as JSON, comments kept as text. */
export function parseSse(text: string): Array<{ data: any } | { comment: string }> {
  return text
    .split("\n\n")
    .filter((block) => block.length)
    .map((block) => {
      if (block.startsWith(":")) return { comment: block.slice(1).trim() };
      const data = block
        .split("\n")
        .filter((l) => l.startsWith("data: "))
        .map((l) => l.slice(6))
        .join("\n");
      return { data: JSON.parse(data) };
    });
}

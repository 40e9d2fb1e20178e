/** Test helpers for targets: settings, contexts with injected fetch and clock, SSE parsing, and
 * calling the app with env overrides. Their fake network is test/helpers/network.ts. */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { createApp } from "../../src/app";
import type { Env } from "../../src/platform/env";
import { parseSettings, type Settings } from "../../src/platform/settings/settings";
import { type TargetContext, createTargetContext } from "../../src/targets/dispatch";
import { BASE, type CallOptions, type CallResult } from "../helpers/http";
import { fakeFetch } from "../helpers/network";

export function settingsOf(overrides: Record<string, unknown> = {}): Settings {
  const r = parseSettings({ ...env, ...overrides });
  if (!r.ok) throw new Error(`bad test settings: ${r.errors.join("; ")}`);
  return r.settings;
}

/** A target context over the test env plus `vars`, with an injected fetch, clock and stop signal. */
export function testContext(
  opts: { fetch?: typeof fetch; vars?: Record<string, unknown>; now?: () => Date; turn?: TargetContext["turn"]; signal?: AbortSignal } = {},
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
    signal: opts.signal,
  });
}

/**
 * Calls the app in-process with env overrides (settings and secrets that differ from
 * wrangler.toml). Outbound fetches from handlers go through the network edge, so tests using
 * this fake the network with `fakeNetwork` (test/helpers/network.ts).
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

/**
 * Shared fixtures of the marketplace tests: a registry index served at the network edge (the only
 * fake: test/helpers/network.ts), and calls to the Worker configured with that https registry
 * (`fetchWithEnv`, so the default built-in catalog of the other tests stays as it is).
 */
import { env } from "cloudflare:workers";
import { answerOnly, fakeNetwork } from "../helpers/network";
import { BASE, type CallResult, fetchWithEnv, readResult, uniq } from "../helpers/http";

export const REGISTRY_URL = "https://registry.fake/index.json";

export type Json = Record<string, unknown>;

export const tool = (title: string, over: Json = {}): Json => ({ title, kind: "http", url: `https://tools.example/${title}`, ...over });
export const agent = (title: string, over: Json = {}): Json => ({ title, kind: "http", config: { url: `https://agents.example/${title}` }, ...over });
export const preset = (name: string, base_tool: string, over: Json = {}): Json => ({ name, base_tool, ...over });

export const V1 = { "bridge-declarations": [1] };
export const V2 = { "bridge-declarations": [2] };

export const version = (v: string, declarations: Json, contracts: Json = V1): Json => ({ version: v, contracts, declarations });

export function pluginEntry(namespace: string, name: string, versions: Json[], over: Json = {}): Json {
  return { namespace, name, description: `${name} plugin`, categories: ["testing"], kinds: ["http_tool", "agent", "preset"], versions, ...over };
}

export const indexOf = (...plugins: Json[]): Json => ({ format: "bridge-marketplace-index/1", plugins });

/** A fresh plugin namespace (lowercase, so its ref equals it). */
export const ns = () => uniq("ns").toLowerCase();
/** A fresh declaration name. */
export const dn = (prefix: string) => uniq(prefix);

/**
 * Serves `current()` at REGISTRY_URL for this test (anything else fails the request). Returns the
 * recorded calls.
 */
export function serveIndex(current: () => unknown) {
  return fakeNetwork(answerOnly({ [`GET ${REGISTRY_URL}`]: () => Response.json(current()) }));
}

/** Calls the Worker with MARKETPLACE_REGISTRY_URL pointing at the fake registry (plus `vars`). */
export async function mcall<T = any>(
  method: string,
  path: string,
  opts: { key: string; body?: unknown; vars?: Record<string, unknown> },
): Promise<CallResult<T>> {
  const headers: Record<string, string> = { "x-api-key": opts.key };
  if (opts.body !== undefined) headers["content-type"] = "application/json";
  const res = await fetchWithEnv(
    { ...env, MARKETPLACE_REGISTRY_URL: REGISTRY_URL, ...(opts.vars ?? {}) },
    new Request(`${BASE}${path}`, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) }),
  );
  return readResult<T>(res);
}

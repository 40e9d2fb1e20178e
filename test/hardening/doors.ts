/**
 * The doors as the route table declares them, for the hardening suites. Nothing here lists doors
 * by hand: every suite iterates `registry`, so a door declared later joins them by being declared.
 */
import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { z } from "zod";
// Loading the app loads every router, and routers register their doors at module load. The Worker
// under test (`exports.default`) runs in this same isolate and module graph, so this is the
// registry it serves.
import "../../src/app";
import { type RouteSpec, registry } from "../../src/platform/http/route";
import { fetchWorkerDirect } from "../helpers/direct-fetch";
import worker from "../../src/index";
import { perFile } from "../helpers/file-epoch";

export type { RouteSpec };
export type JsonSchema = { [key: string]: unknown };

/** Every registered door, in registration order; fails loudly if the table did not load. */
export function doors(): RouteSpec[] {
  if (registry.length === 0) throw new Error("the route registry is empty: src/app did not load its routers");
  return [...registry];
}

export const label = (spec: RouteSpec): string => `${spec.method.toUpperCase()} ${spec.path}`;

/** `{name}` placeholders of an OpenAPI-style path, in order. */
export function pathParamNames(path: string): string[] {
  return [...path.matchAll(/\{([A-Za-z0-9_]+)\}/g)].map((m) => m[1]);
}

/** Fills `{name}` placeholders with already-encoded segments. */
export function fillPath(path: string, segments: Record<string, string>): string {
  return path.replace(/\{([A-Za-z0-9_]+)\}/g, (_, name: string) => segments[name] ?? "x");
}

/** The input JSON Schema of a door's zod schema, the same conversion the OpenAPI document uses. */
export function jsonSchemaOf(schema: z.ZodType | undefined): JsonSchema | null {
  if (!schema) return null;
  return z.toJSONSchema(schema, { target: "draft-2020-12", io: "input", unrepresentable: "any" }) as JsonSchema;
}

/** What a door demands of its caller, normalised from its `auth` declaration. */
export type Requirement = { kind: "public" } | { kind: "authenticated" } | { kind: "tag"; tag: string; action: "read" | "write"; admin: boolean };

export function requirementOf(spec: RouteSpec): Requirement {
  const auth = spec.auth;
  if ("public" in auth) return { kind: "public" };
  if ("authenticated" in auth) return { kind: "authenticated" };
  return { kind: "tag", tag: auth.tag, action: auth.action ?? (spec.method === "get" ? "read" : "write"), admin: auth.admin === true };
}

export const BASE = "https://bridge.test";

export interface Answer {
  status: number;
  text: string;
  headers: Headers;
  /** The parsed JSON answer, or null when the answer is not JSON. */
  json: any;
}

/**
 * Calls the Worker's own fetch handler (src/index.ts, the deployed entry) in this isolate. Not
 * `exports.default.fetch`: under vitest-pool-workers every such fetch gets slower as a file's
 * request count grows (https://github.com/cloudflare/workers-sdk/issues/15446), and these suites send hundreds of requests.
 * The execution context is awaited after the body is read, so work a door hands to waitUntil
 * finishes (and fails loudly) inside the case that caused it.
 */
export async function dispatch(method: string, pathAndQuery: string, init: { headers?: Record<string, string>; body?: string } = {}): Promise<Answer> {
  const upper = method.toUpperCase();
  const request = new Request(`${BASE}${pathAndQuery}`, {
    method: upper,
    headers: init.headers,
    body: upper === "GET" || upper === "HEAD" ? undefined : init.body,
  });
  if (upper === "GET") return fetchLiveTail(request);
  return fetchWorkerDirect(request, env);
}

/** How long the suites read a GET event stream: a live tail (e.g. the interactions stream) never ends by itself. */
export const LIVE_TAIL_READ_MS = 200;

/**
 * `fetchWorkerDirect` for GET doors, except that a `text/event-stream` answer is read for
 * LIVE_TAIL_READ_MS and then cancelled (a finite stream that ends sooner is read whole). The
 * stream's first frames (or its error frames) are what the suites judge.
 */
async function fetchLiveTail(request: Request): Promise<Answer> {
  const ctx = createExecutionContext();
  const res = await worker.fetch(request, env, ctx);
  let text: string;
  if ((res.headers.get("content-type") ?? "").startsWith("text/event-stream") && res.body) {
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    const deadline = Date.now() + LIVE_TAIL_READ_MS;
    text = "";
    for (;;) {
      const left = deadline - Date.now();
      const next = left > 0 ? await Promise.race([reader.read(), new Promise<null>((r) => setTimeout(() => r(null), left))]) : null;
      if (next === null) {
        await reader.cancel().catch(() => undefined);
        break;
      }
      if (next.done) break;
      text += decoder.decode(next.value, { stream: true });
    }
  } else {
    text = await res.text();
  }
  await waitOnExecutionContext(ctx);
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    /* not JSON */
  }
  return { status: res.status, text, headers: res.headers, json };
}

/** A JSON call with an optional key (fixtures and principals). */
export function callJson(method: string, path: string, key: string | null, body?: unknown): Promise<Answer> {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (key) headers["x-api-key"] = key;
  return dispatch(method, path, { headers, body: body === undefined ? undefined : JSON.stringify(body) });
}

const adminKey = perFile<string>();

/** This file's admin key: bootstrapped once per file (each test file has its own D1). */
export async function bootstrapAdmin(): Promise<string> {
  const held = adminKey.get();
  if (held) return held;
  const r = await callJson("POST", "/api/keys/bootstrap", null, {
    user_id: "root",
    description: "hardening suites",
    bootstrap_token: String(env.ACCESS_CONTROL_BOOTSTRAP_TOKEN),
  });
  if (r.status !== 200) throw new Error(`bootstrap failed: ${r.status} ${r.text}`);
  return adminKey.set(r.json.data.token as string);
}

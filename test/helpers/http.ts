import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import worker from "../../src/index";
import { perFile } from "./file-epoch";

export const BASE = "https://bridge.test";

export interface CallOptions {
  key?: string | null;
  bearer?: boolean;
  body?: unknown;
  rawBody?: string;
  headers?: Record<string, string>;
}

export interface CallResult<T = any> {
  status: number;
  body: T;
  headers: Headers;
}

/**
 * Hands a request to the Worker's own fetch handler (src/index.ts, the deployed entry) in this
 * isolate, with the real D1 and Durable Objects. Not `exports.default.fetch`: under
 * vitest-pool-workers each such fetch costs more than the one before for the life of the runtime
 * (https://github.com/cloudflare/workers-sdk/issues/15446), and the files share one runtime. The
 * work the request hands to waitUntil runs on, unawaited, as it would behind a real edge.
 */
export async function dispatch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  return worker.fetch(new Request(input, init), env, createExecutionContext());
}

/** Calls the Worker in-process through its fetch handler (real D1 and Durable Objects). */
export async function call<T = any>(method: string, path: string, opts: CallOptions = {}): Promise<CallResult<T>> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.key) {
    if (opts.bearer) headers.authorization = `Bearer ${opts.key}`;
    else headers["x-api-key"] = opts.key;
  }
  let body: string | undefined;
  if (opts.rawBody !== undefined) body = opts.rawBody;
  else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers["content-type"] ??= "application/json";
  }
  return readResult<T>(await dispatch(`${BASE}${path}`, { method, headers, body }));
}

/** A response as a CallResult: the body parsed as JSON, or kept as text when it is not JSON. */
export async function readResult<T = any>(res: Response): Promise<CallResult<T>> {
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = text ? JSON.parse(text) : null;
  } catch {
    /* keep text */
  }
  return { status: res.status, body: parsed as T, headers: res.headers };
}

export const BOOTSTRAP_TOKEN = String(env.ACCESS_CONTROL_BOOTSTRAP_TOKEN);

const adminKey = perFile<string>();

/** The admin key of this test file's database (bootstraps once, or reuses). */
export async function admin(): Promise<string> {
  const held = adminKey.get();
  if (held) return held;
  const r = await call("POST", "/api/keys/bootstrap", {
    body: { user_id: "root", description: "tests", bootstrap_token: BOOTSTRAP_TOKEN },
  });
  if (r.status !== 200) throw new Error(`bootstrap failed: ${r.status} ${JSON.stringify(r.body)}`);
  return adminKey.set(r.body.data.token as string);
}

let counter = 0;
/** A unique name for this test run, so tests never share state by accident. */
export function uniq(prefix: string): string {
  counter += 1;
  return `${prefix}-${Date.now().toString(36)}-${counter}`;
}

/** Mints a key as admin (or as `as`) and returns the raw key. */
export async function mintKey(
  spec: { user_id?: string; scopes: string[]; condition?: string | null; owner_user_id?: string | null },
  as?: string,
): Promise<{ key: string; user_id: string; fingerprint: string }> {
  const user_id = spec.user_id ?? uniq("user");
  const r = await call("POST", "/api/auth/api-keys", {
    key: as ?? (await admin()),
    body: { user_id, description: "test", scopes: spec.scopes, condition: spec.condition, owner_user_id: spec.owner_user_id },
  });
  if (r.status !== 200) throw new Error(`mint failed: ${r.status} ${JSON.stringify(r.body)}`);
  return { key: r.body.data.api_key, user_id, fingerprint: r.body.data.key_fingerprint };
}

const NO_CONTEXT = { waitUntil() {}, passThroughOnException() {}, props: {} } as unknown as ExecutionContext;

/** Calls a fresh app with an altered env (no store, a broken binding, unset channel secrets). */
export async function fetchWithEnv(altered: Record<string, unknown>, request: Request): Promise<Response> {
  const { createApp } = await import("../../src/app");
  return createApp().fetch(request, altered, NO_CONTEXT);
}

/** Every listed door answers 501 `conversations-not-configured` when no store is configured. */
export async function expectNotConfigured(doors: Array<[string, string, unknown?]>, key: string, expectFn: (v: unknown, msg?: string) => any): Promise<void> {
  const noStore = { ...env, CONVERSATIONS_STORE_URL: "" };
  for (const [method, path, body] of doors) {
    const res = await fetchWithEnv(
      noStore,
      new Request(`${BASE}${path}`, {
        method,
        headers: { "x-api-key": key, "content-type": "application/json" },
        body: body ? JSON.stringify(body) : undefined,
      }),
    );
    expectFn(res.status, `${method} ${path}`).toBe(501);
    expectFn(await res.json()).toMatchObject({ code: "conversations-not-configured" });
  }
}

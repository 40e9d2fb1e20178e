import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import worker from "../../src/index";

export interface DirectAnswer {
  status: number;
  text: string;
  headers: Headers;
  /** The body parsed as JSON, or null when it is empty or not JSON. */
  json: any;
}

/**
 * Calls the Worker's own fetch handler (src/index.ts, the deployed entry) in this isolate with
 * `bindings`, reads the body, then waits for the work the request handed to waitUntil, so that work
 * finishes (and fails loudly) inside the case that caused it. Not `exports.default.fetch`: under
 * vitest-pool-workers every such fetch gets slower as a file's request count grows
 * (https://github.com/cloudflare/workers-sdk/issues/15446), and the suites using this send hundreds of requests.
 */
export async function fetchWorkerDirect(request: Request, bindings: Env): Promise<DirectAnswer> {
  const ctx = createExecutionContext();
  const res = await worker.fetch(request, bindings, ctx);
  const text = await res.text();
  await waitOnExecutionContext(ctx);
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    /* not JSON */
  }
  return { status: res.status, text, headers: res.headers, json };
}

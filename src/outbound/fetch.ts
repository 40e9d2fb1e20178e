/**
 * One JSON call to an external endpoint (HTTP tools, LLM endpoints, http agents) through an
 * injected `fetch`, with a deadline and a classified failure. Failure messages carry the
 * endpoint's label and HTTP status only: never the URL (it may hold tokens), request headers,
 * the response body or the platform's error text.
 */
import { readStreamCapped } from "../platform/http/body";
import { type OutboundPolicy, checkOutboundUrl } from "../platform/net/address-guard";
import { checkJsonBounds } from "../platform/http/bounded-json";
import { withTimeout } from "../platform/timeout";

/** Largest response body read from an endpoint. */
export const MAX_RESPONSE_BYTES = 1024 * 1024;

export type OutboundFailureKind = "timeout" | "transport" | "http_status" | "non_json" | "too_large" | "out_of_bounds";
export type OutboundResult = { ok: true; value: unknown } | { ok: false; kind: OutboundFailureKind; message: string };

export interface OutboundCall {
  /** Names the endpoint in messages, e.g. "tool endpoint". */
  label: string;
  url: string;
  method: string;
  headers: Record<string, string>;
  body: unknown;
  timeoutMs: number;
  /** The outbound address guard's policy (settings.outbound); absent means private hosts are refused. */
  guard?: OutboundPolicy;
}

async function readCapped(res: Response): Promise<string | null> {
  const bytes = await readStreamCapped(res.body, MAX_RESPONSE_BYTES);
  return bytes ? new TextDecoder().decode(bytes) : null;
}

type Exchange = { status: number; text: string | null } | { transport: true };

/** POSTs (or PUTs/PATCHes) `body` as JSON and parses the JSON answer. Redirects are not followed. */
export async function callJsonEndpoint(fetchFn: typeof fetch, call: OutboundCall): Promise<OutboundResult> {
  // Checked again before every send: the URL was checked at declaration, but the setting may
  // have changed since, and a stored row is not re-validated on read.
  const verdict = checkOutboundUrl(call.url, call.guard ?? { allowPrivateHosts: false });
  if (!verdict.ok) return { ok: false, kind: "transport", message: `${call.label} refused by the outbound address guard: ${verdict.reason}` };
  const headers = new Headers(call.headers);
  if (!headers.has("content-type")) headers.set("content-type", "application/json");
  if (!headers.has("accept")) headers.set("accept", "application/json");
  const timed = await withTimeout<Exchange>(call.timeoutMs, async (signal) => {
    let res: Response;
    try {
      res = await fetchFn(call.url, { method: call.method, headers, body: JSON.stringify(call.body), redirect: "manual", signal });
    } catch {
      return { transport: true };
    }
    if (res.status < 200 || res.status > 299) {
      await res.body?.cancel();
      return { status: res.status, text: "" };
    }
    return { status: res.status, text: await readCapped(res) };
  });
  const seconds = `${+(call.timeoutMs / 1000).toFixed(3)}s`;
  if (!timed.ok) return { ok: false, kind: "timeout", message: `${call.label} did not answer within ${seconds}` };
  const ex = timed.value;
  if ("transport" in ex) return { ok: false, kind: "transport", message: `${call.label} could not be reached` };
  if (ex.status < 200 || ex.status > 299) {
    return { ok: false, kind: "http_status", message: `${call.label} answered HTTP ${ex.status}` };
  }
  if (ex.text === null) {
    return { ok: false, kind: "too_large", message: `${call.label} answered more than ${MAX_RESPONSE_BYTES} bytes` };
  }
  let value: unknown;
  try {
    value = JSON.parse(ex.text);
  } catch {
    return { ok: false, kind: "non_json", message: `${call.label} answered a body that is not JSON` };
  }
  // The answer feeds jq, memory and records: it passes the same bound as every free-form input.
  const broken = checkJsonBounds(value, MAX_RESPONSE_BYTES);
  if (broken) return { ok: false, kind: "out_of_bounds", message: `${call.label} answered JSON out of bounds: ${broken}` };
  return { ok: true, value };
}

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
export type OutboundFailure = { ok: false; kind: OutboundFailureKind; message: string };
export type OutboundResult = { ok: true; value: unknown } | OutboundFailure;

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

/**
 * The refusal of a call the outbound address guard does not pass, or null. Checked again before
 * every send: the URL was checked at declaration, but the setting may have changed since, and a
 * stored row is not re-validated on read.
 */
export function guardRefusal(call: Pick<OutboundCall, "label" | "url" | "guard">): OutboundFailure | null {
  const verdict = checkOutboundUrl(call.url, call.guard ?? { allowPrivateHosts: false });
  return verdict.ok ? null : { ok: false, kind: "transport", message: `${call.label} refused by the outbound address guard: ${verdict.reason}` };
}

/** The request headers of a JSON call: the caller's, with a JSON content type and `accept` unless it set them. */
export function requestHeaders(given: Record<string, string>, accept: string): Headers {
  const headers = new Headers(given);
  if (!headers.has("content-type")) headers.set("content-type", "application/json");
  if (!headers.has("accept")) headers.set("accept", accept);
  return headers;
}

/** The failure a deadline is, in the words every outbound call uses. */
export function timeoutFailure(call: Pick<OutboundCall, "label" | "timeoutMs">): OutboundFailure {
  return { ok: false, kind: "timeout", message: `${call.label} did not answer within ${+(call.timeoutMs / 1000).toFixed(3)}s` };
}

/** The failure an answer over MAX_RESPONSE_BYTES is. */
export function tooLargeFailure(label: string): OutboundFailure {
  return { ok: false, kind: "too_large", message: `${label} answered more than ${MAX_RESPONSE_BYTES} bytes` };
}

/** Reads a whole 2xx answer body (null: it was over MAX_RESPONSE_BYTES) as bounded JSON. */
export function parseJsonAnswer(label: string, text: string | null): OutboundResult {
  if (text === null) return tooLargeFailure(label);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, kind: "non_json", message: `${label} answered a body that is not JSON` };
  }
  // The answer feeds jq, memory and records: it passes the same bound as every free-form input.
  const broken = checkJsonBounds(value, MAX_RESPONSE_BYTES);
  if (broken) return { ok: false, kind: "out_of_bounds", message: `${label} answered JSON out of bounds: ${broken}` };
  return { ok: true, value };
}

/** POSTs (or PUTs/PATCHes) `body` as JSON and parses the JSON answer. Redirects are not followed. */
export async function callJsonEndpoint(fetchFn: typeof fetch, call: OutboundCall): Promise<OutboundResult> {
  const refused = guardRefusal(call);
  if (refused) return refused;
  const headers = requestHeaders(call.headers, "application/json");
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
  if (!timed.ok) return timeoutFailure(call);
  const ex = timed.value;
  if ("transport" in ex) return { ok: false, kind: "transport", message: `${call.label} could not be reached` };
  if (ex.status < 200 || ex.status > 299) {
    return { ok: false, kind: "http_status", message: `${call.label} answered HTTP ${ex.status}` };
  }
  return parseJsonAnswer(call.label, ex.text);
}

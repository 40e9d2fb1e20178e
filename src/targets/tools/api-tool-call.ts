/**
 * Calling an API tool (docs/manifest.md "API tools"): the kwargs, already valid against the tool's
 * input schema, are laid out the way the operation takes them: each path parameter substituted
 * (percent-encoded) into the URL, query parameters appended (an array repeats the name, an object
 * is sent as JSON text), header parameters set, and the `body` kwarg sent as the JSON body. The
 * answer must be 2xx; an empty body is `null`, anything else must be JSON. Messages carry a label
 * and a status, never the URL, a header or the response body (like HTTP tools).
 */
import { readStreamCapped } from "../../platform/http/body";
import { checkJsonBounds } from "../../platform/http/bounded-json";
import { type OutboundPolicy, checkOutboundUrl } from "../../platform/net/address-guard";
import { MAX_RESPONSE_BYTES } from "../../outbound/fetch";
import { withTimeout } from "../../platform/timeout";
import { type ApiTool, fillTemplate } from "./api-tool-store";

export type ApiCallResult =
  | { ok: true; value: unknown }
  | { ok: false; kind: "invalid_kwargs" | "timeout" | "transport" | "http_status" | "non_json" | "tool_error"; message: string };

export interface ApiRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string | null;
}

function scalar(v: unknown): string | null {
  if (typeof v === "string") return v;
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  return null;
}

/** The request the kwargs make (pure; exported for its unit tests). A message names a parameter, never a value. */
export function buildApiRequest(
  tool: Pick<ApiTool, "url" | "method" | "parameters" | "body">,
  kwargs: Record<string, unknown>,
  headers: Record<string, string>,
): ApiRequest | { error: string } {
  for (const p of tool.parameters) {
    if (p.in === "path" && scalar(kwargs[p.name]) === null) return { error: `path parameter ${p.name} must be a string, number or boolean` };
  }
  let url: URL;
  try {
    url = new URL(fillTemplate(tool.url, (name) => encodeURIComponent(scalar(kwargs[name]) ?? "")));
  } catch {
    return { error: "the path parameters do not make a valid URL" };
  }
  const out = { ...headers };
  for (const p of tool.parameters) {
    const v = kwargs[p.name];
    if (v === undefined || v === null || p.in === "path") continue;
    if (p.in === "query") {
      for (const item of Array.isArray(v) ? v : [v]) url.searchParams.append(p.name, scalar(item) ?? JSON.stringify(item));
    } else {
      const text = scalar(v) ?? JSON.stringify(v);
      if (/[\r\n\0]/.test(text)) return { error: `header parameter ${p.name} must not contain CR, LF or NUL` };
      out[p.name] = text;
    }
  }
  let body: string | null = null;
  if (tool.body === "json" && kwargs.body !== undefined) {
    body = JSON.stringify(kwargs.body);
    out["content-type"] ??= "application/json";
  }
  out.accept ??= "application/json";
  return { url: url.href, method: tool.method, headers: out, body };
}

type Exchange = { status: number; text: string | null } | { transport: true };

/** Sends the request under the deadline through `fetchFn` (the network edge) and the address guard. */
export async function sendApiRequest(fetchFn: typeof fetch, req: ApiRequest, timeoutMs: number, guard: OutboundPolicy): Promise<ApiCallResult> {
  const label = "api tool endpoint";
  const verdict = checkOutboundUrl(req.url, guard);
  if (!verdict.ok) return { ok: false, kind: "transport", message: `${label} refused by the outbound address guard: ${verdict.reason}` };
  const timed = await withTimeout<Exchange>(timeoutMs, async (signal) => {
    let res: Response;
    try {
      res = await fetchFn(req.url, { method: req.method, headers: req.headers, body: req.body, redirect: "manual", signal });
    } catch {
      return { transport: true };
    }
    if (res.status < 200 || res.status > 299) {
      await res.body?.cancel();
      return { status: res.status, text: "" };
    }
    const bytes = await readStreamCapped(res.body, MAX_RESPONSE_BYTES);
    return { status: res.status, text: bytes ? new TextDecoder().decode(bytes) : null };
  });
  if (!timed.ok) return { ok: false, kind: "timeout", message: `${label} did not answer within ${+(timeoutMs / 1000).toFixed(3)}s` };
  const ex = timed.value;
  if ("transport" in ex) return { ok: false, kind: "transport", message: `${label} could not be reached` };
  if (ex.status < 200 || ex.status > 299) return { ok: false, kind: "http_status", message: `${label} answered HTTP ${ex.status}` };
  if (ex.text === null) return { ok: false, kind: "tool_error", message: `${label} answered more than ${MAX_RESPONSE_BYTES} bytes` };
  if (ex.text.trim() === "") return { ok: true, value: null };
  let value: unknown;
  try {
    value = JSON.parse(ex.text);
  } catch {
    return { ok: false, kind: "non_json", message: `${label} answered a body that is not JSON` };
  }
  const broken = checkJsonBounds(value, MAX_RESPONSE_BYTES);
  if (broken) return { ok: false, kind: "tool_error", message: `${label} answered JSON out of bounds: ${broken}` };
  return { ok: true, value };
}

/**
 * One request to a provider's token endpoint (RFC 6749 §4.1.3 code exchange with the PKCE
 * verifier of RFC 7636 §4.5, §6 refresh), through the network edge and the outbound address guard.
 * Used by the completion door (Worker) and by a connection's object when it refreshes.
 *
 * Failure messages carry the endpoint's HTTP status and the OAuth `error` code only: never the
 * URL, the client credentials, the code, a token or the provider's free-text description.
 */
import { readStreamCapped } from "../platform/http/body";
import { checkOutboundUrl } from "../platform/net/address-guard";
import type { TokenClient, TokenGrant } from "./rpc";
import { withTimeout } from "../platform/timeout";

export type { TokenClient };

export type TokenRequest =
  | { grant_type: "authorization_code"; code: string; redirect_uri: string; code_verifier: string }
  | { grant_type: "refresh_token"; refresh_token: string };

/**
 * `permanent`: the provider refused the grant or the client (a 400/401 answer), so retrying the
 * same request cannot succeed; a refresh that fails this way needs the user to reconnect.
 */
export type TokenResult = { ok: true; grant: TokenGrant } | { ok: false; permanent: boolean; message: string };

/** Default deadline of one token request. */
export const TOKEN_TIMEOUT_MS = 15_000;
const MAX_TOKEN_RESPONSE_BYTES = 64 * 1024;
const MAX_TOKEN_CHARS = 16 * 1024;
/** Ten years: an `expires_in` beyond it is treated as this (and a non-positive one as already expired). */
const MAX_EXPIRES_IN = 10 * 365 * 86_400;

/** `application/x-www-form-urlencoded` encoding of one component (RFC 6749 Appendix B). */
function formEncode(s: string): string {
  return encodeURIComponent(s).replace(/%20/g, "+");
}

/** The OAuth error code of a refusal, when it is a plain code (never free text). */
function errorCode(body: Record<string, unknown> | null): string | null {
  const e = body?.error;
  return typeof e === "string" && /^[a-z0-9_]{1,64}$/.test(e) ? e : null;
}

function parseBody(text: string, contentType: string): Record<string, unknown> | null {
  if (contentType.includes("application/x-www-form-urlencoded")) {
    return Object.fromEntries(new URLSearchParams(text));
  }
  try {
    const v: unknown = JSON.parse(text);
    return v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    // Some providers (GitHub without `Accept`) answer a form body labelled otherwise.
    const form = Object.fromEntries(new URLSearchParams(text));
    return "access_token" in form || "error" in form ? form : null;
  }
}

function optionalString(v: unknown): string | null {
  return typeof v === "string" && v !== "" && v.length <= MAX_TOKEN_CHARS ? v : null;
}

/** The grant of a successful answer, or null when it lacks a usable access token. */
export function grantOf(body: Record<string, unknown>): TokenGrant | null {
  const access = body.access_token;
  if (typeof access !== "string" || access === "" || access.length > MAX_TOKEN_CHARS || /[\r\n\0]/.test(access)) return null;
  const rawExpiry = typeof body.expires_in === "string" ? Number(body.expires_in) : body.expires_in;
  const expires_in = typeof rawExpiry === "number" && Number.isFinite(rawExpiry) ? Math.min(Math.max(Math.floor(rawExpiry), 0), MAX_EXPIRES_IN) : null;
  return {
    access_token: access,
    refresh_token: optionalString(body.refresh_token),
    token_type: optionalString(body.token_type),
    expires_in,
    scope: typeof body.scope === "string" ? body.scope.slice(0, 4096) : null,
  };
}

/** POSTs one token request and classifies the answer. */
export async function requestToken(fetchFn: typeof fetch, client: TokenClient, request: TokenRequest): Promise<TokenResult> {
  const verdict = checkOutboundUrl(client.token_endpoint, { allowPrivateHosts: client.allow_private_hosts });
  if (!verdict.ok) return { ok: false, permanent: false, message: `token endpoint refused by the outbound address guard: ${verdict.reason}` };
  const params: Record<string, string> = { ...request };
  const headers = new Headers({ "content-type": "application/x-www-form-urlencoded", accept: "application/json" });
  if (client.client_auth === "client_secret_basic") {
    headers.set("authorization", `Basic ${btoa(`${formEncode(client.client_id)}:${formEncode(client.client_secret)}`)}`);
  } else {
    params.client_id = client.client_id;
    params.client_secret = client.client_secret;
  }
  const body = Object.entries(params)
    .map(([k, v]) => `${formEncode(k)}=${formEncode(v)}`)
    .join("&");

  type Exchange = { status: number; text: string | null; contentType: string } | { transport: true };
  const timed = await withTimeout<Exchange>(client.timeout_ms, async (signal) => {
    let res: Response;
    try {
      res = await fetchFn(client.token_endpoint, { method: "POST", headers, body, redirect: "manual", signal });
    } catch {
      return { transport: true };
    }
    let bytes: Uint8Array | null;
    try {
      bytes = await readStreamCapped(res.body, MAX_TOKEN_RESPONSE_BYTES);
    } catch {
      // The connection dropped mid-body: as unreachable as no answer at all.
      return { transport: true };
    }
    return { status: res.status, text: bytes ? new TextDecoder().decode(bytes) : null, contentType: res.headers.get("content-type") ?? "" };
  });
  if (!timed.ok) return { ok: false, permanent: false, message: `token endpoint did not answer within ${+(client.timeout_ms / 1000).toFixed(3)}s` };
  const ex = timed.value;
  if ("transport" in ex) return { ok: false, permanent: false, message: "token endpoint could not be reached" };
  const parsed = ex.text === null ? null : parseBody(ex.text, ex.contentType.toLowerCase());
  if (ex.status < 200 || ex.status > 299) {
    const code = errorCode(parsed);
    // RFC 6749 §5.2: a refused grant or client is a 400 (401 for client authentication).
    const permanent = ex.status === 400 || ex.status === 401;
    return { ok: false, permanent, message: `token endpoint answered HTTP ${ex.status}${code ? ` (${code})` : ""}` };
  }
  if (!parsed) return { ok: false, permanent: false, message: "token endpoint answered a body that is neither JSON nor a form" };
  if (errorCode(parsed)) return { ok: false, permanent: true, message: `token endpoint refused the request (${errorCode(parsed)})` };
  const grant = grantOf(parsed);
  if (!grant) return { ok: false, permanent: false, message: "token endpoint answered without a usable access_token" };
  return { ok: true, grant };
}

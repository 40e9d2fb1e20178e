/**
 * The signed HTTPS callback of decisions §8: compact JSON body, `X-Service-Signature:
 * sha256=<lowercase hex HMAC-SHA256(secret, raw body)>`, no redirects, bounded by a timeout.
 */
import { hmacSha256, toHex } from "../../access-control/crypto";
import { type OutboundPolicy, checkOutboundUrl } from "../../platform/net/address-guard";
import type { AnswerRecord } from "../model/record";
import type { AttemptFailureClass } from "./ops-log";

export function callbackBody(r: AnswerRecord): string {
  const body: Record<string, unknown> = { message_id: r.message_id, thread_id: r.thread_id, status: r.answer_status ?? "silent" };
  if (r.answer_status !== "silent" && r.answer !== null) body.answer = r.answer;
  // A stopped turn's answer is the draft so far (docs/targets.md "Stopping a turn").
  if (r.stopped) body.stopped = true;
  return JSON.stringify(body);
}

export async function signBody(secret: string, body: string): Promise<string> {
  return `sha256=${toHex(await hmacSha256(secret, body))}`;
}

/**
 * `reason` is kept on the record for admins; `cls` is the short class logged per attempt (absent:
 * refused before any request left, e.g. by the address guard).
 */
export type CallbackResult = { ok: true; status: number } | { ok: false; reason: string; cls?: AttemptFailureClass };

/**
 * One attempt. Any 2xx is success; 3xx (not followed), 4xx, 5xx, timeout or network error is a
 * failed attempt, and so is a URL the outbound address guard refuses under `guard` (checked
 * before every attempt, not only at route create: the setting may have changed since). Absent
 * `guard` refuses private hosts.
 */
export async function postCallback(
  fetchFn: typeof fetch,
  url: string,
  secret: string,
  body: string,
  timeoutMs: number,
  guard: OutboundPolicy = { allowPrivateHosts: false },
): Promise<CallbackResult> {
  const verdict = checkOutboundUrl(url, guard);
  if (!verdict.ok) return { ok: false, reason: `callback refused by the outbound address guard: ${verdict.reason}` };
  try {
    const res = await fetchFn(url, {
      method: "POST",
      headers: { "content-type": "application/json", "x-service-signature": await signBody(secret, body) },
      body,
      redirect: "manual",
      signal: AbortSignal.timeout(timeoutMs),
    });
    await res.body?.cancel();
    if (res.status >= 200 && res.status < 300) return { ok: true, status: res.status };
    return { ok: false, reason: `callback answered HTTP ${res.status}`, cls: `http_${res.status}` };
  } catch (err) {
    const name = err instanceof Error ? err.name : "";
    if (name === "TimeoutError" || name === "AbortError") return { ok: false, reason: "callback timed out", cls: "timeout" };
    return { ok: false, reason: "callback connection failed", cls: "transport" };
  }
}

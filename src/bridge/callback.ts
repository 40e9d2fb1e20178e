/**
 * The signed HTTPS callback of decisions §8: compact JSON body, `X-Service-Signature:
 * sha256=<lowercase hex HMAC-SHA256(secret, raw body)>`, no redirects, bounded by a timeout.
 */
import { hmacSha256, toHex } from "../auth/crypto";
import type { AnswerRecord } from "./record";

export function callbackBody(r: AnswerRecord): string {
  const body: Record<string, unknown> = { message_id: r.message_id, thread_id: r.thread_id, status: r.answer_status ?? "silent" };
  if (r.answer_status !== "silent" && r.answer !== null) body.answer = r.answer;
  return JSON.stringify(body);
}

export async function signBody(secret: string, body: string): Promise<string> {
  return `sha256=${toHex(await hmacSha256(secret, body))}`;
}

export type CallbackResult = { ok: true; status: number } | { ok: false; reason: string };

/** One attempt. Any 2xx is success; 3xx (not followed), 4xx, 5xx, timeout or network error is a failed attempt. */
export async function postCallback(fetchFn: typeof fetch, url: string, secret: string, body: string, timeoutMs: number): Promise<CallbackResult> {
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
    return { ok: false, reason: `callback answered HTTP ${res.status}` };
  } catch (err) {
    const name = err instanceof Error ? err.name : "";
    return { ok: false, reason: name === "TimeoutError" || name === "AbortError" ? "callback timed out" : "callback connection failed" };
  }
}

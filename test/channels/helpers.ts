/**
 * Test doubles for the channel layer, at the network edge only: a recording fake `fetch` and
 * webhook builders. The signers use node:crypto, an implementation independent of the adapters'
 * WebCrypto code, so a test checks the scheme rather than echoing the code under test.
 */
import { createHmac } from "node:crypto";
import type { Webhook, WebhookDoor, WebhookMethod } from "../../src/channels/adapter";
import { must } from "../../src/platform/must";

export interface RecordedRequest {
  url: string;
  method: string;
  headers: Headers;
  body: string;
  signal: AbortSignal | null;
}

/** A fake fetch that records every request and answers with `respond`. */
export function fakeFetch(respond: (req: RecordedRequest) => Response | Promise<Response>) {
  const calls: RecordedRequest[] = [];
  const fetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const req: RecordedRequest = {
      url: String(input instanceof Request ? input.url : input),
      method: init?.method ?? "GET",
      headers: new Headers(init?.headers),
      body: typeof init?.body === "string" ? init.body : "",
      signal: init?.signal ?? null,
    };
    calls.push(req);
    return respond(req);
  }) as typeof globalThis.fetch;
  return { fetch, calls };
}

/** A fetch that never answers until its signal aborts (drives the send timeout). */
export function hangingFetch() {
  return fakeFetch(
    (req) =>
      new Promise<Response>((_, reject) => {
        if (!req.signal) return reject(new Error("no signal"));
        req.signal.addEventListener("abort", () => reject(must(req.signal, "req.signal").reason));
      }),
  );
}

export function jsonResponse(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });
}

const enc = new TextEncoder();

/** A webhook as the door would hand it to an adapter. */
export function webhook(opts: { door?: WebhookDoor; method?: WebhookMethod; url: string; headers?: Record<string, string>; body?: string }): Webhook {
  return {
    door: opts.door ?? "inbound",
    method: opts.method ?? "POST",
    url: new URL(opts.url),
    headers: new Headers(opts.headers ?? {}),
    raw: enc.encode(opts.body ?? ""),
  };
}

export function nodeHmacHex(alg: "sha1" | "sha256", key: string, data: string): string {
  return createHmac(alg, key).update(data, "utf8").digest("hex");
}

/** Twilio's scheme: base64 HMAC-SHA1(token, url + sorted name+value). */
export function nodeTwilioSignature(token: string, url: string, params: Record<string, string>): string {
  const data =
    url +
    Object.keys(params)
      .sort()
      .map((k) => k + params[k])
      .join("");
  return createHmac("sha1", token).update(data, "utf8").digest("base64");
}

export function form(params: Record<string, string>): string {
  return new URLSearchParams(params).toString();
}

/** A deterministic PRNG (mulberry32) so generated inputs are the same on every run. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

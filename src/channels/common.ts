/**
 * Helpers shared by the adapters: env reads, bounded normalization (spec §4.2 params, decisions §6
 * media caps) and one guarded outbound POST with timeout and failure classification.
 */
import { envVar } from "../platform/env";
import type { ChannelEnv, SendResult } from "./adapter";
import { type InboundAttachment, type Location, MAX_ATTACHMENTS, MAX_URL, type MediaKind } from "../shared/media";

/** A non-blank string env value, or undefined. Whitespace-only counts as unset. */
export function envString(env: ChannelEnv, name: string): string | undefined {
  const v = envVar(env, name);
  return typeof v === "string" && v.trim() !== "" ? v : undefined;
}

/** True when every named env var is a non-blank string. */
export function allSet(env: ChannelEnv, names: readonly string[]): boolean {
  return names.every((n) => envString(env, n) !== undefined);
}

/** An `*_API_BASE` value or its default, without trailing slashes. */
export function apiBase(env: ChannelEnv, name: string, fallback: string): string {
  return (envString(env, name)?.trim() ?? fallback).replace(/\/+$/, "");
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

/** Decodes UTF-8, or null for invalid bytes (a signed body that is not text is ignored). */
export function decodeUtf8(raw: Uint8Array): string | null {
  try {
    return utf8.decode(raw);
  } catch {
    return null;
  }
}

/** Parses a JSON body, or undefined when it is not valid UTF-8 JSON. */
export function parseJsonBytes(raw: Uint8Array): unknown {
  const text = decodeUtf8(raw);
  if (text === null) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The string at `v`, or undefined (numbers become their decimal text: ids arrive as both). */
export function str(v: unknown): string | undefined {
  if (typeof v === "string") return v;
  if (typeof v === "number" && Number.isFinite(v)) return String(v);
  return undefined;
}

/** A non-empty string, or undefined. */
export function nonEmpty(v: unknown): string | undefined {
  const s = str(v);
  return s !== undefined && s !== "" ? s : undefined;
}

export function arr(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

/** Media kind from a MIME type; anything not image/video/audio is a document. */
export function kindFromMime(mime: string | undefined): MediaKind {
  const top = (mime ?? "").split("/")[0].trim().toLowerCase();
  if (top === "image" || top === "video" || top === "audio") return top;
  return "document";
}

const codePoints = (s: string) => [...s].length;

/** Spec §4.2 bounds on params. */
export const PARAM_BOUNDS = { maxEntries: 16, maxValueChars: 512, maxSerializedBytes: 2048 } as const;
const PARAM_KEY = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * Builds a params object within spec §4.2 bounds from candidates in priority order. A candidate
 * that would break a bound (bad key, value over 512 characters, a 17th entry, or the serialized
 * object past 2048 bytes) is dropped whole, never truncated: a cut id would be a different id.
 * Returns undefined when nothing survives, so the inbound carries no `params` key at all.
 */
export function boundParams(candidates: ReadonlyArray<readonly [string, string | undefined]>): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  let count = 0;
  const enc = new TextEncoder();
  for (const [key, value] of candidates) {
    if (value === undefined || !PARAM_KEY.test(key) || key in out) continue;
    if (count >= PARAM_BOUNDS.maxEntries || codePoints(value) > PARAM_BOUNDS.maxValueChars) continue;
    const next = { ...out, [key]: value };
    if (enc.encode(JSON.stringify(next)).byteLength > PARAM_BOUNDS.maxSerializedBytes) continue;
    out[key] = value;
    count += 1;
  }
  return count ? out : undefined;
}

/** Decisions §6 media caps. */
export const MEDIA_BOUNDS = { maxItems: MAX_ATTACHMENTS, maxUrlChars: MAX_URL } as const;

/** Keeps at most 50 attachments with a non-empty url of at most 8192 characters; drops empty fields. */
export function boundAttachments(items: ReadonlyArray<InboundAttachment | undefined>): InboundAttachment[] | undefined {
  const out: InboundAttachment[] = [];
  for (const a of items) {
    if (!a || !a.url || codePoints(a.url) > MEDIA_BOUNDS.maxUrlChars) continue;
    if (out.length >= MEDIA_BOUNDS.maxItems) break;
    const item: InboundAttachment = { kind: a.kind, url: a.url };
    if (a.caption) item.caption = a.caption;
    if (a.filename) item.filename = a.filename;
    if (a.mime_type) item.mime_type = a.mime_type;
    out.push(item);
  }
  return out.length ? out : undefined;
}

/** A location from loosely typed provider fields, or undefined when coordinates are not valid. */
export function toLocation(lat: unknown, lon: unknown, name?: unknown, address?: unknown): Location | undefined {
  const latitude = typeof lat === "string" && lat.trim() !== "" ? Number(lat) : lat;
  const longitude = typeof lon === "string" && lon.trim() !== "" ? Number(lon) : lon;
  if (typeof latitude !== "number" || typeof longitude !== "number") return undefined;
  if (!Number.isFinite(latitude) || !Number.isFinite(longitude)) return undefined;
  if (Math.abs(latitude) > 90 || Math.abs(longitude) > 180) return undefined;
  const loc: Location = { latitude, longitude };
  const n = nonEmpty(name);
  const a = nonEmpty(address);
  if (n) loc.name = n;
  if (a) loc.address = a;
  return loc;
}

/** Seconds of a `Retry-After` header given in seconds (the form provider APIs use), else undefined. */
export function retryAfterSeconds(headers: Headers): number | undefined {
  const v = headers.get("retry-after");
  if (!v || !/^\d+$/.test(v.trim())) return undefined;
  return Number(v.trim());
}

/**
 * HTTP status class of a provider answer: 2xx accepted; 408, 425, 429 and 5xx transient; every
 * other status (other 4xx, and 3xx, since redirects are not followed) a permanent refusal.
 */
export function httpClass(status: number): "ok" | "transient" | "permanent" {
  if (status >= 200 && status < 300) return "ok";
  if (status === 408 || status === 425 || status === 429 || status >= 500) return "transient";
  return "permanent";
}

/** A provider's answer, read whole within the send timeout. */
export interface ProviderAnswer {
  status: number;
  headers: Headers;
  /** Parsed JSON, or undefined when the body was not JSON. */
  json: unknown;
}

/**
 * POSTs once with a timeout covering the request and reading its answer. Never throws: a timeout
 * or network error becomes a transient SendResult whose reason names no URL (the Telegram URL
 * carries the bot token) and no error text.
 */
export async function postOnce(
  fetchFn: typeof fetch,
  url: string,
  init: { headers: Record<string, string>; body: string },
  timeoutMs: number,
): Promise<{ ok: true; answer: ProviderAnswer } | { ok: false; result: SendResult }> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DOMException("send timed out", "TimeoutError")), Math.max(1, timeoutMs));
  try {
    const res = await fetchFn(url, { method: "POST", headers: init.headers, body: init.body, redirect: "manual", signal: controller.signal });
    const text = await res.text();
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { ok: true, answer: { status: res.status, headers: res.headers, json } };
  } catch {
    const reason = controller.signal.aborted ? "timeout" : "network error";
    return { ok: false, result: { ok: false, permanent: false, reason } };
  } finally {
    clearTimeout(timer);
  }
}

/** A failure SendResult from an HTTP status and a provider-named reason (truncated, code-like). */
export function failure(status: number, permanent: boolean, reason: string, headers?: Headers): SendResult {
  const r: SendResult = { ok: false, permanent, status, reason: reason.slice(0, 200) };
  const after = headers ? retryAfterSeconds(headers) : undefined;
  if (after !== undefined) r.retry_after_seconds = after;
  return r;
}

/** Basic auth header value for ASCII credentials. */
export function basicAuth(user: string, password: string): string {
  return `Basic ${btoa(`${user}:${password}`)}`;
}

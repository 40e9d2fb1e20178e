/**
 * Media a participant sends in an answer (docs/interactions.md "Media"): fetched once
 * and stored in R2 (binding `INTERACTION_MEDIA`) under a 43-character random id, then served by
 * `GET /api/interactions/media/{media_id}` to callers who may see the interaction.
 *
 * What can be fetched: an absolute http(s) URL (the api door's attachments, Twilio's `MediaUrl`),
 * through the outbound address guard; a Telegram `telegram-file:` reference, resolved with the Bot
 * API's `getFile` at the channel's API base (operator configuration, exempt from the guard like
 * every channel send). Anything else (a `whatsapp-media:` id, Slack's private URLs that need the
 * bot token) is kept as its reference, with the reason; so is an item over
 * `INTERACTIONS_MEDIA_MAX_BYTES` or one whose fetch failed. Every fetch goes through the network edge.
 */
import { randomToken } from "../access-control/crypto";
import type { Attachment } from "../shared/media";
import { apiBase, envString, isRecord } from "../channels/common";
import { TELEGRAM_DEFAULT_API_BASE, TELEGRAM_ENV, TELEGRAM_FILE_PREFIX } from "../channels/telegram";
import type { Env } from "../platform/env";
import { readStreamCapped } from "../platform/http/body";
import { checkOutboundUrl } from "../platform/net/address-guard";
import type { Settings } from "../platform/settings/settings";
import { withTimeout } from "../platform/timeout";
import type { AnswerMedia } from "./record";

/** Deadline of one media fetch (each request of it). */
export const MEDIA_FETCH_TIMEOUT_MS = 15_000;

/** The served path of a stored media item. */
export function mediaPath(mediaId: string): string {
  return `/api/interactions/media/${mediaId}`;
}

/** The R2 key of a media item. */
export function mediaKey(mediaId: string): string {
  return `media/${mediaId}`;
}

/** A media id: 43 url-safe base64 characters (32 random bytes). */
export const MEDIA_ID_PATTERN = /^[A-Za-z0-9_-]{43}$/;

type Fetched = { ok: true; bytes: Uint8Array; contentType: string | null } | { ok: false; problem: string };

/** One GET, capped and under the deadline; never throws, never names the URL. */
async function getCapped(fetchFn: typeof fetch, url: string, maxBytes: number): Promise<Fetched> {
  const timed = await withTimeout(MEDIA_FETCH_TIMEOUT_MS, async (signal): Promise<Fetched> => {
    let res: Response;
    try {
      res = await fetchFn(url, { method: "GET", redirect: "manual", signal });
    } catch {
      return { ok: false, problem: "the media could not be fetched" };
    }
    if (res.status < 200 || res.status > 299) {
      await res.body?.cancel();
      return { ok: false, problem: `the media fetch answered HTTP ${res.status}` };
    }
    const bytes = await readStreamCapped(res.body, maxBytes);
    if (!bytes) return { ok: false, problem: `the media is larger than ${maxBytes} bytes` };
    return { ok: true, bytes, contentType: res.headers.get("content-type") };
  });
  return timed.ok ? timed.value : { ok: false, problem: "the media fetch timed out" };
}

/** Resolves a Telegram file id to its download URL (Bot API `getFile`), or a problem. */
async function telegramFileUrl(env: Env, fetchFn: typeof fetch, fileId: string): Promise<{ ok: true; url: string } | { ok: false; problem: string }> {
  const vars = env as unknown as Record<string, unknown>;
  const token = envString(vars, TELEGRAM_ENV.botToken)?.trim();
  if (!token) return { ok: false, problem: "the telegram channel is not configured" };
  const base = apiBase(vars, TELEGRAM_ENV.apiBase, TELEGRAM_DEFAULT_API_BASE);
  const timed = await withTimeout(MEDIA_FETCH_TIMEOUT_MS, async (signal) => {
    try {
      const res = await fetchFn(`${base}/bot${token}/getFile`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ file_id: fileId }),
        redirect: "manual",
        signal,
      });
      return res.ok ? ((await res.json()) as unknown) : null;
    } catch {
      return null;
    }
  });
  const body = timed.ok ? timed.value : null;
  const path = isRecord(body) && body.ok === true && isRecord(body.result) && typeof body.result.file_path === "string" ? body.result.file_path : null;
  if (!path) return { ok: false, problem: "telegram getFile did not name the file" };
  return { ok: true, url: `${base}/file/bot${token}/${path}` };
}

/** Fetches one attachment's bytes, or says why not. */
async function fetchAttachment(env: Env, settings: Settings, fetchFn: typeof fetch, a: Attachment): Promise<Fetched> {
  const max = settings.interactions.mediaMaxBytes;
  if (a.url.startsWith(TELEGRAM_FILE_PREFIX)) {
    const resolved = await telegramFileUrl(env, fetchFn, a.url.slice(TELEGRAM_FILE_PREFIX.length));
    return resolved.ok ? getCapped(fetchFn, resolved.url, max) : resolved;
  }
  if (/^https?:\/\//i.test(a.url)) {
    const verdict = checkOutboundUrl(a.url, settings.outbound);
    if (!verdict.ok) return { ok: false, problem: `the media URL is refused by the outbound address guard: ${verdict.reason}` };
    return getCapped(fetchFn, a.url, max);
  }
  return { ok: false, problem: "this provider reference is not fetched; it is kept as sent" };
}

/**
 * Stores each attachment's bytes in R2 (`customMetadata` names the interaction and its audience,
 * which the media door authorizes by) and answers the answer's media list, in order. Never throws
 * for a fetch or store failure: that item keeps its reference and says why.
 */
export async function storeAnswerMedia(
  env: Env,
  settings: Settings,
  fetchFn: typeof fetch,
  owner: { interaction_id: string; audience: string | null },
  attachments: readonly Attachment[],
): Promise<AnswerMedia[]> {
  const out: AnswerMedia[] = [];
  for (const a of attachments) {
    const base: AnswerMedia = {
      kind: a.kind,
      media_id: null,
      url: a.url,
      content_type: null,
      bytes: null,
      ...(a.caption ? { caption: a.caption } : {}),
      ...(a.filename ? { filename: a.filename } : {}),
    };
    const got = await fetchAttachment(env, settings, fetchFn, a);
    if (!got.ok) {
      out.push({ ...base, problem: got.problem });
      continue;
    }
    const id = randomToken();
    const contentType = got.contentType?.split(";")[0].trim() || "application/octet-stream";
    try {
      await env.INTERACTION_MEDIA.put(mediaKey(id), got.bytes, {
        httpMetadata: { contentType },
        customMetadata: { interaction_id: owner.interaction_id, audience: owner.audience ?? "", kind: a.kind, ...(a.filename ? { filename: a.filename } : {}) },
      });
    } catch (err) {
      console.error("interaction media: storing an item failed", err instanceof Error ? err.message : "unknown error");
      out.push({ ...base, problem: "the media could not be stored" });
      continue;
    }
    out.push({ ...base, media_id: id, url: mediaPath(id), content_type: contentType, bytes: got.bytes.byteLength });
  }
  return out;
}

/** Deletes stored media items (erasure, retention). */
export async function deleteAnswerMedia(env: Env, media: readonly AnswerMedia[] | null | undefined): Promise<void> {
  const keys = (media ?? []).flatMap((m) => (m.media_id ? [mediaKey(m.media_id)] : []));
  if (keys.length) await env.INTERACTION_MEDIA.delete(keys);
}

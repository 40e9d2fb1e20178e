import { HttpError, badRequest } from "./errors";
import { findLoneSurrogate } from "./identifiers";

/** Largest request body any door accepts (decisions §1). */
export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * Reads a byte stream whole unless it exceeds `maxBytes`, in which case reading stops at once and
 * the answer is null: nothing past the cap is ever buffered. Shared by request bodies and the
 * answers of outbound calls.
 */
export async function readStreamCapped(stream: ReadableStream<Uint8Array> | null, maxBytes: number): Promise<Uint8Array | null> {
  if (!stream) return new Uint8Array(0);
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      return null;
    }
    chunks.push(value);
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}

/** Reads the raw body, refusing with 413 past MAX_BODY_BYTES without buffering the excess. */
export async function readRawBody(req: Request): Promise<Uint8Array> {
  const declared = Number(req.headers.get("content-length") ?? "NaN");
  if (Number.isFinite(declared) && declared > MAX_BODY_BYTES) throw tooLarge();
  const raw = await readStreamCapped(req.body, MAX_BODY_BYTES);
  if (!raw) throw tooLarge();
  return raw;
}

function tooLarge(): HttpError {
  return new HttpError(413, `request body exceeds ${MAX_BODY_BYTES} bytes`);
}

/**
 * Parses a JSON body; an empty body reads as `undefined`. A string or key holding a lone UTF-16
 * surrogate is refused (400 naming where): it cannot be stored or sent on as UTF-8 unchanged, so
 * accepting it would store something other than what was sent. Invalid UTF-8 is already refused by
 * the fatal decoder, so lone surrogates can only arrive as `\uD800`-style escapes, and the walk
 * runs only for bodies that contain such an escape. Channel webhooks never come through here.
 */
export function parseJsonBody(raw: Uint8Array): unknown {
  if (raw.byteLength === 0) return undefined;
  let text: string;
  let value: unknown;
  try {
    text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(raw);
    value = JSON.parse(text);
  } catch {
    throw badRequest("malformed JSON body");
  }
  if (SURROGATE_ESCAPE.test(text)) {
    const at = findLoneSurrogate(value);
    if (at !== null) throw badRequest(`invalid body: ${at || "body"}: must not contain lone UTF-16 surrogates`);
  }
  return value;
}

const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/;

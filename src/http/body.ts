import { HttpError, badRequest } from "./errors";

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

/** Parses a JSON body; an empty body reads as `undefined`. */
export function parseJsonBody(raw: Uint8Array): unknown {
  if (raw.byteLength === 0) return undefined;
  try {
    return JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(raw));
  } catch {
    throw badRequest("malformed JSON body");
  }
}

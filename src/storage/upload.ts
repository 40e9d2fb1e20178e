/**
 * The upload body of `POST /api/storage/resources` (docs/storage.md "Upload"), pure: text or
 * base64 content, an optional path (a random UUID when absent) and content type (inferred from the
 * extension when absent). The decoded size is checked against `STORAGE_MAX_UPLOAD_BYTES` (413).
 */
import { z } from "zod";
import { HttpError, badRequest } from "../platform/http/errors";
import { ContentType, inferContentType } from "./content-types";
import { StoragePath } from "./paths";

export const UploadBody = z
  .object({
    id: StoragePath.optional(),
    content: z.string(),
    encoding: z.enum(["text", "base64"]).default("text"),
    content_type: ContentType.optional(),
  })
  .strict();
export type UploadBody = z.infer<typeof UploadBody>;

const BASE64 = /^[A-Za-z0-9+/]*$/;

/** The bytes of standard base64 (padding optional), or null when `s` is not base64. */
export function decodeBase64(s: string): Uint8Array | null {
  const bare = s.replace(/={1,2}$/, "");
  if (!BASE64.test(bare) || bare.length % 4 === 1) return null;
  if (s.length !== bare.length && s.length % 4 !== 0) return null;
  try {
    const bin = atob(bare + "=".repeat((4 - (bare.length % 4)) % 4));
    const out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  } catch {
    return null;
  }
}

export interface PreparedUpload {
  id: string;
  bytes: Uint8Array;
  contentType: string;
}

/** Decodes and checks an upload: 400 for content that is not base64, 413 past the cap. */
export function prepareUpload(body: UploadBody, maxBytes: number, newId: () => string): PreparedUpload {
  const id = body.id ?? newId();
  const bytes = body.encoding === "base64" ? decodeBase64(body.content) : new TextEncoder().encode(body.content);
  if (!bytes) throw badRequest("invalid body: content: must be standard base64 when encoding is base64");
  if (bytes.byteLength > maxBytes) throw new HttpError(413, `content exceeds STORAGE_MAX_UPLOAD_BYTES (${maxBytes} bytes)`);
  return { id, bytes, contentType: body.content_type ?? inferContentType(id, body.encoding) };
}

/**
 * Content types of stored objects (docs/storage.md "Downloads"), pure: the type an upload names is
 * validated; without one it is inferred from the path's extension. A download is served with its
 * stored type, `x-content-type-options: nosniff` and a sandboxing CSP, and as an attachment unless
 * its type is one a browser shows without running anything (plain text, JSON, raster images,
 * audio, video, PDF). HTML, SVG, XML and scripts always download.
 */
import { z } from "zod";
import { baseName } from "./paths";

const TEXT = "; charset=utf-8";

/** Extension → content type; what an upload without a content type is stored as. */
const BY_EXTENSION: Readonly<Record<string, string>> = {
  txt: `text/plain${TEXT}`,
  text: `text/plain${TEXT}`,
  log: `text/plain${TEXT}`,
  jq: `text/plain${TEXT}`,
  md: `text/markdown${TEXT}`,
  csv: `text/csv${TEXT}`,
  mustache: `text/x-mustache${TEXT}`,
  html: `text/html${TEXT}`,
  htm: `text/html${TEXT}`,
  css: `text/css${TEXT}`,
  js: `text/javascript${TEXT}`,
  mjs: `text/javascript${TEXT}`,
  json: "application/json",
  map: "application/json",
  yaml: "application/yaml",
  yml: "application/yaml",
  xml: "application/xml",
  svg: "image/svg+xml",
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  avif: "image/avif",
  ico: "image/x-icon",
  pdf: "application/pdf",
  zip: "application/zip",
  gz: "application/gzip",
  wasm: "application/wasm",
  woff: "font/woff",
  woff2: "font/woff2",
  mp3: "audio/mpeg",
  ogg: "audio/ogg",
  wav: "audio/wav",
  mp4: "video/mp4",
  webm: "video/webm",
};

export const OCTET_STREAM = "application/octet-stream";
export const PLAIN_TEXT = `text/plain${TEXT}`;

/** The extension of a path's last segment, lower-cased ("" when none). */
export function extensionOf(path: string): string {
  const name = baseName(path);
  const dot = name.lastIndexOf(".");
  return dot <= 0 ? "" : name.slice(dot + 1).toLowerCase();
}

/** The type a path's extension implies, or null when the extension is unknown. */
export function typeForExtension(path: string): string | null {
  return BY_EXTENSION[extensionOf(path)] ?? null;
}

/** The type an upload without one is stored as: by extension, else plain text for text and bytes for base64. */
export function inferContentType(path: string, encoding: "text" | "base64"): string {
  return typeForExtension(path) ?? (encoding === "text" ? PLAIN_TEXT : OCTET_STREAM);
}

const TOKEN = "[A-Za-z0-9!#$&^_.+-]+";
const MEDIA_TYPE = new RegExp(`^${TOKEN}/${TOKEN}(\\s*;\\s*${TOKEN}=(${TOKEN}|"[^"\\\\\\r\\n\\u0000-\\u001f]*"))*$`);

/** A content type an upload may name: `type/subtype` with optional parameters (RFC 9110 media type). */
export const ContentType = z
  .string()
  .max(200)
  .refine((s) => MEDIA_TYPE.test(s), { message: "must be a media type such as text/plain or image/png" });

/** The media type without parameters, lower-cased. */
export function essence(contentType: string): string {
  return contentType.split(";")[0].trim().toLowerCase();
}

const INLINE_SAFE = new Set([
  "text/plain",
  "text/csv",
  "text/markdown",
  "application/json",
  "image/png",
  "image/jpeg",
  "image/gif",
  "image/webp",
  "image/avif",
  "audio/mpeg",
  "audio/ogg",
  "audio/wav",
  "video/mp4",
  "video/webm",
  "application/pdf",
]);

/** Can a download of this type be shown inline (it runs nothing in the browser)? */
export function isInlineSafe(contentType: string): boolean {
  return INLINE_SAFE.has(essence(contentType));
}

/** Is this type text (what a text resource or a backup's text row may be)? */
export function isTextual(contentType: string): boolean {
  const e = essence(contentType);
  return e.startsWith("text/") || e === "application/json" || e === "application/yaml" || e === "application/xml" || e.endsWith("+json") || e.endsWith("+xml");
}

/** `content-disposition` for a download of `path`: an ASCII file name and the exact one as RFC 5987 `filename*`. */
export function contentDisposition(path: string, inline: boolean): string {
  const name = baseName(path);
  const ascii = name.replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 200) || "download";
  const exact = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `${inline ? "inline" : "attachment"}; filename="${ascii}"; filename*=UTF-8''${exact}`;
}

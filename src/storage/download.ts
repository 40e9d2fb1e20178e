/**
 * The raw download of a stored object (`GET /api/storage/resources/{resource_id}/content`,
 * docs/storage.md "Downloads"): its bytes with its stored content type, one byte range when asked
 * (206, or 416 when unsatisfiable), `If-None-Match` (304), and the headers that keep a browser
 * from running it as a page of this origin.
 */
import { HttpError, notFound } from "../platform/http/errors";
import { contentDisposition, isInlineSafe } from "./content-types";
import { viewOf } from "./objects";
import { contentRange, decideRange } from "./range";

/** Headers every download carries. */
export const DOWNLOAD_HEADERS: Readonly<Record<string, string>> = {
  "x-content-type-options": "nosniff",
  "content-security-policy": "default-src 'none'; sandbox",
  "cache-control": "private, no-cache",
  "accept-ranges": "bytes",
};

function etagMatches(ifNoneMatch: string | null, etag: string): boolean {
  if (!ifNoneMatch) return false;
  if (ifNoneMatch.trim() === "*") return true;
  // Weak comparison (RFC 9110 §13.1.2): W/ prefixes do not matter.
  const bare = (t: string) => t.trim().replace(/^W\//, "");
  return ifNoneMatch.split(",").some((t) => bare(t) === bare(etag));
}

export const resourceNotFound = () => notFound("resource not found");

/** The download answer for object `id`, reading the request's `Range` and `If-None-Match`. */
export async function download(bucket: R2Bucket, id: string, request: Request): Promise<Response> {
  // Two attempts: the object may be replaced between the head and the ranged read.
  for (let attempt = 0; attempt < 2; attempt++) {
    const head = await bucket.head(id);
    if (!head) throw resourceNotFound();
    const view = viewOf(head);
    const headers = new Headers(DOWNLOAD_HEADERS);
    headers.set("etag", view.etag);
    if (etagMatches(request.headers.get("if-none-match"), view.etag)) return new Response(null, { status: 304, headers });
    const range = decideRange(request.headers.get("range"), view.size);
    if (range.kind === "unsatisfiable") {
      throw new HttpError(416, "range not satisfiable", undefined, undefined, { "content-range": `bytes */${view.size}`, "accept-ranges": "bytes" });
    }
    const body = await bucket.get(id, {
      onlyIf: { etagMatches: head.etag },
      ...(range.kind === "partial" ? { range: { offset: range.offset, length: range.length } } : {}),
    });
    if (!body) throw resourceNotFound();
    if (!("body" in body)) continue;
    headers.set("content-type", view.content_type);
    headers.set("content-disposition", contentDisposition(id, isInlineSafe(view.content_type)));
    if (range.kind === "partial") {
      headers.set("content-range", contentRange(range.offset, range.length, view.size));
      headers.set("content-length", String(range.length));
      return new Response(body.body, { status: 206, headers });
    }
    headers.set("content-length", String(view.size));
    return new Response(body.body, { status: 200, headers });
  }
  throw new HttpError(409, "resource changed while being read; retry");
}

/**
 * The one way the console talks to the API. The key is sent as the `x-api-key` header from memory
 * (src/session.ts); it never goes into a URL. Every refusal becomes an ApiError carrying the
 * API's own `error` message (and `code`), which the views show as it is.
 */
import { currentKey } from "./session";

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code?: string,
    /** The refusal's other fields, when it carries any. */
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export type Query = Record<string, string | number | undefined | null>;

export interface CallOptions {
  body?: unknown;
  query?: Query;
  /** false: send no key (the public login doors). */
  auth?: boolean;
}

/** `/api/...` with `{param}`s filled in, percent-encoded. */
export function path(template: string, params: Record<string, string> = {}): string {
  return template.replace(/\{([a-z_]+)\}/g, (_, name: string) => encodeURIComponent(params[name] ?? ""));
}

function withQuery(p: string, query?: Query): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  const s = q.toString();
  return s ? `${p}?${s}` : p;
}

/** Calls the API; answers `data` of a `{data}` answer, throws ApiError otherwise. */
export async function call<T = unknown>(method: string, p: string, opts: CallOptions = {}): Promise<T> {
  const headers: Record<string, string> = { accept: "application/json" };
  const key = opts.auth === false ? null : currentKey();
  if (key) headers["x-api-key"] = key;
  if (opts.body !== undefined) headers["content-type"] = "application/json";
  let res: Response;
  try {
    res = await fetch(withQuery(p, opts.query), {
      method,
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
      credentials: "omit",
      cache: "no-store",
    });
  } catch (err) {
    throw new ApiError(0, `the service did not answer (${err instanceof Error ? err.message : String(err)})`);
  }
  const text = await res.text();
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = text;
  }
  if (!res.ok) {
    const b = body as { error?: unknown; code?: unknown } | null;
    const message =
      b && typeof b === "object" && typeof b.error === "string"
        ? b.error
        : `${res.status} ${res.statusText || "error"}${typeof body === "string" && body ? `: ${body.slice(0, 200)}` : ""}`;
    const obj = b && typeof b === "object" ? (b as Record<string, unknown>) : {};
    throw new ApiError(res.status, message, typeof obj.code === "string" ? obj.code : undefined, obj);
  }
  return (body && typeof body === "object" && "data" in body ? (body as { data: T }).data : body) as T;
}

/** The message to show for any failure. */
export function messageOf(err: unknown): string {
  if (err instanceof ApiError) return err.status ? `${err.message} (HTTP ${err.status}${err.code ? `, ${err.code}` : ""})` : err.message;
  return err instanceof Error ? err.message : String(err);
}

/**
 * Downloads the bytes a GET door answers (a web visitor's upload) as `filename`: fetched with the
 * key, then saved from memory, so the key never goes into a URL.
 */
export async function download(p: string, filename: string): Promise<void> {
  const key = currentKey();
  let res: Response;
  try {
    res = await fetch(p, { headers: key ? { "x-api-key": key } : {}, credentials: "omit", cache: "no-store" });
  } catch (err) {
    throw new ApiError(0, `the service did not answer (${err instanceof Error ? err.message : String(err)})`);
  }
  if (!res.ok) {
    const body = (await res.json().catch(() => null)) as { error?: unknown } | null;
    throw new ApiError(res.status, typeof body?.error === "string" ? body.error : `${res.status} ${res.statusText || "error"}`);
  }
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement("a");
  a.href = url;
  a.download = filename;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

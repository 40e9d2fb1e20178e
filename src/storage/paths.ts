/**
 * Storage paths (docs/storage.md "Paths"): the one validator every storage, template and plugin
 * door uses, pure. A path is what an R2 key is here: relative, `/`-separated segments, each one
 * non-empty and neither `.` nor `..` (no traversal, no double slash, no leading or trailing
 * slash), no backslash, no control character and no lone surrogate (src/platform/http/identifiers.ts: the
 * key R2 stores must be the key that was asked for), at most 32 segments of at most 255
 * characters, at most 1024 bytes as UTF-8 (R2's own key limit). Messages name the rule, never the
 * path.
 */
import { z } from "zod";
import { isIntactIdentifier } from "../platform/http/identifiers";

export const STORAGE_PATH_MAX_BYTES = 1024;
export const STORAGE_SEGMENT_MAX_CHARS = 255;
export const STORAGE_MAX_DEPTH = 32;

const utf8Length = (s: string) => new TextEncoder().encode(s).byteLength;

/** Why `path` is not a storage path, or null when it is. */
export function storagePathProblem(path: string): string | null {
  if (path.length === 0) return "must not be empty";
  if (!isIntactIdentifier(path)) return "must not contain control characters or lone UTF-16 surrogates";
  if (path.includes("\\")) return "must not contain a backslash";
  if (path.startsWith("/")) return "must be relative (no leading /)";
  if (path.endsWith("/")) return "must not end with /";
  if (utf8Length(path) > STORAGE_PATH_MAX_BYTES) return `must be at most ${STORAGE_PATH_MAX_BYTES} bytes as UTF-8`;
  const segments = path.split("/");
  if (segments.length > STORAGE_MAX_DEPTH) return `must have at most ${STORAGE_MAX_DEPTH} segments`;
  for (const s of segments) {
    if (s === "") return "must not contain an empty segment (//)";
    if (s === "." || s === "..") return "must not contain . or .. segments";
    if (s.length > STORAGE_SEGMENT_MAX_CHARS) return `must have segments of at most ${STORAGE_SEGMENT_MAX_CHARS} characters`;
  }
  return null;
}

/**
 * Why `prefix` is not a listing prefix, or null: empty (the whole bucket), or a path, optionally
 * ending with `/` (a directory). Its last segment may be partial (`templates/gre`).
 */
export function storagePrefixProblem(prefix: string): string | null {
  if (prefix === "") return null;
  return storagePathProblem(prefix.endsWith("/") ? prefix.slice(0, -1) : prefix);
}

/** A directory as a door takes it: a path, one trailing `/` tolerated and dropped. */
export function normalizeDir(dir: string): string {
  return dir.endsWith("/") ? dir.slice(0, -1) : dir;
}

const refined = (check: (s: string) => string | null) =>
  z.string().superRefine((s, ctx) => {
    const problem = check(s);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  });

/** A storage path (a resource id). Path parameters arrive percent-decoded: `/` travels as `%2F`. */
export const StoragePath = refined(storagePathProblem);
/** A listing prefix: "" or a path, optionally ending with `/`. */
export const StoragePrefix = refined(storagePrefixProblem);
/** A directory: a path, optionally ending with `/` (dropped). */
export const StorageDir = refined((s) => storagePathProblem(normalizeDir(s))).transform(normalizeDir);

/** Is `path` the directory `dir` itself or inside it? */
export function isWithin(path: string, dir: string): boolean {
  return path === dir || path.startsWith(`${dir}/`);
}

/** The last segment of a path (a download's file name). */
export function baseName(path: string): string {
  const at = path.lastIndexOf("/");
  return at < 0 ? path : path.slice(at + 1);
}

/**
 * The top-level directory whose objects a door serves inline as pages of this origin (plugin
 * console assets, docs/plugins.md). Only an admin may write in it, so no other grant can plant a
 * page the console would load.
 */
export const ADMIN_ONLY_DIR = "plugins";

/** Would a write (upload or delete) at `path` touch the admin-only directory? */
export function touchesAdminOnlyDir(path: string): boolean {
  return isWithin(path, ADMIN_ONLY_DIR);
}

/**
 * The content area's settings (docs/storage.md, docs/tool-metadata.md "Settings"). An upload is one
 * JSON body (at most 1 MiB, decisions §1), which carries 768 KiB in base64 at most, so that is also
 * the upload ceiling; larger objects go into the bucket with R2's own tools (docs/storage.md).
 */
import { type EnvVars, defineSetting, envString, storeUrl, wholeNumber } from "./define";

/** What one 1 MiB JSON body can carry as base64 (3/4 of it), and so the upload ceiling. */
export const STORAGE_UPLOAD_CEILING_BYTES = 768 * 1024;

const BINDING_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** It names a binding, a deployment fact, so the runtime overlay cannot set it. */
export const STORAGE_BUCKET = defineSetting({
  name: "STORAGE_BUCKET",
  area: "storage",
  type: "string",
  default: null,
  secret: false,
  overlay: false,
  description:
    "The R2 binding of the content store (storage and template doors, TemplatedText ids, plugin console assets); unset → 501 storage-not-configured, and TemplatedText ids resolve in the D1 text resources only. Env only: it names a binding.",
  gate: { code: "storage", message: "storage not configured (set STORAGE_BUCKET to an R2 binding)" },
  read(env, errors): string | null {
    const name = envString(env, "STORAGE_BUCKET")?.trim() || null;
    if (name && !BINDING_NAME.test(name)) errors.push("STORAGE_BUCKET must name an R2 binding (letters, digits and _)");
    else if (name && !(name in env)) errors.push("STORAGE_BUCKET names an R2 binding that is not bound");
    return name;
  },
});

export const STORAGE_MAX_UPLOAD_BYTES = wholeNumber("STORAGE_MAX_UPLOAD_BYTES", {
  area: "storage",
  default: STORAGE_UPLOAD_CEILING_BYTES,
  min: 1,
  max: STORAGE_UPLOAD_CEILING_BYTES,
  description: "Largest object one upload (POST /api/storage/resources) stores, decoded; at most what a 1 MiB JSON body carries in base64.",
});

export const TOOL_META_STORE_URL = storeUrl("TOOL_META_STORE_URL", {
  area: "tool-meta",
  what: "The tool metadata overlay's store (folders, tags, badges, hidden)",
  unset: "every /api/tool-meta door answers 501 tool-meta-not-configured and GET /api/tools/tags shows the defaults",
  gate: { code: "tool-meta", what: "tool metadata store" },
});

export const STORAGE_SETTINGS = [STORAGE_BUCKET, STORAGE_MAX_UPLOAD_BYTES, TOOL_META_STORE_URL] as const;

export interface StorageSettings {
  /** The R2 binding's name, or null when the content store is off. */
  bucketBinding: string | null;
  maxUploadBytes: number;
}

export interface ToolMetaSettings {
  storeUrl: string | null;
}

export function parseStorageSettings(env: EnvVars, errors: string[]): StorageSettings {
  return { bucketBinding: STORAGE_BUCKET.read(env, errors), maxUploadBytes: STORAGE_MAX_UPLOAD_BYTES.read(env, errors) };
}

export function parseToolMetaSettings(env: EnvVars, errors: string[]): ToolMetaSettings {
  return { storeUrl: TOOL_META_STORE_URL.read(env, errors) };
}

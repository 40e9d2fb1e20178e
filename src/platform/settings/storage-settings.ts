/**
 * The content area's settings (docs/storage.md, docs/tool-metadata.md "Settings"):
 * - `STORAGE_BUCKET` names the R2 binding of the content store (wrangler.toml binds `STORAGE` and
 *   sets it). Unset → the storage and template doors answer 501 `storage-not-configured`, and
 *   TemplatedText ids resolve in the D1 text resources only. It names a binding, a deployment
 *   fact, so the runtime overlay cannot set it (the registry marks it env only);
 * - `STORAGE_MAX_UPLOAD_BYTES`: the largest object one upload may store, decoded. An upload is one
 *   JSON body (at most 1 MiB, decisions §1), which carries 768 KiB in base64 at most, so that is
 *   also the ceiling; larger objects go into the bucket with R2's own tools (docs/storage.md);
 * - `TOOL_META_STORE_URL` (`d1://BINDING`) switches the tool metadata overlay on; unset → its
 *   doors answer 501 `tool-meta-not-configured` and `GET /api/tools/tags` shows the defaults.
 */
import { d1StoreUrl, envString, intSetting } from "./store-url";

export interface StorageSettings {
  /** `STORAGE_BUCKET`: the R2 binding's name, or null when the content store is off. */
  bucketBinding: string | null;
  /** `STORAGE_MAX_UPLOAD_BYTES` (default and ceiling 768 KiB). */
  maxUploadBytes: number;
}

export interface ToolMetaSettings {
  /** `TOOL_META_STORE_URL` (d1://BINDING). */
  storeUrl: string | null;
}

/** What one 1 MiB JSON body can carry as base64 (3/4 of it), and so the upload ceiling. */
export const STORAGE_UPLOAD_CEILING_BYTES = 768 * 1024;
export const STORAGE_DEFAULTS = { maxUploadBytes: STORAGE_UPLOAD_CEILING_BYTES } as const;
export const STORAGE_BUCKET_SETTING = "STORAGE_BUCKET";

const BINDING_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export function parseStorageSettings(env: Record<string, unknown>, errors: string[]): StorageSettings {
  const name = envString(env, STORAGE_BUCKET_SETTING)?.trim() || null;
  if (name && !BINDING_NAME.test(name)) errors.push(`${STORAGE_BUCKET_SETTING} must name an R2 binding (letters, digits and _)`);
  else if (name && !(name in env)) errors.push(`${STORAGE_BUCKET_SETTING} names an R2 binding that is not bound`);
  return {
    bucketBinding: name,
    maxUploadBytes: intSetting(env, "STORAGE_MAX_UPLOAD_BYTES", STORAGE_DEFAULTS.maxUploadBytes, 1, STORAGE_UPLOAD_CEILING_BYTES, errors),
  };
}

export function parseToolMetaSettings(env: Record<string, unknown>, errors: string[]): ToolMetaSettings {
  return { storeUrl: d1StoreUrl(env, "TOOL_META_STORE_URL", errors) };
}

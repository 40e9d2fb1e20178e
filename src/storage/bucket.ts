/**
 * Which R2 bucket is the content store: the binding `STORAGE_BUCKET` names (wrangler.toml binds
 * `STORAGE`, bucket `bridge-storage`; `npm start` and the workers tests keep it locally).
 *
 * Doors get it from their request's env and settings. TemplatedText renders everywhere (route
 * create, state bindings, hooks, template programs), and most of those callers hold only the D1
 * binding, so `ambientBucket` reads the same setting from the Worker's own env
 * (`cloudflare:workers`), the env every request and object of this Worker runs with.
 * `STORAGE_BUCKET` is env only (the overlay cannot set it), so both ways name the same bucket.
 */
import { env as workerEnv } from "cloudflare:workers";
import { notConfigured } from "../platform/http/errors";
import { parseStorageSettings } from "../platform/settings/storage-settings";

function isBucket(v: unknown): v is R2Bucket {
  const b = v as R2Bucket | null;
  return (
    typeof b === "object" &&
    b !== null &&
    typeof b.get === "function" &&
    typeof b.put === "function" &&
    typeof b.list === "function" &&
    typeof b.head === "function"
  );
}

/** The bucket `binding` names in `env`, or null (unset, or not an R2 bucket). */
export function bucketIn(env: object, binding: string | null): R2Bucket | null {
  if (!binding) return null;
  const v = Reflect.get(env, binding);
  return isBucket(v) ? v : null;
}

/** The content store a door uses, or the 501 `storage-not-configured`. */
export function requireBucket(env: object, binding: string | null): R2Bucket {
  const bucket = bucketIn(env, binding);
  if (!bucket) throw notConfigured("storage", "storage not configured (set STORAGE_BUCKET to an R2 binding)");
  return bucket;
}

/** The content store as the Worker's own env configures it (for TemplatedText), or null. */
export function ambientBucket(): R2Bucket | null {
  const env = workerEnv as unknown as Record<string, unknown>;
  return bucketIn(env, parseStorageSettings(env, []).bucketBinding);
}

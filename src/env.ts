/** Bindings and variables the Worker reads. Settings are parsed from these in src/settings. */
export interface Env {
  DB: D1Database;
  THREADS: DurableObjectNamespace;
  ADDRESS_BUCKETS: DurableObjectNamespace;
  BUCKET_DIRECTORY: DurableObjectNamespace;
  [name: string]: unknown;
}

/**
 * The network edge. Every outbound request of the Worker and its Durable Objects (callbacks,
 * provider sends, HTTP tools, LLM and agent endpoints) goes through `edgeFetch`, so tests inside
 * workerd can put a fake network in place with `setEdgeFetch` (the pool gives tests the same
 * module instance the Durable Objects use). Production never calls `setEdgeFetch`.
 */
let override: typeof fetch | null = null;

export const edgeFetch: typeof fetch = (input, init) => (override ?? globalThis.fetch)(input, init);

/** Installs a fake network (tests only); `null` restores the real one. */
export function setEdgeFetch(fn: typeof fetch | null): void {
  override = fn;
}

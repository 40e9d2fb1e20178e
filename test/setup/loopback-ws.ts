/**
 * The workers pool reaches each test runtime over one WebSocket on loopback (miniflare's `fetch`,
 * through the `ws` client): every module's source and every test's messages cross it. `ws` offers
 * permessage-deflate by default and the runtime accepts it, so both ends compressed and inflated
 * all of that traffic; compressing was the largest CPU cost of the run's main process, for bytes
 * that never leave the machine. Loaded by vitest.config.ts before the pool (and so miniflare)
 * loads, this makes `ws` clients in this process open without compression. Servers, and the
 * Worker's own sockets in every test, are untouched.
 */
import { createRequire } from "node:module";

const fromMiniflare = createRequire(createRequire(import.meta.url).resolve("miniflare"));
const path = fromMiniflare.resolve("ws");
const WebSocket = fromMiniflare("ws") as new (address: unknown, protocols?: unknown, options?: Record<string, unknown>) => object;
const cached = fromMiniflare.cache[path];
if (cached && cached.exports === WebSocket && !(WebSocket as { loopbackPlain?: true }).loopbackPlain) {
  class PlainWebSocket extends WebSocket {
    static loopbackPlain = true as const;
    constructor(address: unknown, protocols?: unknown, options?: Record<string, unknown>) {
      // `ws` takes the options as the second argument when no protocols are given.
      if (options === undefined && protocols && typeof protocols === "object" && !Array.isArray(protocols)) {
        super(address, { perMessageDeflate: false, ...(protocols as Record<string, unknown>) });
      } else {
        super(address, protocols, { perMessageDeflate: false, ...options });
      }
    }
  }
  cached.exports = PlainWebSocket;
}

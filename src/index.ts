/** Worker entry: the Hono app, the prune cron and the Durable Object classes. */
import { createApp } from "./app";
import type { Env } from "./env";
import { pruneThrottle } from "./auth/throttle";

const app = createApp();

export default {
  fetch: app.fetch,
  async scheduled(_controller: ScheduledController, env: Env, ctx: ExecutionContext): Promise<void> {
    ctx.waitUntil(pruneThrottle(env.DB, Date.now()));
  },
} satisfies ExportedHandler<Env>;

export { ThreadObject } from "../durable-objects/thread-object";
export { AddressBucket } from "../durable-objects/address-bucket";

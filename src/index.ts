/** Worker entry: the Hono app, the prune cron and the Durable Object classes. */
import { createApp } from "./app";
import type { Env } from "./platform/env";
import { pruneClaimLinks } from "./access-control/claim-links";
import { pruneThrottle } from "./access-control/throttle";
import { pruneIndexes } from "./conversations/door/indexes";
import { pruneStarts } from "./connectors/starts";
import { isolateSettings } from "./config/isolate-settings";
import { pruneStates } from "./states/declarations";
import { applyDueSaves } from "./states/pending-saves";
import { pruneToolRuns } from "./tool-runs/index-store";
import { pruneTriggerLinks } from "./hooks/trigger-links";
import { publishAccessChanges, publishingWrites } from "./platform/epochs/publish";

const app = createApp();

export default {
  // A request that wrote D1 publishes its changes to the access epochs before it answers.
  fetch: publishingWrites<Env>((request, env, ctx) => app.fetch(request, env, ctx)),
  async scheduled(_controller: ScheduledController, env: Env, ctx: ExecutionContext): Promise<void> {
    const now = Date.now();
    // The env with the runtime overlay on top, as the doors see it (docs/runtime-settings.md).
    const settings = (await isolateSettings.ensure(env, (p) => ctx.waitUntil(p))).result;
    // States are swept only where the states store is on (its doors answer 501 otherwise).
    const states = settings.ok && settings.settings.states.storeUrl ? Promise.all([pruneStates(env, now), applyDueSaves(env, now)]) : Promise.resolve();
    // Expired OAuth starts of the connectors area (each start also prunes them; this covers quiet periods).
    const connectors = settings.ok && settings.settings.connectors.storeUrl ? pruneStarts(env.DB, now) : Promise.resolve();
    // Expired background tool-run rows (each run's object deletes its own; this covers the rest) and expired hook trigger links.
    const toolRuns =
      settings.ok && settings.settings.toolRuns.storeUrl ? Promise.all([pruneToolRuns(env.DB, now), pruneTriggerLinks(env.DB, now)]) : Promise.resolve();
    // A backstop for writes whose publication failed or that ran outside a request.
    ctx.waitUntil(
      Promise.all([
        publishAccessChanges(env),
        pruneThrottle(env.DB, now),
        pruneClaimLinks(env.DB, now),
        pruneIndexes(env.DB, now),
        states,
        connectors,
        toolRuns,
      ]),
    );
  },
} satisfies ExportedHandler<Env>;

export { ThreadObject } from "../durable-objects/thread-object";
export { AddressBucket } from "../durable-objects/address-bucket";
export { BucketDirectory } from "../durable-objects/bucket-directory";
export { IndexShard } from "../durable-objects/index-shard";
export { PersonDirectory } from "../durable-objects/person-directory";
export { StateStore } from "../durable-objects/state-store";
export { NotificationFeed } from "../durable-objects/notification-feed";
export { ConnectorConnection } from "../durable-objects/connector-connection";
export { MarketplaceLock } from "../durable-objects/marketplace-lock";
export { ToolRun } from "../durable-objects/tool-run";
export { Schedule } from "../durable-objects/schedule";
export { Interaction } from "../durable-objects/interaction";
export { InteractionHub } from "../durable-objects/interaction-hub";
export { ConsoleHub } from "../durable-objects/console-hub";
export { AccessEpoch } from "../durable-objects/access-epoch";

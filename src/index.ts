/** Worker entry: the Hono app, the prune cron and the Durable Object classes. */
import { createApp } from "./app";
import type { Env } from "./platform/env";
import { pruneClaimLinks } from "./access-control/claim-links";
import { pruneThrottle } from "./access-control/throttle";
import { pruneIndexes } from "./shards/listing-table";
import { pruneStarts } from "./connectors/starts";
import { isolateSettings } from "./config/isolate-settings";
import { pruneStates } from "./states/declarations";
import { applyDueSaves } from "./states/pending-saves";
import { pruneToolRuns } from "./tool-runs/index-store";
import { pruneTriggerLinks } from "./hooks/trigger-links";
import { publishAccessChanges, publishingWrites } from "./platform/epochs/publish";
import { countWorkerRequest, meterBindings, meteredObject, usageMeterFromEnv, usageMeterOn, usageReadout } from "./platform/metering/usage-meter";
import { ThreadObject as ThreadObjectShell } from "../durable-objects/thread-object";
import { AddressBucket as AddressBucketShell } from "../durable-objects/address-bucket";
import { BucketDirectory as BucketDirectoryShell } from "../durable-objects/bucket-directory";
import { IndexShard as IndexShardShell } from "../durable-objects/index-shard";
import { PersonDirectory as PersonDirectoryShell } from "../durable-objects/person-directory";
import { StateStore as StateStoreShell } from "../durable-objects/state-store";
import { NotificationFeed as NotificationFeedShell } from "../durable-objects/notification-feed";
import { ConnectorConnection as ConnectorConnectionShell } from "../durable-objects/connector-connection";
import { MarketplaceLock as MarketplaceLockShell } from "../durable-objects/marketplace-lock";
import { ToolRun as ToolRunShell } from "../durable-objects/tool-run";
import { Schedule as ScheduleShell } from "../durable-objects/schedule";
import { Interaction as InteractionShell } from "../durable-objects/interaction";
import { InteractionHub as InteractionHubShell } from "../durable-objects/interaction-hub";
import { ConsoleHub as ConsoleHubShell } from "../durable-objects/console-hub";
import { AccessEpoch as AccessEpochShell } from "../durable-objects/access-epoch";

const app = createApp();
const handle = publishingWrites<Env>((request, env, ctx) => app.fetch(request, env, ctx));

/**
 * The request as the Worker serves it. With the usage meter's token in the env (the bench's cost
 * phase; never in a deployment) the isolate counts, and `GET /__usage` reads the counts.
 */
function serve(request: Request, env: Env, ctx: ExecutionContext): Response | Promise<Response> {
  const token = usageMeterFromEnv(env as unknown as Record<string, unknown>);
  const readout = token ? usageReadout(request, token) : null;
  if (readout) return readout;
  if (usageMeterOn()) {
    countWorkerRequest();
    meterBindings(env as unknown as Record<string, unknown>);
  }
  return handle(request, env, ctx);
}

export default {
  // A request that wrote D1 publishes its changes to the access epochs before it answers.
  fetch: serve,
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

// The object classes as the Worker exports them: unchanged unless the usage meter is on (usage-meter.ts).
export const ThreadObject = meteredObject(ThreadObjectShell, "ThreadObject");
export type ThreadObject = ThreadObjectShell;
export const AddressBucket = meteredObject(AddressBucketShell, "AddressBucket");
export type AddressBucket = AddressBucketShell;
export const BucketDirectory = meteredObject(BucketDirectoryShell, "BucketDirectory");
export type BucketDirectory = BucketDirectoryShell;
export const IndexShard = meteredObject(IndexShardShell, "IndexShard");
export type IndexShard = IndexShardShell;
export const PersonDirectory = meteredObject(PersonDirectoryShell, "PersonDirectory");
export type PersonDirectory = PersonDirectoryShell;
export const StateStore = meteredObject(StateStoreShell, "StateStore");
export type StateStore = StateStoreShell;
export const NotificationFeed = meteredObject(NotificationFeedShell, "NotificationFeed");
export type NotificationFeed = NotificationFeedShell;
export const ConnectorConnection = meteredObject(ConnectorConnectionShell, "ConnectorConnection");
export type ConnectorConnection = ConnectorConnectionShell;
export const MarketplaceLock = meteredObject(MarketplaceLockShell, "MarketplaceLock");
export type MarketplaceLock = MarketplaceLockShell;
export const ToolRun = meteredObject(ToolRunShell, "ToolRun");
export type ToolRun = ToolRunShell;
export const Schedule = meteredObject(ScheduleShell, "Schedule");
export type Schedule = ScheduleShell;
export const Interaction = meteredObject(InteractionShell, "Interaction");
export type Interaction = InteractionShell;
export const InteractionHub = meteredObject(InteractionHubShell, "InteractionHub");
export type InteractionHub = InteractionHubShell;
export const ConsoleHub = meteredObject(ConsoleHubShell, "ConsoleHub");
export type ConsoleHub = ConsoleHubShell;
export const AccessEpoch = meteredObject(AccessEpochShell, "AccessEpoch");
export type AccessEpoch = AccessEpochShell;

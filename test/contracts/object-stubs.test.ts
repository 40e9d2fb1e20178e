/**
 * Every object's stub, as the platform derives it from the class (`DurableObjectStub`), answers its
 * contract without a cast, and answers it whole. The RPC type mapping turns a member it cannot
 * carry (an `unknown`, a function inside data) into `never`, and `never` is assignable to
 * anything, so "the stub is assignable to the contract" alone would pass over a method whose answer
 * was lost. Each verb is therefore also checked the other way round: the contract's answer must fit
 * the stub's, which fails as soon as any part of it became `never`. Checked by `npm run typecheck`
 * (tsc covers test/); at run time these are no-ops.
 */
import type { DurableObject } from "cloudflare:workers";
import { describe, expectTypeOf, it } from "vitest";
import type { AddressBucket } from "../../durable-objects/address-bucket";
import type { BucketDirectory } from "../../durable-objects/bucket-directory";
import type { ConnectorConnection } from "../../durable-objects/connector-connection";
import type { ConsoleHub } from "../../durable-objects/console-hub";
import type { IndexShard } from "../../durable-objects/index-shard";
import type { Interaction } from "../../durable-objects/interaction";
import type { InteractionHub } from "../../durable-objects/interaction-hub";
import type { MarketplaceLock } from "../../durable-objects/marketplace-lock";
import type { NotificationFeed } from "../../durable-objects/notification-feed";
import type { PersonDirectory } from "../../durable-objects/person-directory";
import type { Schedule } from "../../durable-objects/schedule";
import type { StateStore } from "../../durable-objects/state-store";
import type { ThreadObject } from "../../durable-objects/thread-object";
import type { ToolRun } from "../../durable-objects/tool-run";
import type { AddressBucketRpc, BucketDirectoryRpc } from "../../src/conversations/door/bucket-rpc";
import type { ConnectorConnectionRpc } from "../../src/connectors/rpc";
import type { ConsoleHubRpc } from "../../src/console/rpc";
import type { InteractionHubRpc, InteractionRpc } from "../../src/interactions/rpc";
import type { MarketplaceLockRpc } from "../../src/marketplace/rpc";
import type { NotificationFeedRpc } from "../../src/notifications/rpc";
import type { PersonDirectoryRpc } from "../../src/persons/rpc";
import type { ScheduleRpc } from "../../src/schedules/rpc";
import type { IndexShardRpc } from "../../src/shards/rpc";
import type { StateStoreRpc } from "../../src/states/rpc";
import type { ThreadRpc } from "../../src/conversations/model/thread-rpc";
import type { ToolRunRpc } from "../../src/tool-runs/rpc";
import type { JsonValue } from "../../src/platform/http/bounded-json";

type Answer<F> = F extends (...args: never[]) => infer R ? Awaited<R> : never;

/** What an object answer looks like on the stub's side: the platform makes it disposable. */
type AsReceived<T> = T extends object ? T & Disposable : T;

/** The contract's verbs whose answer, as received, does not fit the stub's answer for the same verb. */
type LostVerbs<Contract, Stub> = {
  [K in keyof Contract]: K extends keyof Stub ? ([AsReceived<Answer<Contract[K]>>] extends [Answer<Stub[K]>] ? never : K) : K;
}[keyof Contract];

/** An object whose answer holds an `unknown`: the mapping loses it, and the check must see that. */
declare class Lossy extends DurableObject<Env> {
  read(): Promise<{ value: unknown }>;
  count(): Promise<number>;
}
interface LossyRpc {
  read(): Promise<{ value: JsonValue }>;
  count(): Promise<number>;
}

describe("the check itself", () => {
  it("names a verb whose answer the mapping lost, though the stub is still assignable to the contract", () => {
    expectTypeOf<DurableObjectStub<Lossy>>().toExtend<LossyRpc>();
    expectTypeOf<LostVerbs<LossyRpc, DurableObjectStub<Lossy>>>().toEqualTypeOf<"read">();
  });
});

describe("each object's stub answers its contract whole", () => {
  it("ThreadObject", () => {
    expectTypeOf<DurableObjectStub<ThreadObject>>().toExtend<ThreadRpc>();
    expectTypeOf<LostVerbs<ThreadRpc, DurableObjectStub<ThreadObject>>>().toBeNever();
  });
  it("AddressBucket and BucketDirectory", () => {
    expectTypeOf<DurableObjectStub<AddressBucket>>().toExtend<AddressBucketRpc>();
    expectTypeOf<LostVerbs<AddressBucketRpc, DurableObjectStub<AddressBucket>>>().toBeNever();
    expectTypeOf<DurableObjectStub<BucketDirectory>>().toExtend<BucketDirectoryRpc>();
    expectTypeOf<LostVerbs<BucketDirectoryRpc, DurableObjectStub<BucketDirectory>>>().toBeNever();
  });
  it("IndexShard", () => {
    expectTypeOf<DurableObjectStub<IndexShard>>().toExtend<IndexShardRpc>();
    expectTypeOf<LostVerbs<IndexShardRpc, DurableObjectStub<IndexShard>>>().toBeNever();
  });
  it("PersonDirectory", () => {
    expectTypeOf<DurableObjectStub<PersonDirectory>>().toExtend<PersonDirectoryRpc>();
    expectTypeOf<LostVerbs<PersonDirectoryRpc, DurableObjectStub<PersonDirectory>>>().toBeNever();
  });
  it("StateStore", () => {
    expectTypeOf<DurableObjectStub<StateStore>>().toExtend<StateStoreRpc>();
    expectTypeOf<LostVerbs<StateStoreRpc, DurableObjectStub<StateStore>>>().toBeNever();
  });
  it("NotificationFeed", () => {
    expectTypeOf<DurableObjectStub<NotificationFeed>>().toExtend<NotificationFeedRpc>();
    expectTypeOf<LostVerbs<NotificationFeedRpc, DurableObjectStub<NotificationFeed>>>().toBeNever();
  });
  it("ConnectorConnection", () => {
    expectTypeOf<DurableObjectStub<ConnectorConnection>>().toExtend<ConnectorConnectionRpc>();
    expectTypeOf<LostVerbs<ConnectorConnectionRpc, DurableObjectStub<ConnectorConnection>>>().toBeNever();
  });
  it("MarketplaceLock", () => {
    expectTypeOf<DurableObjectStub<MarketplaceLock>>().toExtend<MarketplaceLockRpc>();
    expectTypeOf<LostVerbs<MarketplaceLockRpc, DurableObjectStub<MarketplaceLock>>>().toBeNever();
  });
  it("ToolRun", () => {
    expectTypeOf<DurableObjectStub<ToolRun>>().toExtend<ToolRunRpc>();
    expectTypeOf<LostVerbs<ToolRunRpc, DurableObjectStub<ToolRun>>>().toBeNever();
  });
  it("Schedule", () => {
    expectTypeOf<DurableObjectStub<Schedule>>().toExtend<ScheduleRpc>();
    expectTypeOf<LostVerbs<ScheduleRpc, DurableObjectStub<Schedule>>>().toBeNever();
  });
  it("Interaction and InteractionHub", () => {
    expectTypeOf<DurableObjectStub<Interaction>>().toExtend<InteractionRpc>();
    expectTypeOf<LostVerbs<InteractionRpc, DurableObjectStub<Interaction>>>().toBeNever();
    expectTypeOf<DurableObjectStub<InteractionHub>>().toExtend<InteractionHubRpc>();
    expectTypeOf<LostVerbs<InteractionHubRpc, DurableObjectStub<InteractionHub>>>().toBeNever();
  });
  it("ConsoleHub", () => {
    expectTypeOf<DurableObjectStub<ConsoleHub>>().toExtend<ConsoleHubRpc>();
    expectTypeOf<LostVerbs<ConsoleHubRpc, DurableObjectStub<ConsoleHub>>>().toBeNever();
  });
});

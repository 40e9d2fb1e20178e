/**
 * Interaction: one per `ask_user` question (docs/interactions.md). A shell over the interaction's
 * parts (src/interactions/compose.ts): the verbs of its contract (src/interactions/rpc.ts),
 * each one read-decide-write step on the row (src/interactions/object-store.ts), and the owed work
 * its one alarm does (the D1 listing row, the hub's events, the audience's ticket, the handoff, an
 * outside resume, the purge), retried after a failure. So the run that parks pays one object call,
 * and a restart loses nothing: whatever the row says is owed, the next alarm does.
 */
import { DurableObject } from "cloudflare:workers";
import type { AnswerInput, ClaimResult, CreateInteraction, InteractionChange, InteractionRpc } from "../src/interactions/rpc";
import type { Env } from "../src/platform/env";
import { startObject } from "../src/platform/persistence/object-start";
import type { JsonObject } from "../src/platform/http/bounded-json";
import { type InteractionParts, composeInteraction } from "../src/interactions/compose";
import { migrateInteraction } from "../src/interactions/object-store";
import type { AnsweredBy, InteractionState } from "../src/interactions/record";
import { edgeFetch } from "../src/platform/net/edge-fetch";
import { systemClock } from "../src/platform/clock";
import type { ParkedRun } from "../src/shared/parked-run";
import { threadStub } from "../src/conversations/model/thread-rpc";
import { toolRunStub } from "../src/tool-runs/rpc";

export class Interaction extends DurableObject<Env> implements InteractionRpc {
  /** The composed parts. An instance field, so not reachable over RPC; tests reach it in runInDurableObject. */
  readonly parts: InteractionParts;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    startObject(ctx, { migrate: (storage) => migrateInteraction(storage.sql) });
    this.parts = composeInteraction({
      storage: ctx.storage,
      env: () => this.env,
      clock: systemClock,
      fetch: edgeFetch,
      waiters: { thread: (id) => threadStub(this.env, id), toolRun: (id) => toolRunStub(this.env, id) },
    });
  }

  async create(req: CreateInteraction): Promise<InteractionState> {
    return this.parts.verbs.create(req);
  }

  async read(): Promise<InteractionState | null> {
    return this.parts.verbs.read();
  }

  async answer(input: AnswerInput, by: AnsweredBy): Promise<InteractionChange> {
    return this.parts.verbs.answer(input, by);
  }

  async cancel(by: string | null, reason: string | null): Promise<InteractionChange> {
    return this.parts.verbs.cancel(by, reason);
  }

  async ticketView(hash: string): Promise<InteractionState | null> {
    return this.parts.verbs.ticketView(hash);
  }

  async answerByTicket(hash: string, input: AnswerInput): Promise<InteractionChange> {
    return this.parts.verbs.answerByTicket(hash, input);
  }

  async claim(messageId: string, input: AnswerInput): Promise<ClaimResult> {
    return this.parts.verbs.claim(messageId, input);
  }

  async resumeInput(): Promise<{ parked: ParkedRun; result: JsonObject } | null> {
    return this.parts.verbs.resumeInput();
  }

  async discard(): Promise<void> {
    return this.parts.verbs.discard();
  }

  /** The one alarm: every piece of owed work, as of now. */
  override async alarm(): Promise<void> {
    await this.parts.alarm.run();
  }
}

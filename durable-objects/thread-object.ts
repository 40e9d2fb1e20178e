/**
 * ThreadObject: one Durable Object per thread id, the single writer of that thread.
 *
 * A shell over the thread's parts (src/conversations/thread/): intake with the inline waiters, the turn loop,
 * the delivery machine, the outbox towards the admin listings, the thread's control mode, and its reads and
 * forget, plus the kv provider's agent memory (src/conversations/thread/memory.ts). It runs
 * the schema migration before any request, exposes the RPC verbs of its contract
 * (src/conversations/model/thread-rpc.ts), and drives every timer from one alarm.
 */
import { DurableObject } from "cloudflare:workers";
import type { ModeStamp } from "../src/conversations/model/mode";
import type { Mode } from "../src/shared/kinds";
import type { AnswerRecord } from "../src/conversations/model/record";
import type { Route } from "../src/conversations/model/route";
import type {
  AcceptKey,
  AcceptRequest,
  AcceptResult,
  ForgetResult,
  ModeInForce,
  ResumeInteractionRequest,
  SearchScan,
  ThreadRpc,
  TranscriptPage,
  TranscriptQuery,
} from "../src/conversations/model/thread-rpc";
import type { Env } from "../src/platform/env";
import { systemClock } from "../src/platform/clock";
import { startObject } from "../src/platform/persistence/object-start";
import { edgeFetch } from "../src/platform/net/edge-fetch";
import type { CheckpointMessage } from "../src/shared/agent-memory";
import { type ThreadParts, alarmPass, composeThread } from "../src/conversations/thread/compose";
import { type ThreadDeps, threadEnv, threadSettings, warmThreadSettings } from "../src/conversations/thread/deps";
import { migrate } from "../src/conversations/thread/store";
import { turnPlugins } from "../src/conversations/thread/turn-plugins";
import type { RunTrace } from "../src/shared/run-trace";
import { dropTurnTraces, readTurnTrace } from "../src/conversations/thread/turn-trace";
import { forgetThread } from "../src/conversations/thread/forget";
import { webStream } from "../src/conversations/thread/web-visitor";
import { holdsNothing, vacate } from "../src/conversations/thread/vacancy";
import { parkedById } from "../src/conversations/thread/parked";
import type { WebAttachment, WebSessionCheck } from "../src/conversations/model/web";
import type { ProfileValue, Vouched } from "../src/shared/visitor-profile";
import type { LiveTurnView, StopAnswer } from "../src/conversations/model/live";
import { type InboxAction, type InboxActionResult, type InboxView, inboxView } from "../src/conversations/model/inbox";
import { countAll } from "../src/conversations/thread/store";
import type { NoteAddResult, NoteDeleteResult, StoredNote } from "../src/conversations/model/notes";
import { threadStub } from "../src/conversations/model/thread-rpc";
import type { RateResult, Rater } from "../src/conversations/model/thread-rpc";
import type { AnswerRating } from "../src/conversations/model/record";
import { rateFromPage } from "../src/conversations/thread/answer-feedback";

/** One thread's object: wires the parts over its storage and answers its contract's verbs. */
export class ThreadObject extends DurableObject<Env> implements ThreadRpc {
  private readonly deps: ThreadDeps;
  private readonly compose: () => ThreadParts;
  private live: ThreadParts;
  /** The object gave its storage back (src/conversations/thread/vacancy.ts): schema and parts are made again on the next use. */
  private vacated = false;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    // The isolate's settings overlay is loaded before the first request (a no-op once this isolate
    // holds it), so even the first object of a fresh isolate runs with the runtime settings.
    startObject(ctx, {
      migrate,
      load: async () => {
        await warmThreadSettings(env);
        // Read once per instance, so arming the alarm reads nothing.
        this.live.web.loadExpiry();
      },
    });
    // The env is read through a function: settings and bindings (with the runtime overlay's
    // CHANNEL_* values on top, docs/runtime-settings.md) follow the object's env.
    this.deps = {
      storage: ctx.storage,
      env: () => threadEnv(this.env),
      settings: () => threadSettings(this.env),
      clock: systemClock,
      fetch: edgeFetch,
      turn: turnPlugins,
    };
    this.compose = () =>
      composeThread(
        this.deps,
        { all: () => ctx.getWebSockets(), accept: (ws) => ctx.acceptWebSocket(ws) },
        {
          append: (home, role, text, part, messageId, expiresAt, stopped) =>
            threadStub(this.env, home).webAppend(role, text, part, messageId, expiresAt, stopped),
          expire: (home, messageId, expiresAt) => threadStub(this.env, home).webExpire(messageId, expiresAt),
        },
      );
    this.live = this.compose();
    // A page's keep-alive is answered by the runtime without waking the object.
    ctx.setWebSocketAutoResponse(new WebSocketRequestResponsePair("ping", "pong"));
  }

  /** The thread's parts; after the object vacated, its schema and fresh parts first. */
  private get parts(): ThreadParts {
    if (this.vacated) {
      this.vacated = false;
      migrate(this.ctx.storage);
      this.live = this.compose();
      this.live.web.loadExpiry();
    }
    return this.live;
  }

  /** The object's storage, with its schema (see `parts`). */
  private get storage(): DurableObjectStorage {
    void this.parts;
    return this.ctx.storage;
  }

  /** Gives the storage back when the object holds nothing (a refused or ended web session may leave it so). */
  private async vacateIfEmpty(): Promise<void> {
    if (this.vacated || !(await holdsNothing(this.ctx.storage))) return;
    await vacate(this.ctx.storage);
    this.vacated = true;
  }

  async accept(req: AcceptRequest): Promise<AcceptResult> {
    return this.parts.intake.accept(req);
  }

  async recallKey(key: AcceptKey): Promise<AcceptResult | null> {
    return this.parts.keys.check(key, this.deps.clock.now());
  }

  async exists(): Promise<boolean> {
    return this.parts.reads.exists();
  }

  async eventTarget(routeName: string): Promise<{ exists: boolean; address: string | null }> {
    return this.parts.reads.eventTarget(routeName);
  }

  async getRecord(messageId: string): Promise<AnswerRecord | null> {
    return this.parts.reads.getRecord(messageId);
  }

  async transcript(opts: TranscriptQuery): Promise<TranscriptPage> {
    return this.parts.reads.transcript(opts);
  }

  async search(opts: { q: string; budget: number }): Promise<SearchScan> {
    return this.parts.reads.search(opts);
  }

  async forget(): Promise<ForgetResult> {
    return forgetThread(this.deps, this.parts);
  }

  async webOpen(
    identity: string,
    secretHash: string,
    pendingTtlMs: number,
    params: Record<string, string> | null,
    keep?: number,
    vouched?: Vouched,
  ): Promise<void> {
    this.parts.web.open(identity, secretHash, pendingTtlMs, params, keep, vouched);
    await this.parts.alarm.arm();
  }

  async webAnswers(answers: Record<string, ProfileValue>): Promise<void> {
    this.parts.web.keepAnswers(answers);
  }

  async webCheck(identity: string, secretHash: string, ttlMs: number, params?: Record<string, string>): Promise<WebSessionCheck> {
    const check = this.parts.web.check(identity, secretHash, ttlMs, params);
    if (!check.ok) await this.vacateIfEmpty();
    return check;
  }

  async webNotify(text: string, part: unknown): Promise<number | null> {
    if (!this.parts.web.hasSession()) return null;
    const seq = this.parts.web.appendNotice(text, part);
    await this.parts.alarm.arm();
    return seq;
  }

  async webAppend(
    role: "visitor" | "bot" | "operator",
    text: string,
    part: unknown,
    messageId: string | null,
    expiresAt: number,
    stopped?: boolean,
  ): Promise<number> {
    const seq = this.parts.web.append(role, text, part, messageId, expiresAt, stopped === true);
    await this.parts.alarm.arm();
    return seq;
  }

  async webExpire(messageId: string, expiresAt: number): Promise<void> {
    await this.parts.web.expire(messageId, expiresAt);
  }

  async webForget(messageIds: string[]): Promise<number> {
    const removed = this.parts.web.forgetEntries(messageIds);
    await this.parts.web.reap();
    return removed;
  }

  async holdsParked(interactionId: string): Promise<boolean> {
    return parkedById(this.storage, interactionId) !== null;
  }

  async webTicket(ticketHash: string, ttlMs: number, sessionHash: string): Promise<void> {
    this.parts.web.keepTicket(ticketHash, ttlMs, sessionHash);
  }

  async webEnd(transcript: boolean, secretHash?: string): Promise<void> {
    if (secretHash === undefined) this.parts.web.end(transcript);
    else this.parts.web.endSession(secretHash);
    await this.parts.web.reap();
    await this.vacateIfEmpty();
  }

  async webAttachAdd(attachment: WebAttachment): Promise<boolean> {
    const added = this.parts.web.attachments?.add(attachment) ?? false;
    if (added) await this.parts.alarm.arm();
    return added;
  }

  async webAttachRemove(attachmentId: string): Promise<void> {
    this.parts.web.attachments?.remove(attachmentId);
  }

  async webAttachments(ids: string[]): Promise<WebAttachment[] | { missing: number }> {
    return this.parts.web.attachments?.read(ids) ?? { missing: 0 };
  }

  /** The web visitor's live stream (a WebSocket), reached only through the web channel's door. */
  override async fetch(request: Request): Promise<Response> {
    const res = await webStream(this.parts.web, request);
    if (res.status === 401) await this.vacateIfEmpty();
    return res;
  }

  override async webSocketMessage(ws: WebSocket, message: string | ArrayBuffer): Promise<void> {
    // Pages only listen; anything but the auto-answered ping is a protocol error.
    if (message !== "ping") ws.close(1003, "this stream only sends");
  }

  override async webSocketClose(ws: WebSocket, code: number, reason: string): Promise<void> {
    try {
      ws.close(code === 1005 || code === 1006 ? 1000 : code, reason);
    } catch {
      // Already closed.
    }
  }

  async liveTurn(): Promise<LiveTurnView> {
    return this.parts.live.view();
  }

  async stopTurn(messageId?: string | null): Promise<StopAnswer> {
    return { stopped: this.parts.live.stop(messageId) };
  }

  async webRate(messageId: string, rating: AnswerRating | null, who: { route_name: string; visitor: string }): Promise<RateResult> {
    return rateFromPage(this.deps, this.parts, messageId, rating, who);
  }

  async rateAnswer(messageId: string, rating: AnswerRating | null, who: Rater): Promise<RateResult> {
    return this.parts.feedback.rate(messageId, rating, who);
  }

  async applyReceipt(messageId: string, status: "delivered" | "failed", detail?: string): Promise<boolean> {
    return this.parts.delivery.applyReceipt(messageId, status, detail);
  }

  async getMode(stamp: ModeStamp, initialMode: Mode): Promise<ModeInForce> {
    return this.parts.mode.inForce(stamp, initialMode);
  }

  async setMode(threadId: string, stamp: ModeStamp, mode: Mode, actor?: { route_name: string; by: string | null }): Promise<void> {
    this.parts.identity.adopt(threadId);
    this.parts.mode.set(stamp, mode);
    await this.parts.inbox.modeChanged(mode, actor?.route_name ?? null, "operator", actor?.by ?? null);
    await this.parts.alarm.arm();
  }

  async inbox(): Promise<InboxView | null> {
    const threadId = this.parts.identity.get();
    if (!threadId || countAll(this.deps.storage) === 0) return null;
    return inboxView(threadId, this.parts.inbox.state());
  }

  async inboxAct(threadId: string, action: InboxAction): Promise<InboxActionResult> {
    // The inbox acts on a conversation that exists: a thread with no record has nobody to answer.
    if (countAll(this.deps.storage) === 0) return { ok: false, reason: "no_thread" };
    this.parts.identity.adopt(threadId);
    const r = await this.parts.inbox.act(action);
    if (r.ok && r.changed) await this.parts.alarm.arm();
    return r;
  }

  async notes(): Promise<StoredNote[] | null> {
    return this.parts.notes.live();
  }

  async noteAdd(routeName: string, by: string, text: string): Promise<NoteAddResult> {
    const r = this.parts.notes.add(routeName, by, text);
    // The note's expiry is one of the alarm's instants.
    if (r.ok) await this.parts.alarm.arm();
    return r;
  }

  async noteDelete(noteId: string, by: string, admin: boolean): Promise<NoteDeleteResult> {
    return this.parts.notes.remove(noteId, by, admin);
  }

  async checkpointRead(threadId: string): Promise<CheckpointMessage[]> {
    return this.parts.memory.read(threadId);
  }

  async checkpointAppend(threadId: string, messages: CheckpointMessage[], ttlMinutes: number | null): Promise<void> {
    await this.parts.memory.append(threadId, messages, ttlMinutes);
  }

  async checkpointDelete(threadId: string): Promise<void> {
    this.parts.memory.delete(threadId);
  }

  async runTrace(traceId: string): Promise<RunTrace | null> {
    return readTurnTrace(this.storage, traceId, this.deps.clock.now());
  }

  async dropRunTraces(traceIds: string[]): Promise<number> {
    return dropTurnTraces(this.storage, traceIds);
  }

  async resumeInteraction(req: ResumeInteractionRequest): Promise<{ accepted: boolean; retry?: boolean }> {
    return this.parts.interactions.resume(req);
  }

  /** The one alarm: expired web sessions, orphaned turns, queued turns, grace ends, due deliveries, expiry. */
  override async alarm(): Promise<void> {
    if ((await alarmPass(this.deps, this.parts)) === "vacated") this.vacated = true;
  }
}

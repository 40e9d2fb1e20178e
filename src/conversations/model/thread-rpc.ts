/**
 * The ThreadObject's RPC contract, declared once: the class implements `ThreadRpc`, and every
 * caller in src/ reaches the object through `threadStub`, typed by this interface. Nothing here
 * imports the class, so src/ never depends on durable-objects/.
 *
 * The stub is typed by the contract, so callers see the verbs as declared here. The generated stub
 * type (`DurableObjectStub<ThreadObject>`) agrees: the platform's RPC type mapping only passes
 * values it can prove structured-cloneable and maps an `unknown` to `never`, so the answer record's
 * free-form JSON fields (`inbound_form`, `inbound_event.payload`, `answer_part.schema`) and agent
 * memory's `tool_calls` are typed `JsonValue` (src/platform/http/bounded-json.ts), which keeps the methods
 * that answer them; test/conversations/thread-rpc.test.ts pins that under `npm run typecheck`.
 */
import type { KeyWithOwner } from "../../access-control/model";
import type { ModeStamp } from "./mode";
import type { Mode } from "../../shared/kinds";
import type { TurnInbound } from "./payload";
import type { AnswerRating, AnswerRecord, DeliveryStatus } from "./record";
import type { Route, TargetFacts } from "./route";
import type { Env } from "../../platform/env";
import type { CheckpointMessage } from "../../shared/agent-memory";
import type { RunTrace } from "../../shared/run-trace";
import type { WebAttachment, WebSessionCheck } from "./web";
import type { ProfileValue, Vouched } from "../../shared/visitor-profile";
import type { LiveTurnView, StopAnswer } from "./live";
import type { InboxAction, InboxActionResult, InboxView } from "./inbox";
import type { NoteAddResult, NoteDeleteResult, StoredNote } from "./notes";

/** What a door hands over. `preset` records (slow-down, shed, operator send) run no turn. */
export interface AcceptRequest {
  record: AnswerRecord;
  inbound: TurnInbound;
  /** Milliseconds the caller will wait for the answer inline (0: answer 202 at once). */
  waitMs: number;
  preset?: { status: DeliveryStatus; outcome: Pick<AnswerRecord, "answer_status" | "answer" | "error"> };
  /** The route as the door read it at `routeReadAtMs`; a turn that runs at once uses it instead of reading it again (src/conversations/thread/route-reads.ts). */
  route?: Route | null;
  /** The route's execution key and owner, read with the route (undefined: not read). */
  executionKey?: KeyWithOwner | null;
  routeReadAtMs?: number;
  /** With `route`: what the read learned about its target (undefined: not read). */
  target?: TargetFacts;
  /** The request's `Idempotency-Key`, scoped by its door (src/conversations/thread/idempotency-keys.ts). */
  idempotency?: AcceptKey;
  /** An operator's send: who sends, and whether they override another operator's claim (docs/inbox.md). */
  operator?: { by: string; force: boolean };
}

/** An `Idempotency-Key` as a door hands it to the thread. */
export interface AcceptKey {
  /** `<door>:<route>:<caller's thread principal>`: whose keys, on which door. */
  scope: string;
  key: string;
  /** The request's fingerprint (src/platform/http/idempotency.ts). */
  fingerprint: string;
  /** The end of the key's window (epoch ms); the record's retention may end it sooner. */
  expiresAtMs: number;
}

/**
 * `accept`'s answer: refused (queue full), accepted (answer later), or answered inline. With an
 * `idempotency` key: `replayed` when the key's first request answered it, or refused (the key
 * names another request; its first request is still being answered).
 */
export type AcceptResult =
  | { kind: "queue_full" }
  | { kind: "accepted"; message_id: string; thread_id: string; duplicate: boolean; replayed?: boolean }
  | { kind: "answered"; record: AnswerRecord; replayed?: boolean }
  | { kind: "key_reused" }
  | { kind: "key_in_flight" }
  /** An operator send refused: another operator holds the thread (nothing written). */
  | { kind: "claimed"; assignee: string };

/** A transcript request: a page of live records, optionally filtered by a substring `q`. */
export interface TranscriptQuery {
  order: "asc" | "desc";
  offset: number;
  limit: number;
  q?: string;
  /** Most records a `q` search scans (default 1000). */
  scanBudget?: number;
}

/** A page of one thread's live records. */
export interface TranscriptPage {
  items: AnswerRecord[];
  total: number;
  /** A `q` search ran out of scan budget before the end of the thread. */
  truncated: boolean;
}

/** One thread's share of a route-wide search. */
export interface SearchScan {
  matches: Array<{ pos: number; record: AnswerRecord }>;
  scanned: number;
  /** More live records remain past the budget. */
  more: boolean;
}

/** `forget`'s answer: what was removed, or why nothing was. */
export type ForgetResult = { ok: true; removed: number } | { ok: false; reason: "turn_in_flight" };

/**
 * An interaction a turn of this thread parked on ended by other means than the participant's next
 * inbound (an answer at the door or by ticket, a cancel, its expiry): the thread queues a
 * resume turn whose record (`message_id`, minted by the interaction) carries the resumed reply.
 */
export interface ResumeInteractionRequest {
  interaction_id: string;
  message_id: string;
  outcome: "answered" | "cancelled" | "expired";
  /** The user_id that answered or cancelled it (null: its expiry, or a ticket). */
  by: string | null;
}

/** Who rates an answer: the conversation its record must belong to (channel, client address, route). */
export interface Rater {
  channel: string;
  address: string;
  route_name: string;
}

/** What a rating answers: the rating now in force, or that no answer of the rater's could be rated. */
export type RateResult = { ok: true; rating: AnswerRating | null } | { ok: false };

/** The control mode in force on a thread and where it comes from. */
export interface ModeInForce {
  mode: Mode;
  source: "thread" | "route";
}

/** The verbs of one thread's object. Always await them: each is one RPC. */
export interface ThreadRpc {
  /**
   * Durably accepts one inbound. Answers `queue_full` (nothing written) past the queue depth; a
   * repeated message_id returns the original. With `waitMs`, waits for the answer and reports it
   * inline when it settles in time; the record is then delivered inline and never called back.
   */
  accept(req: AcceptRequest): Promise<AcceptResult>;
  /**
   * What `accept` would answer a request carrying `key` before storing anything: null for a key
   * new here, else the first request's answer or a refusal. For a door with work to do before
   * its accept that a retry must not repeat (operator send's agent-memory append).
   */
  recallKey(key: AcceptKey): Promise<AcceptResult | null>;
  /** Does the thread hold any record, expired or not? (The event door never creates a thread.) */
  exists(): Promise<boolean>;
  /**
   * The event door's look at a linked person's thread, in one call: whether it holds any record
   * (as `exists`), and the client address of its newest live record on route `routeName` that has
   * one (a participant's message or an operator's answer; null when none has): where an event's
   * answer on that route goes.
   */
  eventTarget(routeName: string): Promise<{ exists: boolean; address: string | null }>;
  /** One live record (expired reads as absent). */
  getRecord(messageId: string): Promise<AnswerRecord | null>;
  /**
   * A page of live records. With `q`, a case-insensitive substring over inbound text and answer,
   * scanning at most `scanBudget` records; `truncated` says the budget ran out first.
   */
  transcript(opts: TranscriptQuery): Promise<TranscriptPage>;
  /** Scans at most `budget` live records newest first; each match carries its scan position. */
  search(opts: { q: string; budget: number }): Promise<SearchScan>;
  /** Forgets the thread: records, mode override and kv agent memory. Refused while a turn is queued or running. */
  forget(): Promise<ForgetResult>;
  /**
   * Web channel: starts a visitor's session on this thread, pending for `pendingTtlMs` until its
   * credential comes back, with the link parameters captured at page load. `keep` (default 1)
   * is how many sessions the thread keeps: 1 replaces any other (an anonymous visitor); more keep
   * a verified user's devices side by side, the least recently used ending past it. `vouched` (a
   * verified visitor's token claims) replaces the claims the visitor's profile keeps.
   */
  webOpen(identity: string, secretHash: string, pendingTtlMs: number, params: Record<string, string> | null, keep?: number, vouched?: Vouched): Promise<void>;
  /** Web channel: keeps the visitor's pre-chat answers, checked by the door (docs/channels.md, "Pre-chat form"). */
  webAnswers(answers: Record<string, ProfileValue>): Promise<void>;
  /**
   * Web channel: checks a presented credential (identity and secret hash) and refreshes the session
   * for `ttlMs`; `params`, when given and not empty, replace the captured link parameters.
   */
  webCheck(identity: string, secretHash: string, ttlMs: number, params?: Record<string, string>): Promise<WebSessionCheck>;
  /**
   * Web channel: a notification for the visitor, appended to their transcript (and pushed to open
   * pages); null when this thread holds no live web session (no such visitor).
   */
  webNotify(text: string, part: unknown): Promise<number | null>;
  /**
   * Web channel: an entry of a record kept on a linked person's thread, shown in this visitor's
   * transcript until `expiresAt` (epoch ms; the record's thread moves it with `webExpire`).
   */
  webAppend(role: "visitor" | "bot" | "operator", text: string, part: unknown, messageId: string | null, expiresAt: number, stopped?: boolean): Promise<number>;
  /** Web channel: record `messageId` (kept on a linked person's thread) reached its retention: its entries here expire at `expiresAt`. */
  webExpire(messageId: string, expiresAt: number): Promise<void>;
  /**
   * Web channel: records `messageIds` (kept on a linked person's thread) were forgotten: their
   * entries here go and the visitor's session ends (its open streams are told and closed).
   */
  webForget(messageIds: string[]): Promise<number>;
  /** Web channel: does a turn of this thread wait on this interaction (a question the visitor may answer)? */
  holdsParked(interactionId: string): Promise<boolean>;
  /** Web channel: keeps a one-time stream ticket's hash for `ttlMs`, good for session `sessionHash` (the widget's socket). */
  webTicket(ticketHash: string, ttlMs: number, sessionHash: string): Promise<void>;
  /**
   * Web channel: ends the visitor's sessions (a rotation), and with `transcript` its page transcript
   * too (the person's erasure); their open streams are told and closed. With `secretHash`, only
   * that one session (one device's) ends, and `transcript` is not read.
   */
  webEnd(transcript: boolean, secretHash?: string): Promise<void>;
  /**
   * Web channel: records a visitor's upload (its bytes are already in the bucket), unsent until a
   * message carries it; false when the visitor already holds the most unsent uploads allowed.
   */
  webAttachAdd(attachment: WebAttachment): Promise<boolean>;
  /** Web channel: forgets an upload whose bytes could not be stored. */
  webAttachRemove(attachmentId: string): Promise<void>;
  /**
   * Web channel: the live uploads of this visitor that `ids` name, in order, or the index of the
   * first one this thread does not hold (another visitor's, expired, forgotten).
   */
  webAttachments(ids: string[]): Promise<WebAttachment[] | { missing: number }>;
  /**
   * The thread's live turn (in memory, never stored; docs/web-channel-client.md "Live turns"): the
   * running turn with its draft, else the oldest queued one, else the last that ended.
   */
  liveTurn(): Promise<LiveTurnView>;
  /**
   * A stop door: stops the running turn (only the one `messageId` names, when given); its answer
   * becomes the draft so far. `stopped: false` when no turn runs (or another one does).
   */
  stopTurn(messageId?: string | null): Promise<StopAnswer>;
  /**
   * Web channel: the visitor of this thread rates (or with null clears) an answer entry of their own
   * transcript (docs/inbox.md, "Answer feedback"). `ok: false` when the transcript holds no live
   * answer entry of `messageId`, or its record cannot be rated by this visitor; the page's copy is
   * set only once the record's rating is.
   */
  webRate(messageId: string, rating: AnswerRating | null, who: { route_name: string; visitor: string }): Promise<RateResult>;
  /**
   * Rates (or with null clears) the answer of record `messageId` held here, for `who`: only a live,
   * answered record of that very conversation; `ok: false` (nothing changed) otherwise.
   */
  rateAnswer(messageId: string, rating: AnswerRating | null, who: Rater): Promise<RateResult>;
  /** A provider receipt for one of this thread's outbound chunks; false when the record is not awaiting one. */
  applyReceipt(messageId: string, status: "delivered" | "failed", detail?: string): Promise<boolean>;
  /**
   * `GET …/thread/mode`: the mode in force: the override live under `stamp` (a route incarnation,
   * or null on a person thread), else `initialMode` (the route's, or the person thread's default).
   */
  getMode(stamp: ModeStamp, initialMode: Mode): Promise<ModeInForce>;
  /**
   * `PUT …/thread/mode` and operator tooling: sets the override under `stamp` for a retention
   * window. The inbox follows in the same call: to manual, the thread opens and waits for a human
   * (`actor`: the route and operator that switched it); to agent, it is pending.
   */
  setMode(threadId: string, stamp: ModeStamp, mode: Mode, actor?: { route_name: string; by: string | null }): Promise<void>;
  /** The thread's inbox state (docs/inbox.md); null when the thread holds no record. */
  inbox(): Promise<InboxView | null>;
  /** An operator's inbox action (claim, release, transfer, resolve, snooze, reopen, labels), decided in one step. */
  inboxAct(threadId: string, action: InboxAction): Promise<InboxActionResult>;
  /** The thread's live private notes, oldest first (docs/inbox.md, "Private notes"); null when the thread holds no record. */
  notes(): Promise<StoredNote[] | null>;
  /** Writes a private note by `by` through route `routeName`'s door; refused on a thread with no record, or one holding the most notes it may. */
  noteAdd(routeName: string, by: string, text: string): Promise<NoteAddResult>;
  /** Deletes a live private note: its author may, or an admin (`admin`). */
  noteDelete(noteId: string, by: string, admin: boolean): Promise<NoteDeleteResult>;
  /** kv checkpoint provider: this thread's agent memory, oldest first (expired reads as []). */
  checkpointRead(threadId: string): Promise<CheckpointMessage[]>;
  /** kv checkpoint provider: append and refresh the idle TTL (the caller's setting, minutes). */
  checkpointAppend(threadId: string, messages: CheckpointMessage[], ttlMinutes: number | null): Promise<void>;
  /** kv checkpoint provider: forget this thread's agent memory. */
  checkpointDelete(threadId: string): Promise<void>;
  /** A turn's run trace with its record's input and output; null once the record is gone or expired. */
  runTrace(traceId: string): Promise<RunTrace | null>;
  /** Person erase: drops these turns' run traces (their records stay); answers how many were held. */
  dropRunTraces(traceIds: string[]): Promise<number>;
  /**
   * Queues the resume turn of an interaction a turn of this thread parked on. Idempotent
   * by `message_id`. `accepted: false`: the thread holds no such parked run (forgotten, never
   * settled, or already answered by its participant), and nothing was queued; `retry: true`: the
   * queue is full, ask again later.
   */
  resumeInteraction(req: ResumeInteractionRequest): Promise<{ accepted: boolean; retry?: boolean }>;
}

/** The object of thread `threadId` (one per thread id), called through its contract. */
export function threadStub(env: Env, threadId: string): ThreadRpc {
  return env.THREADS.get(env.THREADS.idFromName(threadId));
}

/** The thread object's fetch: only the web visitor's stream (a WebSocket) goes through it. */
export function threadStreamStub(env: Env, threadId: string): { fetch(request: Request): Promise<Response> } {
  return env.THREADS.get(env.THREADS.idFromName(threadId));
}

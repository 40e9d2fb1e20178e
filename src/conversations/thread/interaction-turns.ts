/**
 * Resume turns (docs/interactions.md "Inside a thread"): an interaction a turn of this
 * thread parked on ended by a door answer, a ticket, a cancel or its expiry, and comes back here.
 * The thread queues it like any inbound, behind earlier turns, as a record of its own:
 *
 *   origin "client", inbound_kind "event", inbound_text "",
 *   inbound_event {id: <interaction_id>, kind: "interaction.answered" | "interaction.cancelled" |
 *                  "interaction.expired", payload: {interaction_id, outcome}},
 *   submitted_by: the answering or cancelling user_id (null: an expiry or a ticket)
 *
 * with the asking record's route, door, channel, identity and address, so its answer (the resumed
 * run's reply) is delivered like any answer of the thread. Its turn input has source `interaction`.
 */
import type { TurnInbound } from "../model/payload";
import type { AnswerRecord } from "../model/record";
import type { ResumeInteractionRequest } from "../model/thread-rpc";
import type { ThreadDeps } from "./deps";
import type { ThreadIdentity } from "./identity";
import type { Intake } from "./intake";
import { type ParkedNote, RESUME_SOURCE, dropParked, parkedById } from "./parked";
import { getStored } from "./store";

/** The resume record and its turn input (pure). */
export function mintResume(note: ParkedNote, threadId: string, req: ResumeInteractionRequest, nowMs: number): { record: AnswerRecord; inbound: TurnInbound } {
  const r = note.route;
  const event = { id: req.interaction_id, kind: `interaction.${req.outcome}`, payload: { interaction_id: req.interaction_id, outcome: req.outcome } };
  const at = new Date(nowMs).toISOString();
  const record: AnswerRecord = {
    message_id: req.message_id,
    route_name: r.route_name,
    door: r.door,
    thread_id: threadId,
    client_address: r.client_address,
    channel: r.channel,
    our_identity: r.our_identity,
    provider_message_id: null,
    callback_url: r.callback_url,
    caller_principal: r.caller_principal,
    origin: "client",
    inbound_kind: "event",
    inbound_text: "",
    inbound_form: null,
    inbound_attachments: null,
    inbound_location: null,
    inbound_event: event,
    submitted_by: req.by,
    status: "accepted",
    answer_status: null,
    answer: null,
    error: null,
    attempts: 0,
    outbound_message_ids: [],
    created_at: at,
    updated_at: at,
    expires_at: null,
  };
  const inbound: TurnInbound = {
    message_id: req.message_id,
    thread_id: threadId,
    kind: "event",
    inbound_id: req.interaction_id,
    source: RESUME_SOURCE,
    text: null,
    sender: null,
    our_identity: r.our_identity,
    channel: r.channel,
    event,
  };
  return { record, inbound };
}

/** The thread's side of a handoff: queues the resume turn of an interaction it parked on. */
export class ThreadInteractions {
  constructor(
    private readonly deps: Pick<ThreadDeps, "storage" | "clock">,
    private readonly parts: { identity: ThreadIdentity; intake: Intake },
  ) {}

  /** See ThreadRpc.resumeInteraction. */
  async resume(req: ResumeInteractionRequest): Promise<{ accepted: boolean; retry?: boolean }> {
    const { storage } = this.deps;
    // A retried handoff finds its record already queued (or run).
    if (getStored(storage, req.message_id)) return { accepted: true };
    const note = parkedById(storage, req.interaction_id);
    const threadId = this.parts.identity.get();
    if (!note || !threadId) return { accepted: false };
    const { record, inbound } = mintResume(note, threadId, req, this.deps.clock.now());
    const r = await this.parts.intake.accept({ record, inbound, waitMs: 0 });
    if (r.kind === "queue_full") return { accepted: false, retry: true };
    dropParked(storage, req.interaction_id);
    return { accepted: true };
  }
}

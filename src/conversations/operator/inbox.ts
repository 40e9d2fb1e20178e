/**
 * The inbox's operator logic (docs/inbox.md): one thread's inbox state and the actions on it, each
 * decided by the thread's object in one step, and the refusals as the doors answer them.
 */
import { z } from "zod";
import { HttpError, badRequest, forbidden } from "../../platform/http/errors";
import { type Principal, principalConditionsAllow, principalReadsThread } from "../../access-control/principal";
import { intactIdentifier } from "../../platform/http/identifiers";
import type { Env } from "../../platform/env";
import { type InboxAction, type InboxActionResult, type InboxView, Label, MAX_LABELS, inboxView } from "../model/inbox";
import { threadStub } from "../model/thread-rpc";
import { claimedBy } from "./operator-send";

const threadIdField = intactIdentifier(z.string().max(2048));
const userIdField = intactIdentifier(z.string().min(1).max(256));

export const inboxThreadBody = z.object({ thread_id: threadIdField }).strict();
/** `notify`: the closing message and the satisfaction question go to the customer (docs/inbox.md). */
export const resolveBody = z.object({ thread_id: threadIdField, notify: z.boolean().optional() }).strict();
export const claimBody = z
  .object({
    thread_id: threadIdField,
    /** Take the thread from the operator who holds it (recorded as an `assigned` event naming the previous one). */
    force: z.boolean().optional(),
  })
  .strict();
export const transferBody = z.object({ thread_id: threadIdField, to: userIdField, force: z.boolean().optional() }).strict();
/** Until an instant (ISO-8601) or for a number of seconds: exactly one. */
export const snoozeBody = z
  .object({
    thread_id: threadIdField,
    until: z.iso.datetime({ offset: true }).optional(),
    seconds: z
      .number()
      .int()
      .min(60)
      .max(90 * 86_400)
      .optional(),
  })
  .strict()
  .refine((b) => (b.until === undefined) !== (b.seconds === undefined), { message: "exactly one of until or seconds must be set", path: ["until"] });
export const labelsBody = z
  .object({
    thread_id: threadIdField,
    add: z.array(Label).max(MAX_LABELS).default([]),
    remove: z.array(Label).max(MAX_LABELS).default([]),
  })
  .strict();

/**
 * Refuses (the generic 403) a caller whose key condition reads `.thread` and does not let this
 * thread through: a "mine only" key acts on its own threads and the unowned ones its condition
 * names, nothing else (docs/inbox.md, "Mine only"). Keys whose conditions never read `.thread` pay
 * nothing.
 */
export async function assertThreadAllowed(env: Env, principal: Principal, routeName: string, threadId: string, view?: InboxView): Promise<void> {
  if (!principalReadsThread(principal)) return;
  const v = view ?? (await threadStub(env, threadId).inbox());
  const thread = {
    route_name: routeName,
    thread_id: threadId,
    assignee: v?.assignee ?? null,
    status: v?.status ?? "pending",
    labels: v?.labels ?? [],
    waiting: v?.waiting_since != null,
  };
  if (!(await principalConditionsAllow(principal, new Date(), undefined, undefined, thread))) throw forbidden();
}

/** The thread's inbox state, or 404 when the thread holds no record. */
export async function readInbox(env: Env, threadId: string): Promise<InboxView> {
  const view = await threadStub(env, threadId).inbox();
  if (!view) throw new HttpError(404, "thread not found");
  return view;
}

/** Runs `action` in the thread's object and answers its new state, or the refusal as an HTTP error. */
export async function actOnInbox(env: Env, threadId: string, action: InboxAction): Promise<InboxView> {
  const r = await threadStub(env, threadId).inboxAct(threadId, action);
  return viewOrRefusal(threadId, r);
}

function viewOrRefusal(threadId: string, r: InboxActionResult): InboxView {
  if (r.ok) return inboxView(threadId, r.state);
  switch (r.reason) {
    case "claimed":
      throw claimedBy();
    case "not_assignee":
      throw new HttpError(409, "the thread is held by another operator, not by the caller; send force: true to act anyway", "not_assignee");
    case "no_thread":
      throw new HttpError(404, "thread not found");
    case "too_many_labels":
      throw badRequest(`invalid body: add: a thread carries at most ${MAX_LABELS} labels`);
    case "snooze_in_past":
      throw badRequest("invalid body: until: must be in the future");
  }
}

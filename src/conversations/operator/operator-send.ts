/**
 * Operator send (spec §3.1 "operator send", §4.7; decisions §10): a message an operator writes by
 * hand, minted as a record already answered (`origin: "operator"`) and handed to the thread's
 * delivery machine like any answer: chunking, capability-gated rich part, receipts, callback.
 * No turn runs; the mode is neither required nor changed, and the override's TTL is refreshed by
 * the thread object when it indexes the record.
 */
import { handOver } from "../door/admission";
import { mintArrival } from "../door/arrival";
import { maxCharsFor } from "../../channels/chunking";
import type { AnswerRecord } from "../model/record";
import { routeWithKey } from "../route-cache";
import type { Route } from "../model/route";
import { type AcceptResult, threadStub } from "../door/stubs";
import type { AcceptKey } from "../model/thread-rpc";
import { keyInFlight, keyReused } from "../../platform/http/idempotency";
import type { PersonView } from "../../persons/rpc";
import { adapterFor } from "../../channels/registry";
import { planOutbound } from "../../channels/rich/outbound";
import { type RichPart, richPartOf } from "../../channels/rich/types";
import type { Env } from "../../platform/env";
import { HttpError, badRequest, describeFailure, serverError } from "../../platform/http/errors";
import type { Settings } from "../../platform/settings/settings";
import { agentKeepsMemory, appendAgentMemory } from "../../targets/agents/run";
import { createTargetContext } from "../../targets/context";
import type { OperatorSendBody } from "./schemas";
import { guardThreadOnRoute, threadAddress } from "./thread-guard";
import { must } from "../../platform/must";

/**
 * Refusals that need the route's channel, decided before anything is written: a text needing more
 * than `max_outbound_chunks` messages, or a part whose shape the channel cannot express (its form
 * subset, say). A missing capability is not refused here: per spec the record fails loudly at
 * delivery, where the channel's capabilities are read.
 */
function precheckChannel(settings: Settings, route: Route, text: string, part: RichPart | null): void {
  const adapter = route.channel ? adapterFor(route.channel) : undefined;
  if (!adapter) return;
  let max: number;
  try {
    max = maxCharsFor(adapter.name, settings.conversations);
  } catch {
    return; // a loud config error at send (spec §7), recorded on the record
  }
  const plan = planOutbound(adapter, text, part, max, settings.conversations.maxOutboundChunks);
  if (plan.ok && plan.tooLong)
    throw badRequest(
      `invalid body: text: needs more than max_outbound_chunks (${settings.conversations.maxOutboundChunks}) messages on channel ${adapter.name}`,
    );
  if (!plan.ok && plan.kind === "shape") throw badRequest(`invalid body: ${plan.error}`);
}

/** Where an operator message goes: the route it is sent from (as read, and when) and the participant's address on it. */
interface SendTarget {
  route: Route;
  readAtMs: number;
  address: string;
}

/**
 * A route thread's target: the path route and the address its id names; an explicit `address`
 * must be that one (a route thread has exactly one).
 */
function routeThreadTarget(read: { route: Route; readAtMs: number }, rest: string, explicit: string | undefined): SendTarget {
  const address = threadAddress(read.route.door, rest);
  if (explicit !== undefined && explicit !== address) throw badRequest("invalid body: address: is not this thread's address");
  return { ...read, address };
}

/**
 * A linked person's thread (spec §4.7; bridge-facts §5.4): an explicit `address` must be one of the
 * person's and is sent through the path route when it came in there, else through its first
 * route that still exists (lexically smallest); without one, the route and address of the
 * newest record (a participant's message or an operator's answer). A thread with no message yet needs an address.
 */
async function personThreadTarget(
  env: Env,
  read: { route: Route; readAtMs: number },
  threadId: string,
  person: PersonView,
  explicit: string | undefined,
): Promise<SendTarget> {
  if (explicit !== undefined) {
    const rows = person.addresses.filter((a) => a.address === explicit);
    if (rows.length === 0) throw badRequest("invalid body: address: is not one of this person's addresses");
    const here = rows.find((a) => a.routes.includes(read.route.route_name));
    if (here) return { ...read, address: threadAddress(here.door, here.address) };
    for (const name of [...new Set(rows.flatMap((a) => a.routes))].sort()) {
      const readAtMs = Date.now();
      const { route } = await routeWithKey(env, name);
      const row = must(
        rows.find((a) => a.routes.includes(name)),
        "the address row naming this route",
      );
      if (route && route.door === row.door) return { route, readAtMs, address: threadAddress(row.door, row.address) };
    }
    throw new HttpError(404, "no route this address came in on still exists");
  }
  const newest = await newestMessage(env, threadId);
  if (!newest?.client_address) throw badRequest("invalid body: address: is required on a person thread with no message yet");
  if (newest.route_name === read.route.route_name) return { ...read, address: newest.client_address };
  const readAtMs = Date.now();
  const { route } = await routeWithKey(env, newest.route_name);
  if (!route) throw new HttpError(404, "the route of the thread's newest message no longer exists; name an address");
  return { route, readAtMs, address: newest.client_address };
}

/** The thread's newest record with an address (a participant's message or an operator's answer): where the conversation is. Also the customer a canned response is rendered for (src/inbox/canned-render.ts). */
export async function newestMessage(env: Env, threadId: string): Promise<AnswerRecord | null> {
  const page = await threadStub(env, threadId).transcript({ order: "desc", offset: 0, limit: 50 });
  return page.items.find((r) => r.client_address !== null) ?? null;
}

/**
 * Sends one operator message into a thread of `read.route` (read by the door at `read.readAtMs`) as
 * `operator`. Every refusal (the thread guard's, a foreign address, rich fields the route cannot
 * carry, a failed memory append) comes before the record is written; answers where the record
 * lives. On a person thread the record is written through the route the message goes out on.
 */
export async function sendOperatorMessage(
  env: Env,
  settings: Settings,
  read: { route: Route; readAtMs: number },
  operator: string,
  body: OperatorSendBody,
  key?: AcceptKey,
): Promise<{ message_id: string; thread_id: string; replayed?: true }> {
  const guarded = await guardThreadOnRoute(env, read.route.route_name, body.thread_id, read.route);
  const threadId = guarded.thread_id;
  // A retry with the key of a send already made answers that send, before the agent's memory is
  // appended to again; the accept below checks the key once more, for a retry racing this one.
  if (key) {
    const seen = await threadStub(env, threadId).recallKey(key);
    if (seen) return sentOrRefused(seen);
  }
  const target = guarded.person
    ? await personThreadTarget(env, read, threadId, guarded.person, body.address)
    : routeThreadTarget(read, guarded.rest, body.address);
  const { route, address } = target;
  const part = richPartOf(body);
  if (route.door === "api" && part) {
    throw badRequest(
      "invalid body: rich fields (media, location, template, options, sections, header, footer, schema) need a channel route; an api route's callback carries text only",
    );
  }
  if (route.door === "channel") precheckChannel(settings, route, body.text, part);

  // The agent remembers what the operator said before the record exists, so a later turn sees it.
  if (route.target_kind === "agent" && body.text.trim() !== "") {
    const ctx = createTargetContext(env, settings);
    if (await agentKeepsMemory(ctx, route.target_name)) {
      try {
        await appendAgentMemory(ctx, route.target_name, threadId, { role: "assistant", content: body.text });
      } catch (err) {
        throw serverError("agent_memory_unavailable", "appending the message to the agent's memory failed; nothing was sent, retry later", {
          reason: `operator send: the agent memory append failed: ${describeFailure(err)}`,
          retryAfterSeconds: 1,
        });
      }
    }
  }

  const messageId = crypto.randomUUID();
  const arrival = mintArrival(route, { message_id: messageId, thread_id: threadId }, { way: "operator", operator, address, text: body.text, part });
  // A poll-only api route has nothing to deliver to: the stored answer is its delivery.
  const status = route.door === "api" && !route.callback_url ? "delivered" : "pending_delivery";
  // No rate token and no queue check: an operator answers, it does not start a turn (the preset skips the queue).
  // The door's route read serves the first delivery attempt (src/conversations/thread/route-reads.ts, rule 3).
  const result = await handOver(env, arrival, {
    waitMs: 0,
    preset: { status, outcome: { answer_status: "answered", answer: body.text, error: null } },
    route,
    routeReadAtMs: target.readAtMs,
    idempotency: key,
    operator: { by: operator, force: body.force === true },
  });
  if (key || result.kind === "claimed") return sentOrRefused(result);
  return { message_id: messageId, thread_id: threadId };
}

/**
 * 409: another operator holds the thread (docs/inbox.md); `force: true` sends anyway, and the send
 * is recorded as forced. The holder is not named here: an assignee is whatever user_id a transfer
 * named, and a refusal never echoes stored input; the thread's inbox door says who holds it.
 */
export function claimedBy(): HttpError {
  return new HttpError(
    409,
    "the thread is claimed by another operator; read its inbox state to see who, or send with force: true to answer anyway",
    "thread_claimed",
  );
}

/** A keyed send's answer: the send the key names (`replayed` when an earlier request made it), or the key's refusal. */
function sentOrRefused(result: AcceptResult): { message_id: string; thread_id: string; replayed?: true } {
  if (result.kind === "key_reused") throw keyReused();
  if (result.kind === "key_in_flight") throw keyInFlight();
  if (result.kind === "claimed") throw claimedBy();
  if (result.kind === "queue_full") {
    throw serverError("queue_full", "thread queue is full; retry later", {
      reason: "the thread already holds CONVERSATIONS_THREAD_QUEUE_DEPTH queued turns",
      retryAfterSeconds: 1,
    });
  }
  const sent = result.kind === "answered" ? { message_id: result.record.message_id, thread_id: result.record.thread_id } : result;
  return { message_id: sent.message_id, thread_id: sent.thread_id, ...(result.replayed ? { replayed: true as const } : {}) };
}

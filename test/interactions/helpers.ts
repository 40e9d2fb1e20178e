/** Helpers for the interactions tests: routes that ask, reading the listing and the objects. */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { InteractionRpc } from "../../src/interactions/rpc";
import type { InteractionParts } from "../../src/interactions/compose";
import { createRoute } from "../helpers/bridge";
import { admin, call, mintKey } from "../helpers/http";
import { eventually } from "../helpers/threads";

/** The reply_expr of an ask route: says what the ask came back with. */
export const ASK_REPLY_EXPR =
  'if .outcome == "answered" then "You chose: " + (.answer.option.text // .answer.text // "a form") elif .outcome == "cancelled" then "cancelled" + (if .reason then ": " + .reason else "" end) else "no answer in time" end';

/** An api route whose tool target is ask_user: the inbound text is the question, with two options (and an audience when given). */
export async function askRoute(opts: { audience?: string; options?: boolean; extra?: Record<string, unknown> } = {}) {
  const k = await mintKey({ scopes: ["tool:ask_user"] });
  const options = opts.options === false ? "" : ', options: [{text: "Yes", id: "yes"}, {text: "No", id: "no"}]';
  const audience = opts.audience ? `, audience: ${JSON.stringify(opts.audience)}` : "";
  const route = await createRoute({
    door: "api",
    target_kind: "tool",
    target_name: "ask_user",
    execution_key: k.user_id,
    payload_expr: `{question: .message${options}${audience}}`,
    reply_expr: ASK_REPLY_EXPR,
    ...(opts.extra ?? {}),
  });
  return { ...route, key: k };
}

/** The interaction's object, through its contract (its verbs) and as a stub (runInDurableObject). */
export function interactionObject(id: string): InteractionRpc & DurableObjectStub {
  return env.INTERACTIONS.get(env.INTERACTIONS.idFromName(id)) as unknown as InteractionRpc & DurableObjectStub;
}

/** The pending interactions of a thread, as an admin lists them (waits for the listing to catch up). */
export async function pendingOf(threadId: string, want = 1): Promise<any[]> {
  const key = await admin();
  const r = await eventually(
    () => call("GET", `/api/interactions/pending?thread_id=${encodeURIComponent(threadId)}`, { key }),
    (x) => x.status === 200 && x.body.data.items.length >= want,
  );
  return r.body.data.items;
}

/** The interaction's listing row status, once it says `status`. */
export async function listedAs(id: string, status: string): Promise<any> {
  const key = await admin();
  const r = await eventually(
    () => call("GET", `/api/interactions?status=${status}&pageSize=200`, { key }),
    (x) => x.status === 200 && x.body.data.items.some((i: any) => i.interaction_id === id),
  );
  return r.body.data.items.find((i: any) => i.interaction_id === id);
}

/** The interaction's object as a plain stub, for runInDurableObject. */
export function rawObject(id: string): DurableObjectStub {
  return env.INTERACTIONS.get(env.INTERACTIONS.idFromName(id)) as unknown as DurableObjectStub;
}

/** Runs the interaction object's alarm work as of `nowMs` (expiry and retention with a fake clock). */
export async function stepAt(id: string, nowMs: number): Promise<void> {
  await runInDurableObject(rawObject(id), async (obj: unknown) => {
    await (obj as { parts: InteractionParts }).parts.alarm.runAt(nowMs);
  });
}

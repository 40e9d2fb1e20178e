/**
 * The person path: inline turns on one api route to the
 * built-in echo agent, measured three ways on the same route and the same callers:
 *
 *   plain    the agent without a conversation config: no person work at all (the baseline), each
 *            caller on one address, so one thread per caller as in `linked`;
 *   linked   `multichannel: true`, each caller alternating between two addresses it linked with
 *            `/link` and the code beforehand: every message resolves its person (one call to the
 *            target's PersonDirectory) and keys to the caller's person thread;
 *   first    `multichannel: true`, every message from a new address: each creates its person
 *            (the first-contact path; no greeting template, so the answers stay comparable).
 *
 * The ratios linked ÷ plain and first ÷ plain are the person path's cost. Every turn must answer
 * 200 `answered` with the echo agent's text; a pairing reply is checked word for word.
 */
import { http } from "./harness";
import { type MessageAnswer, postMessage } from "./doors";
import { type Ctx, type Phase, closedLoop } from "./lib";

export const PERSONS_ROUTE = "bench-persons";
const TARGET = { kind: "agent", name: "echo" } as const;

export async function setupPersons(ctx: Ctx): Promise<void> {
  const created = await http(ctx.base, "POST", `/api/conversations/${PERSONS_ROUTE}`, {
    key: ctx.admin,
    body: { door: "api", target_kind: TARGET.kind, target_name: TARGET.name, execution_key: ctx.execUser, turns_per_hour_override: 100_000_000 },
  });
  if (created.status !== 200) throw new Error(`creating route ${PERSONS_ROUTE} failed: HTTP ${created.status} ${JSON.stringify(created.body)}`);
}

/** Turns the echo agent's persons on (`multichannel: true`, no greeting). */
export async function enablePersons(ctx: Ctx): Promise<void> {
  const put = await http(ctx.base, "PUT", `/api/conversation-configs/${TARGET.kind}/${TARGET.name}`, {
    key: ctx.admin,
    body: { target_kind: TARGET.kind, target_name: TARGET.name, multichannel: true },
  });
  if (put.status !== 200) throw new Error(`turning persons on failed: HTTP ${put.status} ${JSON.stringify(put.body)}`);
}

async function say(ctx: Ctx, who: string, text: string): Promise<{ status: number; data: MessageAnswer | undefined }> {
  return postMessage(ctx, PERSONS_ROUTE, { external_user_id: who, text, wait_seconds: 30 });
}

/** Links each caller's two addresses (`{runId}-c{c}-a` and `-b`) with a pairing code, as a participant would. */
export async function linkCallers(ctx: Ctx, runId: string, callers: number): Promise<void> {
  await Promise.all(
    Array.from({ length: callers }, async (_, c) => {
      const link = await say(ctx, `${runId}-c${c}-a`, "/link");
      const code = typeof link.data?.answer === "string" ? link.data.answer.match(/LINK-[A-Z0-9]{8}/)?.[0] : undefined;
      if (link.status !== 200 || !code) throw new Error(`/link failed for caller ${c}: HTTP ${link.status} ${JSON.stringify(link.data)}`);
      const redeem = await say(ctx, `${runId}-c${c}-b`, code);
      if (redeem.data?.answer !== "Done — this conversation is now linked to your other one.")
        throw new Error(`redeem failed for caller ${c}: ${JSON.stringify(redeem.data)}`);
    }),
  );
}

/**
 * `callers` closed loops of inline echo-agent turns. `addresses: "one"` keeps each caller on one
 * address; `"pair"` alternates it between its two addresses; `"fresh"` uses a new address per
 * message. `personThreads` checks the
 * answer's thread: a person thread (linked) or a route thread (plain, first contact).
 */
export function personsPhase(
  ctx: Ctx,
  label: string,
  runId: string,
  callers: number,
  perCaller: number,
  maxSeconds: number,
  addresses: "one" | "pair" | "fresh",
  personThreads: boolean,
): Promise<Phase> {
  return closedLoop(`persons: ${label} (${callers} callers)`, callers, perCaller, maxSeconds, async (c, i) => {
    const who = addresses === "fresh" ? `${runId}-c${c}-n${i}` : `${runId}-c${c}-${addresses === "pair" && i % 2 ? "b" : "a"}`;
    const text = `bench ${c}/${i}`;
    const r = await say(ctx, who, text);
    if (r.status !== 200) return `HTTP ${r.status}`;
    if (r.data?.status !== "answered") return `status ${r.data?.status ?? "?"}`;
    if (r.data.answer !== `echo: ${text}`) return "wrong answer";
    if (String(r.data.thread_id).startsWith("bridge:@person:") !== personThreads) return "wrong thread";
    return null;
  });
}

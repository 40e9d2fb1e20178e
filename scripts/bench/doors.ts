/** The requests the api-door phases send: health, async (202) messages and inline (`wait_seconds`) turns. */
import { http } from "./harness";
import type { Ctx } from "./lib";

export async function healthOnce(base: string): Promise<string | null> {
  const res = await fetch(`${base}/api/health`);
  await res.arrayBuffer();
  return res.status === 200 ? null : `HTTP ${res.status}`;
}

/** Creates an api route to the built-in echo tool (no callback, rate cap out of the way). */
export async function echoRoute(ctx: Ctx, name: string): Promise<void> {
  const created = await http(ctx.base, "POST", `/api/conversations/${name}`, {
    key: ctx.admin,
    body: { door: "api", target_kind: "tool", target_name: "echo", execution_key: ctx.execUser, turns_per_hour_override: 100_000_000 },
  });
  if (created.status !== 200) throw new Error(`creating route ${name} failed: HTTP ${created.status} ${JSON.stringify(created.body)}`);
}

/** The fields of a message door's answer that the bench reads; each is checked before use. */
export interface MessageAnswer {
  message_id?: unknown;
  status?: unknown;
  answer?: unknown;
  thread_id?: unknown;
}

export async function postMessage(ctx: Ctx, route: string, body: Record<string, unknown>): Promise<{ status: number; data: MessageAnswer | undefined }> {
  const res = await fetch(`${ctx.base}/api/conversations/${route}/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-api-key": ctx.caller },
    body: JSON.stringify(body),
  });
  const json = (await res.json().catch(() => null)) as { data?: MessageAnswer } | null;
  return { status: res.status, data: json?.data };
}

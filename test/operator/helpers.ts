/** Shared set-up for the operator door tests: routes, a fake network with providers and tools. */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { createRoute } from "../helpers/bridge";
import { fakeNetwork, type NetCall } from "../helpers/network";
import { admin, call, mintKey, uniq } from "../helpers/http";

export const HOOK = "https://hooks.example.com/operator";
export const CHANNELS = ["twilio", "whatsapp", "telegram", "slack"] as const;
export type ChannelName = (typeof CHANNELS)[number];

export const enc = (s: string) => encodeURIComponent(s);

/** A key that may run the built-in echo tool and agent. */
export const runKey = () => mintKey({ scopes: ["tool:echo", "agent:echo", "tool:set_conversation_mode"] });

export async function apiToolRoute(extra: Record<string, unknown> = {}, tool = "echo") {
  const k = await mintKey({ scopes: [`tool:${tool}`] });
  return createRoute({ door: "api", target_kind: "tool", target_name: tool, execution_key: k.user_id, ...extra });
}

export async function apiAgentRoute(extra: Record<string, unknown> = {}) {
  const k = await runKey();
  return createRoute({ door: "api", target_kind: "agent", target_name: "echo", execution_key: k.user_id, ...extra });
}

let phoneN = 0;
export const address = () => `+1555${String(Date.now()).slice(-6)}${String(++phoneN).padStart(3, "0")}`;

export async function channelRoute(channel: ChannelName, extra: Record<string, unknown> = {}) {
  const k = await runKey();
  const identity = uniq(`${channel}-id`);
  const route = await createRoute({
    door: "channel",
    channel,
    our_identity: identity,
    target_kind: "tool",
    target_name: "echo",
    execution_key: k.user_id,
    ...extra,
  });
  return { ...route, identity };
}

/** Declares an HTTP tool at `url` (the fake network answers it). */
export async function declareTool(title: string, url: string) {
  const r = await call("POST", "/api/tools-config/entries", { key: await admin(), body: { title, kind: "http", description: "operator test tool", url } });
  if (r.status !== 200) throw new Error(`tool declare failed ${r.status} ${JSON.stringify(r.body)}`);
}

export interface Net {
  calls: NetCall[];
  to: (host: string) => NetCall[];
}

/**
 * A fake network: providers answer like their APIs, callbacks answer 204, and `tools` answers
 * HTTP tools by host (a handler may await, to hold a turn in flight).
 */
export function network(tools: Record<string, (kwargs: any) => unknown | Promise<unknown>> = {}): Net {
  const calls = fakeNetwork(async (req, body) => {
    const url = new URL(req.url);
    if (url.host === "twilio.fake") return Response.json({ sid: `SM${crypto.randomUUID().replace(/-/g, "")}` }, { status: 201 });
    if (url.host === "whatsapp.fake") return Response.json({ messaging_product: "whatsapp", messages: [{ id: `wamid.${crypto.randomUUID()}` }] });
    if (url.host === "telegram.fake") return Response.json({ ok: true, result: { message_id: Math.floor(Math.random() * 1e9) } });
    if (url.host === "slack.fake") return Response.json({ ok: true, ts: `${Date.now()}.${Math.floor(Math.random() * 1e6)}` });
    if (url.host === "hooks.example.com") return new Response(null, { status: 204 });
    const tool = tools[url.host];
    if (tool) return Response.json(await tool(JSON.parse(body)));
    return new Response("unexpected host", { status: 599 });
  });
  return { calls, to: (host) => calls.filter((c) => new URL(c.url).host === host) };
}

/** A tool answer gate: `hold()` returns a promise the test releases with `open()`. */
export function gate() {
  let open!: () => void;
  const p = new Promise<void>((r) => (open = r));
  return { wait: () => p, open: () => open() };
}

/**
 * The thread's stored mode override as its object holds it, when it is live for the route that
 * currently carries `route_name` in its thread id (null once forgotten, expired or voided by a
 * route delete).
 */
export async function modeRow(threadId: string): Promise<{ route_name: string; mode: string; expires_at: number } | null> {
  const routeName = threadId.split(":")[1];
  const route = await env.DB.prepare("SELECT created_at FROM routes WHERE route_name = ?").bind(routeName).first<{ created_at: string }>();
  const stored = await runInDurableObject(env.THREADS.get(env.THREADS.idFromName(threadId)), (_o, state) =>
    state.storage.sql.exec("SELECT value FROM meta WHERE key = 'mode_override'").toArray(),
  );
  if (!route || !stored.length) return null;
  const o = JSON.parse(String(stored[0].value)) as { mode: string; expires_at: number; route_created_at: string };
  return o.route_created_at === route.created_at ? { route_name: routeName, mode: o.mode, expires_at: o.expires_at } : null;
}

/** Rewrites the stored override's expiry (the thread object's clock moving on). */
export async function setOverrideExpiry(threadId: string, expiresAt: number): Promise<void> {
  await runInDurableObject(env.THREADS.get(env.THREADS.idFromName(threadId)), (_o, state) => {
    const row = state.storage.sql.exec("SELECT value FROM meta WHERE key = 'mode_override'").toArray()[0];
    if (!row) return;
    const o = JSON.parse(String(row.value));
    state.storage.sql.exec("UPDATE meta SET value = ? WHERE key = 'mode_override'", JSON.stringify({ ...o, expires_at: expiresAt }));
  });
}

export async function threadRow(threadId: string) {
  return env.DB.prepare("SELECT * FROM threads WHERE thread_id = ?").bind(threadId).first<any>();
}

export async function transcript(route: string, threadId: string, extra = "", key?: string) {
  return call("GET", `/api/conversations/${route}/transcript?thread_id=${enc(threadId)}${extra}`, { key: key ?? (await admin()) });
}

export async function operatorSend(route: string, body: Record<string, unknown>, key?: string) {
  return call("POST", `/api/conversations/${route}/thread/messages`, { key: key ?? (await admin()), body });
}

export async function postEvent(route: string, body: Record<string, unknown>, key?: string) {
  return call("POST", `/api/conversations/${route}/events`, { key: key ?? (await admin()), body });
}

export async function setMode(route: string, threadId: string, mode: string, key?: string) {
  return call("PUT", `/api/conversations/${route}/thread/mode`, { key: key ?? (await admin()), body: { thread_id: threadId, mode } });
}

export async function getMode(route: string, threadId: string, key?: string) {
  return call("GET", `/api/conversations/${route}/thread/mode?thread_id=${enc(threadId)}`, { key: key ?? (await admin()) });
}

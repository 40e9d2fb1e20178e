/**
 * A web visitor driven through the real doors: the chat page mints the session cookie, messages go
 * through `POST /api/channels/web/messages`, the stream is the real WebSocket door, and a linked
 * visitor is linked by typing the code another door's person minted (an explicit message).
 */
import { runInDurableObject } from "cloudflare:test";
import { createRoute } from "./bridge";
import { BASE, admin, call, dispatch, mintKey, uniq } from "./http";
import { eventually, makeDue, rawRows, runAlarm, stubFor } from "./threads";
import { declareTool, network } from "../operator/helpers";
import { must } from "../../src/platform/must";

export const ORIGIN = new URL(BASE).origin;

/** A multichannel target with an api route and a web route. */
export interface WebDesk {
  api: string;
  web: string;
  identity: string;
  /** What the HTTP tool was sent, turn by turn (empty on the echo agent). */
  runs: any[];
}

/**
 * A desk on the builtin echo agent (it keeps agent memory), or on an HTTP tool at a fake host that
 * answers `tool saw <message>` (`tool: true`; its network is installed for the current test).
 */
export async function webDesk(opts: { tool?: boolean } = {}): Promise<WebDesk> {
  let target: { kind: "tool" | "agent"; name: string };
  let key: { user_id: string };
  const runs: any[] = [];
  if (opts.tool) {
    const host = `desk-${crypto.randomUUID().slice(0, 8)}.example`;
    const title = host.split(".")[0];
    await declareTool(title, `https://${host}/run`);
    network({ [host]: (kwargs) => (runs.push(kwargs), `tool saw ${kwargs.message ?? "an event"}`) });
    target = { kind: "tool", name: title };
    key = await mintKey({ scopes: [`tool:${title}`] });
  } else {
    target = { kind: "agent", name: "echo" };
    key = await mintKey({ scopes: ["agent:echo"] });
  }
  const api = await createRoute({ door: "api", target_kind: target.kind, target_name: target.name, execution_key: key.user_id });
  const identity = uniq("desk").replace(/[^A-Za-z0-9_-]/g, "-");
  const web = await createRoute({
    door: "channel",
    channel: "web",
    our_identity: identity,
    target_kind: target.kind,
    target_name: target.name,
    execution_key: key.user_id,
  });
  const put = await call("PUT", `/api/conversation-configs/${target.kind}/${target.name}`, {
    key: await admin(),
    body: { target_kind: target.kind, target_name: target.name, multichannel: true },
  });
  if (put.status !== 200) throw new Error(`multichannel failed ${put.status} ${JSON.stringify(put.body)}`);
  return { api: api.name, web: web.name, identity, runs };
}

export interface Visitor {
  cookie: string;
  /** The visitor's address (its id). */
  address: string;
  /** The visitor's own thread on the web route: its session, page transcript and sockets. */
  home: string;
}

/** Opens the chat page as a navigation (with `query`, link params): a fresh session on a fresh address. */
export async function newVisitor(desk: Pick<WebDesk, "identity" | "web">, query = ""): Promise<Visitor> {
  const res = await dispatch(`${BASE}/api/channels/web/chat/${desk.identity}${query}`, { headers: { "sec-fetch-mode": "navigate" } });
  if (res.status !== 200) throw new Error(`chat page answered ${res.status}`);
  await res.text();
  const cookie = (res.headers.get("set-cookie") ?? "").split(";")[0];
  const address = cookie.split("=")[1].split(".")[0];
  return { cookie, address, home: `bridge:${desk.web}:${address}` };
}

/** The visitor types `text`; answers the door's reply. */
export async function say(desk: Pick<WebDesk, "identity">, v: Visitor, text: string) {
  return call("POST", "/api/channels/web/messages", { body: { identity: desk.identity, text }, headers: { origin: ORIGIN, cookie: v.cookie } });
}

/** An api caller's message on the desk's api route, answered inline. */
export async function apiSay(desk: Pick<WebDesk, "api">, user: string, text: string) {
  return call("POST", `/api/conversations/${desk.api}/messages`, { key: await admin(), body: { external_user_id: user, text, wait_seconds: 10 } });
}

/**
 * Links the visitor to the api caller `user`'s person: the caller asks for a code, the visitor
 * types it (an explicit message). Answers the person's thread and the caller's thread before it.
 */
export async function link(desk: WebDesk, v: Visitor, user: string): Promise<{ person: string; before: string }> {
  await apiSay(desk, user, `hello from ${user}`);
  const asked = await apiSay(desk, user, "/link");
  const code = String(asked.body.data?.answer ?? "").match(/LINK-[A-Z0-9]{8}/)?.[0];
  if (!code) throw new Error(`no pairing code: ${JSON.stringify(asked.body)}`);
  const typed = await say(desk, v, code);
  if (typed.status !== 200) throw new Error(`code refused ${typed.status}`);
  await settled(v.home);
  // The caller's next message runs on the person's thread.
  const next = await apiSay(desk, user, "are we linked?");
  const person = String(next.body.data?.thread_id);
  if (!person.startsWith("bridge:@person:")) throw new Error(`not a person thread: ${person}`);
  return { person, before: String(asked.body.data.thread_id) };
}

/** Waits until every record of `threadId` has left its turn (answered, being delivered or settled). */
export async function settled(threadId: string): Promise<void> {
  await eventually(
    () => rawRows(threadId),
    (rows) => rows.length > 0 && rows.every((r) => r.turn_state === "done" && r.status !== "pending_delivery"),
    250,
  );
}

/** Ends every provisional delivery of `threadId` as delivered (its receipt grace made due), so its retention starts. */
export async function deliverAll(threadId: string): Promise<void> {
  await makeDue(threadId, "grace_until");
  await runAlarm(threadId);
}

/**
 * Upgrades at a WebSocket door (`url`, with `headers` beside the upgrade) and collects every frame
 * from the first. With `ready`, returns once a `ready` (or `ended`) frame came. A refusal gives its
 * status, no frames and no socket.
 */
export async function frameSocket(
  url: string,
  headers: Record<string, string>,
  opts: { ready?: boolean } = {},
): Promise<{ status: number; frames: any[]; ws: WebSocket | null }> {
  const res = await dispatch(url, { headers: { upgrade: "websocket", ...headers } });
  if (res.status !== 101) {
    await res.body?.cancel();
    return { status: res.status, frames: [], ws: null };
  }
  const ws = must(res.webSocket, "res.webSocket");
  const frames: any[] = [];
  ws.addEventListener("message", (e) => frames.push(JSON.parse(String(e.data))));
  ws.accept();
  if (opts.ready)
    await eventually(
      async () => frames,
      (f) => f.some((x) => x.type === "ready" || x.type === "ended"),
    );
  return { status: 101, frames, ws };
}

/** The stream door: a socket with its frames once `ready` came (or `ended`), or the refusal's status. */
export async function openStream(desk: Pick<WebDesk, "identity">, v: Visitor, after = 0): Promise<{ status: number; frames: any[]; ws: WebSocket | null }> {
  return frameSocket(`${BASE}/api/channels/web/stream?identity=${desk.identity}&after=${after}`, { origin: ORIGIN, cookie: v.cookie }, { ready: true });
}

/** The texts a fresh stream replays to the visitor (empty when the door refuses the session). */
export async function replayed(desk: Pick<WebDesk, "identity">, v: Visitor): Promise<string[]> {
  const s = await openStream(desk, v);
  s.ws?.close();
  return s.frames.filter((f) => f.type === "entry").map((f) => f.entry.text as string);
}

/** The page transcript's stored rows in the visitor's own thread, expired or not. */
export async function transcriptRows(home: string): Promise<Array<{ text: string; message_id: string | null; expires_at: number | null }>> {
  return runInDurableObject(stubFor(home), (_o, state) => state.storage.sql.exec("SELECT * FROM web_transcript ORDER BY seq").toArray()) as unknown as Promise<
    Array<{ text: string; message_id: string | null; expires_at: number | null }>
  >;
}

/** Sets runtime settings through the config door (the isolate's cache follows the write). */
export async function setSettings(set: Record<string, string>): Promise<void> {
  const r = await call("POST", "/api/config/env", { key: await admin(), body: { set } });
  if (r.status !== 200) throw new Error(`settings refused ${r.status} ${JSON.stringify(r.body)}`);
}

export async function unsetSettings(names: string[]): Promise<void> {
  await call("POST", "/api/config/env", { key: await admin(), body: { unset: names } });
}

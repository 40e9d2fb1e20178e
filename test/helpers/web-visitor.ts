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

export const ORIGIN = new URL(BASE).origin;

/** A multichannel tool target with an api route and a web route; the tool answers `tool saw <message>`. */
export interface WebDesk {
  host: string;
  title: string;
  api: string;
  web: string;
  identity: string;
  /** The tool's calls (their kwargs), in order. */
  runs: any[];
  /** Installs the fake network that answers the tool (the workers setup clears it after each test). */
  net: () => void;
}

export async function webDesk(): Promise<WebDesk> {
  const host = `desk-${crypto.randomUUID().slice(0, 8)}.example`;
  const title = host.split(".")[0];
  await declareTool(title, `https://${host}/run`);
  const runs: any[] = [];
  const net = () => void network({ [host]: (kwargs) => (runs.push(kwargs), `tool saw ${kwargs.message ?? "an event"}`) });
  net();
  const k = await mintKey({ scopes: [`tool:${title}`] });
  const api = await createRoute({ door: "api", target_kind: "tool", target_name: title, execution_key: k.user_id });
  const identity = uniq("desk").replace(/[^A-Za-z0-9_-]/g, "-");
  const web = await createRoute({ door: "channel", channel: "web", our_identity: identity, target_kind: "tool", target_name: title, execution_key: k.user_id });
  const put = await call("PUT", `/api/conversation-configs/tool/${title}`, {
    key: await admin(),
    body: { target_kind: "tool", target_name: title, multichannel: true },
  });
  if (put.status !== 200) throw new Error(`multichannel failed ${put.status} ${JSON.stringify(put.body)}`);
  return { host, title, api: api.name, web: web.name, identity, runs, net };
}

export interface Visitor {
  cookie: string;
  /** The visitor's address (its id). */
  address: string;
  /** The visitor's own thread on the web route: its session, page transcript and sockets. */
  home: string;
}

/** Opens the chat page as a navigation: a fresh session on a fresh address. */
export async function newVisitor(desk: Pick<WebDesk, "identity" | "web">): Promise<Visitor> {
  const res = await dispatch(`${BASE}/api/channels/web/chat/${desk.identity}`, { headers: { "sec-fetch-mode": "navigate" } });
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

/** Links the visitor to the api caller `user`'s person (the caller asks for a code, the visitor types it); answers the person id. */
export async function link(desk: WebDesk, v: Visitor, user: string): Promise<string> {
  const key = await admin();
  await call("POST", `/api/conversations/${desk.api}/messages`, { key, body: { external_user_id: user, text: `hello from ${user}`, wait_seconds: 10 } });
  const asked = await call("POST", `/api/conversations/${desk.api}/messages`, { key, body: { external_user_id: user, text: "/link", wait_seconds: 10 } });
  const code = String(asked.body.data?.answer ?? "").match(/LINK-[A-Z0-9]{8}/)?.[0];
  if (!code) throw new Error(`no pairing code: ${JSON.stringify(asked.body)}`);
  const typed = await say(desk, v, code);
  if (typed.status !== 200) throw new Error(`code refused ${typed.status}`);
  await settled(v.home);
  // The person's id, as the tool sees it on the visitor's next turn.
  const probe = `who am i ${crypto.randomUUID().slice(0, 6)}`;
  await say(desk, v, probe);
  const run = await eventually(
    async () => desk.runs.find((r) => r.message === probe),
    (r) => r !== undefined,
    250,
  );
  const person = run?.turn?.subject?.person;
  if (typeof person !== "string") throw new Error(`the visitor is not linked: ${JSON.stringify(run)}`);
  await settled(`bridge:@person:${person}`);
  return person;
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

/** The stream door: a socket with its frames once `ready` came (or `ended`), or the refusal's status. */
export async function openStream(desk: Pick<WebDesk, "identity">, v: Visitor, after = 0): Promise<{ status: number; frames: any[]; ws: WebSocket | null }> {
  const res = await dispatch(`${BASE}/api/channels/web/stream?identity=${desk.identity}&after=${after}`, {
    headers: { upgrade: "websocket", origin: ORIGIN, cookie: v.cookie },
  });
  if (res.status !== 101) {
    await res.body?.cancel();
    return { status: res.status, frames: [], ws: null };
  }
  const ws = res.webSocket!;
  const frames: any[] = [];
  ws.addEventListener("message", (e) => frames.push(JSON.parse(String(e.data))));
  ws.accept();
  await eventually(
    async () => frames,
    (f) => f.some((x) => x.type === "ready" || x.type === "ended"),
  );
  return { status: 101, frames, ws };
}

/** The texts a fresh stream replays to the visitor (empty when the door refuses the session). */
export async function replayed(desk: Pick<WebDesk, "identity">, v: Visitor): Promise<string[]> {
  const s = await openStream(desk, v);
  s.ws?.close();
  return s.frames.filter((f) => f.type === "entry").map((f) => f.entry.text as string);
}

/** The page transcript's stored rows in the visitor's own thread, expired or not. */
export async function transcriptRows(home: string): Promise<Array<{ text: string; message_id: string | null; expires_at: number | null }>> {
  return runInDurableObject(stubFor(home), (_o, state) =>
    state.storage.sql.exec("SELECT * FROM web_transcript ORDER BY seq").toArray(),
  ) as unknown as Promise<Array<{ text: string; message_id: string | null; expires_at: number | null }>>;
}

/** Sets runtime settings through the config door (the isolate's cache follows the write). */
export async function setSettings(set: Record<string, string>): Promise<void> {
  const r = await call("POST", "/api/config/env", { key: await admin(), body: { set } });
  if (r.status !== 200) throw new Error(`settings refused ${r.status} ${JSON.stringify(r.body)}`);
}

export async function unsetSettings(names: string[]): Promise<void> {
  await call("POST", "/api/config/env", { key: await admin(), body: { unset: names } });
}

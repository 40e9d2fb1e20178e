/**
 * How the chat talks to the service's public web doors (/api/channels/web/…). Two carriers of the
 * visitor's session, one interface:
 * - the page (same origin): the session is the HttpOnly cookie the page door set; this code never
 *   sees it. Requests are same-origin fetches and the stream is a same-origin WebSocket.
 * - the widget (a host page of another origin): a bearer token from `POST session`, kept in the host
 *   page's localStorage under `tai-web:<service origin>/<identity>` (token-key.ts) and sent in `Authorization`. A WebSocket cannot
 *   carry a header, so the stream is opened with a one-time ticket from `POST stream-ticket`.
 * The token never goes in a URL; a refused token (401) is dropped and replaced once.
 */

import { t } from "./strings";
import { legacyTokenKey, tokenKey } from "./token-key";

export const DOOR_BASE = "/api/channels/web/";

/** A refusal from a door (`{error, code}`) or a failure to reach it (`status` 0). */
export class WebError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** An upload of the visitor's, as `POST attachments` answers it and an entry names it. */
export type Attachment = { attachment_id: string; kind: string; filename?: string };

export interface Transport {
  readonly identity: string;
  /** POSTs `body` (with the identity) to `DOOR_BASE + path`; resolves with the answer's `data`. */
  post<T>(path: string, body: Record<string, unknown>): Promise<T>;
  /** Uploads a file into the conversation (not sent until a message names it). */
  upload(file: File): Promise<Attachment>;
  /** An upload of this conversation, fetched with the session (for a preview or a download). */
  file(id: string): Promise<Blob>;
  /** A WebSocket on the conversation's stream, replaying entries with seq greater than `after`. */
  openStream(after: number): Promise<WebSocket>;
  /** Starts a new conversation on a fresh session (the old one ends). */
  rotate(): Promise<void>;
}

async function answer<T>(res: Response): Promise<T> {
  let body: unknown = null;
  try {
    body = await res.json();
  } catch {
    // A proxy's HTML error page or an empty body: reported by status below.
  }
  const obj = body && typeof body === "object" ? (body as Record<string, unknown>) : {};
  if (!res.ok) {
    // The service's own `error` is shown as it wrote it; the chat's words around it are translated.
    const message = typeof obj.error === "string" ? obj.error : t("error.status", { status: res.status });
    throw new WebError(res.status, typeof obj.code === "string" ? obj.code : "", message);
  }
  return obj.data as T;
}

async function send(url: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch {
    throw new WebError(0, "network", t("error.network"));
  }
}

/** The upload's request: its bytes, with what the browser says it is and its name. */
function uploadInit(file: File): RequestInit & { headers: Record<string, string> } {
  return { method: "POST", body: file, headers: { "content-type": file.type || "application/octet-stream", "x-filename": encodeURIComponent(file.name) } };
}

/** The bytes of a GET's answer, or its refusal. */
async function blobOf(res: Response): Promise<Blob> {
  if (!res.ok) await answer(res);
  return res.blob();
}

function wsUrl(origin: string, query: Record<string, string>): string {
  const u = new URL(DOOR_BASE + "stream", origin);
  u.protocol = u.protocol === "https:" ? "wss:" : "ws:";
  for (const [k, v] of Object.entries(query)) u.searchParams.set(k, v);
  return u.href;
}

/** The page's transport: its session is the cookie, sent by the browser on same-origin requests. */
export function cookieTransport(identity: string): Transport {
  const req = (path: string, init: RequestInit) => send(DOOR_BASE + path, { ...init, credentials: "same-origin" });
  const post = async <T>(path: string, body: Record<string, unknown>): Promise<T> =>
    answer<T>(await req(path, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ ...body, identity }) }));
  return {
    identity,
    post,
    upload: async (file) => answer(await req(`attachments?identity=${identity}`, uploadInit(file))),
    file: async (id) => blobOf(await req(`attachments/${id}?identity=${identity}`, {})),
    async openStream(after) {
      return new WebSocket(wsUrl(location.origin, { identity, after: String(after) }));
    },
    async rotate() {
      await post("session/rotate", {});
    },
  };
}

/**
 * The widget's stored session. `u`: the user of a signed-in session (the proof's user, as the
 * widget keys sessions by; the service checked the proof itself), absent on an anonymous one;
 * `w`: the visitor wrote in it (an anonymous conversation worth offering to keep).
 */
type Stored = { token: string; expires_at?: string; u?: string; w?: 1 };

/** The user a page's token names: its `sub`, read without checking (the service checks), else the token itself. */
function userOf(token: string): string {
  try {
    const sub: unknown = JSON.parse(atob(token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/"))).sub;
    if (typeof sub === "string") return sub;
  } catch {
    // Not a token the widget can read: the service refuses it.
  }
  return token;
}

/** The widget's transport: also signs its visitor in and out, and keeps an anonymous conversation on consent. */
export interface BearerTransport extends Transport {
  /**
   * The page's token for its signed-in user (docs/channels.md "Verified visitors"; null: signed
   * out). Sessions of another user, or of one who signed out, end here. True when the
   * conversation shown is no longer the right one.
   */
  identify(token: string | null): boolean;
  /** The signed-in user of the stored session, if it is one. */
  user(): string | undefined;
  /** Joins the anonymous conversation set aside at sign-in to the signed-in user (the visitor chose to). */
  merge(): Promise<void>;
  /** The visitor declined: the set-aside anonymous session ends, nothing is joined. */
  skip(): void;
}

/**
 * localStorage when the host page allows it; a memory-only copy otherwise (private modes, sandboxes).
 * `legacy` names a key of an earlier widget, removed unread (see token-key.ts).
 */
function tokenStore(key: string, legacy: string): { get(): Stored | null; set(s: Stored): void; drop(): void } {
  let memory: Stored | null = null;
  const storage = (): Storage | null => {
    try {
      return window.localStorage;
    } catch {
      return null;
    }
  };
  try {
    storage()?.removeItem(legacy);
  } catch {
    // Storage refused: nothing was kept there either.
  }
  return {
    get() {
      let raw: string | null = null;
      try {
        raw = storage()?.getItem(key) ?? null;
      } catch {
        raw = null;
      }
      if (raw) {
        try {
          const s: unknown = JSON.parse(raw);
          if (s && typeof s === "object" && typeof (s as Stored).token === "string") memory = s as Stored;
        } catch {
          memory = null;
        }
      }
      if (memory?.expires_at && Date.parse(memory.expires_at) <= Date.now()) memory = null;
      return memory;
    },
    set(s) {
      memory = s;
      try {
        storage()?.setItem(key, JSON.stringify(s));
      } catch {
        // Storage full or refused: the memory copy lasts for this page view.
      }
    },
    drop() {
      memory = null;
      try {
        storage()?.removeItem(key);
      } catch {
        // Nothing stored to drop.
      }
    },
  };
}

/**
 * The widget's transport against the service at `base` (an origin). The session is minted lazily,
 * on the first request, so a host page's visitors who never open the chat create none. With a
 * user token, the session is the signed-in user's; a stored session of that same user is used as it is
 * (a page load that passes a fresh token mints nothing). `onMint(offer)` follows each new
 * session; `offer`: it set aside an anonymous conversation the visitor wrote in, to offer keeping.
 */
export function bearerTransport(base: string, identity: string, onMint: (offer: boolean) => void = () => {}): BearerTransport {
  const store = tokenStore(tokenKey(base, identity), legacyTokenKey(identity));
  const url = (path: string) => new URL(DOOR_BASE + path, base).href;

  const raw = async (path: string, init: RequestInit & { headers?: Record<string, string> }, token: string | null): Promise<Response> => {
    const headers: Record<string, string> = { ...init.headers };
    if (token) headers.authorization = `Bearer ${token}`;
    return send(url(path), { ...init, mode: "cors", credentials: "omit", referrerPolicy: "origin", headers });
  };
  const json = (body: Record<string, unknown>) => ({
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ ...body, identity }),
  });

  let proof: string | null = null;
  /** The user the page signed in (null: signed out; undefined: the page said nothing, so any stored session will do). */
  let want: string | null | undefined;
  /** An anonymous session the visitor wrote in, set aside at sign-in until they choose. */
  let earlier: string | null = null;
  const end = (token: string) =>
    void raw("session/end", json({}), token).then(
      (r) => r.body?.cancel(),
      () => {},
    );

  let minting: Promise<string> | null = null;
  const mint = (): Promise<string> => {
    minting ??= (async () => {
      const before = store.get();
      const data = await answer<Stored>(await raw("session", json(proof ? { user_token: proof } : {}), null));
      if (!data || typeof data.token !== "string") throw new WebError(0, "bad_answer", t("error.session"));
      const offer = Boolean(want && before && !before.u && before.w);
      if (offer) earlier = before?.token ?? null;
      store.set({ token: data.token, expires_at: data.expires_at, ...(want ? { u: want } : {}) });
      onMint(offer);
      return data.token;
    })().finally(() => {
      minting = null;
    });
    return minting;
  };
  const token = async (): Promise<string> => {
    const s = store.get();
    return s && (want === undefined || (s.u ?? null) === want) ? s.token : mint();
  };

  const call = async (path: string, init: RequestInit & { headers?: Record<string, string> }): Promise<Response> => {
    let res = await raw(path, init, await token());
    if (res.status === 401) {
      // The session expired, ended or was never known here: one fresh session, one retry.
      await res.body?.cancel();
      store.drop();
      res = await raw(path, init, await mint());
    }
    return res;
  };
  const post = async <T>(path: string, body: Record<string, unknown>): Promise<T> => {
    const data = await answer<T>(await call(path, json(body)));
    const s = store.get();
    if (path === "messages" && s && !s.w) store.set({ ...s, w: 1 });
    return data;
  };

  return {
    identity,
    post,
    upload: async (file) => answer(await call(`attachments?identity=${identity}`, uploadInit(file))),
    file: async (id) => blobOf(await call(`attachments/${id}?identity=${identity}`, {})),
    async openStream(after) {
      const { ticket } = await post<{ ticket: string }>("stream-ticket", {});
      return new WebSocket(wsUrl(base, { identity, after: String(after), ticket }));
    },
    async rotate() {
      const s = store.get();
      if (s?.u) {
        // A signed-in user's conversation is their account's, the same on every device: this
        // device starts over on a fresh session of it.
        end(s.token);
        store.drop();
        await mint();
        return;
      }
      const data = await post<Stored | { rotated: true }>("session/rotate", {});
      if (data && "token" in data && typeof data.token === "string") store.set({ token: data.token, expires_at: data.expires_at });
    },
    identify(p) {
      proof = p;
      want = p ? userOf(p) : null;
      const s = store.get();
      if (s?.u && s.u !== want) {
        // Signed out, or another user signed in: this browser's session of the last user ends.
        end(s.token);
        store.drop();
      }
      return !s || (s.u ?? null) !== want;
    },
    user: () => store.get()?.u,
    async merge() {
      const from = earlier;
      earlier = null;
      if (from) await answer(await raw("session/merge", json({ verified_token: await token() }), from));
    },
    skip() {
      if (earlier) end(earlier);
      earlier = null;
    },
  };
}

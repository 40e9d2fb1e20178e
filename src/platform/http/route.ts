/**
 * Declarative routes: one spec drives authentication, authorization, validation, the
 * not-configured gate and the OpenAPI document, so the document cannot drift from what the
 * Worker enforces. Handlers return the `data` payload (wrapped as `{data}`) or a Response.
 */
import type { Context, Hono } from "hono";
import type { z } from "zod";
import { type Principal, admit, authenticate, readCredential } from "../../access-control/principal";
import type { Action } from "../../access-control/scopes";
import type { AppEnv } from "./app-env";
import { parseJsonBody, readRawBody } from "./body";
import { CONNECTORS_STORE_URL } from "../settings/connector-settings";
import { CONVERSATIONS_STORE_URL } from "../settings/conversation-settings";
import type { SettingDefinition, StoreGate } from "../settings/define";
import { MARKETPLACE_STORE_URL } from "../settings/marketplace-settings";
import { INTERACTIONS_STORE_URL } from "../settings/notification-settings";
import type { Settings } from "../settings/settings";
import { STATES_STORE_URL } from "../settings/states-settings";
import { STORAGE_BUCKET, TOOL_META_STORE_URL } from "../settings/storage-settings";
import { TOOL_RUNS_STORE_URL } from "../settings/tool-run-settings";
import { type HttpError, notConfigured } from "./errors";
import { type IdempotencyKey, readIdempotencyKey, requestFingerprint } from "./idempotency";
import { parseOr400 } from "./validation";

export type Method = "get" | "post" | "put" | "delete" | "patch";

/**
 * The stores a door can need, each with the setting that switches it on and where its parsed value
 * sits. Without it the door answers 501 `<code>-not-configured` naming the variable to set
 * (platform facts D); the code and message are the setting's own gate.
 */
const STORES = {
  conversations: { setting: CONVERSATIONS_STORE_URL, url: (s: Settings) => s.conversations.storeUrl },
  states: { setting: STATES_STORE_URL, url: (s: Settings) => s.states.storeUrl },
  interactions: { setting: INTERACTIONS_STORE_URL, url: (s: Settings) => s.notifications.storeUrl },
  connectors: { setting: CONNECTORS_STORE_URL, url: (s: Settings) => s.connectors.storeUrl },
  marketplace: { setting: MARKETPLACE_STORE_URL, url: (s: Settings) => s.marketplace.storeUrl },
  "tool-runs": { setting: TOOL_RUNS_STORE_URL, url: (s: Settings) => s.toolRuns.storeUrl },
  storage: { setting: STORAGE_BUCKET, url: (s: Settings) => s.storage.bucketBinding },
  "tool-meta": { setting: TOOL_META_STORE_URL, url: (s: Settings) => s.toolMeta.storeUrl },
} as const satisfies Record<string, { setting: SettingDefinition & { gate: StoreGate }; url: (s: Settings) => string | null }>;

export type StoreName = keyof typeof STORES;

/** The 501 a door needing `store` answers when it is not configured; null when it is. */
export function storeRefusal(store: StoreName, settings: Settings): HttpError | null {
  const { setting, url } = STORES[store];
  return url(settings) ? null : notConfigured(setting.gate.code, setting.gate.message);
}

export type AuthSpec =
  | { public: true }
  /** Any valid key; no scope or condition check (e.g. `GET /api/auth/me`). */
  | { authenticated: true }
  | {
      /** Scope tag of the area; the action defaults from the method (GET read, else write). */
      tag: string;
      action?: Action;
      /** Admin-only doors refuse every non-admin with 403 before anything else. */
      admin?: boolean;
    };

/** The declarations of doors that admit a caller: every kind but public. */
export type CallerAuth = Exclude<AuthSpec, { public: true }>;

/**
 * A reference a door stores that later runs under another identity or another key's grants
 * (docs/security.md, "Confused deputy"): the stored thing is bounded by the storing key's own
 * grants, checked when stored and again when it runs. `kind` says what is referenced:
 * - `tool`: a tool (or agent) run later (the writer must hold its run grant);
 * - `state`: a state whose records a binding reads or writes (the writer's `states` read/write grant);
 * - `key`: an execution key bound by pass-role (the writer's own key or one it owns; admins any);
 * - `url`: an address the service sends to (the outbound address guard, at store and before each send).
 * `at` is where the door takes it from: a body path, dotted, `[]` for every item of an array
 * (`state_binding.states[].state`, `tools[]`), or a path parameter as `{name}`. The generated
 * suite test/hardening/confused-deputy.test.ts lists every door declaring `stores`, fails when a
 * body field that looks like such a reference is not declared, and tries each declaration.
 */
export interface StoredReference {
  kind: "tool" | "state" | "key" | "url";
  at: string;
}

export interface RouteSpec<
  P extends z.ZodType | undefined = z.ZodType | undefined,
  Q extends z.ZodType | undefined = z.ZodType | undefined,
  B extends z.ZodType | undefined = z.ZodType | undefined,
  A extends AuthSpec = AuthSpec,
> {
  method: Method;
  /** OpenAPI-style path, e.g. `/api/conversations/{route_name}`. */
  path: string;
  summary: string;
  description?: string;
  /** OpenAPI tag (the area). */
  area: string;
  auth: A;
  /** The store the door needs: without it the door answers 501 `<store>-not-configured`. */
  store?: StoreName;
  params?: P;
  query?: Q;
  body?: B;
  /** Body is optional (an empty body validates as `{}` when absent). */
  bodyOptional?: boolean;
  /** The `data` payload's schema, for the document. */
  response?: z.ZodType;
  /** Other success responses the door can give (e.g. 202 beside 200). */
  alsoResponds?: Array<{ status: number; description: string; schema?: z.ZodType }>;
  status?: number;
  /** Error statuses the door documents besides the common ones. */
  errors?: number[];
  /** Non-JSON answers (e.g. `text/event-stream`). */
  produces?: string;
  /**
   * The door opens a live channel that keeps pushing after it answered: a WebSocket or a stream of
   * server-sent events. A live door checks its credential when it opens and again before each push,
   * and closes once the credential is revoked (docs/security.md "Every live channel dies with its
   * credential"); test/hardening/live-revocation.test.ts holds a fixture for every door declaring
   * it, and fails on a door that upgrades or streams without declaring it.
   */
  live?: "websocket" | "sse";
  /** Raw, unparsed body (provider webhooks verify signatures on the exact bytes). */
  rawBody?: boolean;
  /**
   * The door reads its body itself, as bytes of this media type, under a cap of its own that may
   * exceed the service's 1 MiB (an upload): the pipeline leaves the body unread, and the OpenAPI
   * document shows it as binary.
   */
  streamedBody?: string;
  /**
   * Starts the door's first read (its route) while the caller's key is being checked, so the two
   * run side by side. It gets the raw (not yet validated) path params; the door's handler picks the
   * read up from where the hook left it, and a refused request leaves it unused.
   */
  prefetch?: (c: Context<AppEnv>) => void;
  /**
   * Public pins (docs/access-control.md): by default only GET doors may be pinned public. `true`
   * lets a non-GET door be pinned; `false` keeps a GET door that needs its caller's identity from
   * being pinned. The never-public doors (access control, bridge writes, admin-only) ignore it.
   */
  pinnable?: boolean;
  /** The references this door stores (see StoredReference); absent: it stores none. */
  stores?: StoredReference[];
  /**
   * The door ends the calling key itself (logout). Nothing in the pipeline reads it; it tells
   * callers that send one key to every door (the generated suites of test/hardening) to send a
   * key they can spare.
   */
  revokesCaller?: boolean;
  /**
   * The door creates work (a turn, a run, a send) and honours an `Idempotency-Key` header
   * (src/platform/http/idempotency.ts): the pipeline checks the header's grammar (400 naming it)
   * and hands the handler the key with the request's fingerprint, and the handler answers a retry
   * with the first request's answer. The OpenAPI document shows the header on the door, and
   * test/hardening/idempotency.test.ts replays every door declaring it.
   */
  idempotent?: boolean;
  /**
   * The door can link two conversations (docs/security.md, "Link authority"): `redeem` when what
   * it admits can carry a pairing code that a turn redeems (an explicit message of the party's own
   * conversation), `mint` when it can run `get_pairing_code` outside a conversation turn (the running
   * key needs a write grant over the route's target), `join` when it joins two conversations that
   * its caller proves are its own, each by that conversation's own credential (the web chat's
   * consent merge). Never on a GET. The generated suite test/hardening/link-authority.test.ts
   * checks each declaration with a fixture.
   */
  links?: "redeem" | "mint" | "join";
}

type Out<T> = T extends z.ZodType ? z.output<T> : undefined;

export interface RouteInput<P, Q, B> {
  params: Out<P>;
  query: Out<Q>;
  body: Out<B>;
  raw: Uint8Array | null;
  /** On an `idempotent` door, the request's `Idempotency-Key` and fingerprint (null: no header, or another door). */
  idempotency: IdempotencyKey | null;
}

/**
 * What an authenticated door's handler receives: its input and the caller the auth step admitted
 * (the anonymous principal when a public pin admitted the request).
 */
export interface AuthedInput<P, Q, B> extends RouteInput<P, Q, B> {
  principal: Principal;
}

/** A public door's handler: no caller was authenticated, so it gets none. */
export type Handler<P, Q, B> = (c: Context<AppEnv>, input: RouteInput<P, Q, B>) => Promise<unknown> | unknown;

/** An authenticated door's handler. */
export type AuthedHandler<P, Q, B> = (c: Context<AppEnv>, input: AuthedInput<P, Q, B>) => Promise<unknown> | unknown;

/** Every route registered in this isolate, in registration order (feeds OpenAPI and 405s). */
export const registry: RouteSpec[] = [];

export function honoPath(path: string): string {
  return path.replace(/\{([A-Za-z0-9_]+)\}/g, ":$1");
}

export function pathRegex(path: string): RegExp {
  const escaped = path.replace(/[.*+?^$()|[\]\\]/g, "\\$&");
  return new RegExp(`^${escaped.replace(/\{[A-Za-z0-9_]+\}/g, "[^/]+")}/?$`);
}

/**
 * Registers an authenticated door (`authenticated`, or a scope `tag`) on `router` with the
 * standard pipeline in front of `handler`, which receives the admitted principal.
 */
export function addRoute<P extends z.ZodType | undefined = undefined, Q extends z.ZodType | undefined = undefined, B extends z.ZodType | undefined = undefined>(
  router: Hono<AppEnv>,
  spec: RouteSpec<P, Q, B, CallerAuth>,
  handler: AuthedHandler<P, Q, B>,
): void {
  register(
    router,
    spec,
    (c) => admitCaller(c, spec),
    (c, input, principal) => handler(c, { ...input, principal }),
  );
}

/** Registers a public door (`auth: {public: true}`): the same pipeline without a caller. */
export function addPublicRoute<
  P extends z.ZodType | undefined = undefined,
  Q extends z.ZodType | undefined = undefined,
  B extends z.ZodType | undefined = undefined,
>(router: Hono<AppEnv>, spec: RouteSpec<P, Q, B, { public: true }>, handler: Handler<P, Q, B>): void {
  register(router, spec, async () => null, handler);
}

/**
 * The auth step of an authenticated door: a declared `authenticated` door needs any valid key;
 * a tagged door authenticates, authorizes and honours a public pin (src/access-control/principal.ts
 * `admit`), with the door's prefetch started beside it.
 */
async function admitCaller(
  c: Context<AppEnv>,
  spec: RouteSpec<z.ZodType | undefined, z.ZodType | undefined, z.ZodType | undefined, CallerAuth>,
): Promise<Principal> {
  const auth = spec.auth;
  if ("authenticated" in auth) return authenticate(c.env, readCredential(c.req.raw.headers));
  if (spec.prefetch && c.get("settings").conversations.storeUrl) spec.prefetch(c);
  const action: Action = auth.action ?? (spec.method === "get" ? "read" : "write");
  const need = { tag: auth.tag, action, admin: auth.admin };
  return admit(c.env, readCredential(c.req.raw.headers), spec, need, { method: c.req.method, path: c.req.path }, new Date());
}

/** The pipeline every door shares: caller, validation, store gate, handler, `{data}` envelope. */
function register<P extends z.ZodType | undefined, Q extends z.ZodType | undefined, B extends z.ZodType | undefined, C>(
  router: Hono<AppEnv>,
  spec: RouteSpec<P, Q, B, AuthSpec>,
  caller: (c: Context<AppEnv>) => Promise<C>,
  handler: (c: Context<AppEnv>, input: RouteInput<P, Q, B>, admitted: C) => Promise<unknown> | unknown,
): void {
  if (!registry.some((r) => r.method === spec.method && r.path === spec.path)) registry.push(spec as RouteSpec);
  router.on(spec.method.toUpperCase(), honoPath(spec.path), async (c) => {
    const settings = c.get("settings");
    const admitted = await caller(c);
    const params = spec.params ? parseOr400(spec.params, c.req.param(), "path") : undefined;
    const query = spec.query ? parseOr400(spec.query, c.req.query(), "query") : undefined;
    let raw: Uint8Array | null = null;
    let body: unknown = undefined;
    if (spec.body || spec.rawBody) {
      raw = await readRawBody(c.req.raw);
      if (spec.body) {
        const parsed = parseJsonBody(raw);
        body = parseOr400(spec.body, parsed === undefined && spec.bodyOptional ? {} : parsed, "body");
      }
    }
    const key = spec.idempotent ? readIdempotencyKey(c.req.raw.headers) : null;
    const refusal = spec.store ? storeRefusal(spec.store, settings) : null;
    if (refusal) throw refusal;
    const idempotency = key === null ? null : { key, fingerprint: await requestFingerprint(spec.method, c.req.path, raw) };
    const result = await handler(c, { params, query, body, raw, idempotency } as RouteInput<P, Q, B>, admitted);
    if (result instanceof Response) return result;
    return c.json({ data: result === undefined ? null : result }, (spec.status ?? 200) as 200);
  });
}

/** Methods registered for a concrete request path (for 405 and the Allow header). */
export function methodsForPath(path: string): string[] {
  const found = new Set<string>();
  for (const r of registry) if (pathRegex(r.path).test(path)) found.add(r.method.toUpperCase());
  return [...found];
}

/**
 * The connectors doors (spec §2.9, §4.10, §4.11; docs/connectors.md): the providers
 * catalog, and OAuth connections an HTTP tool or agent can use by reference. Tagged `connectors`;
 * every door but the catalog needs the connector store (501 `connectors-not-configured`).
 *
 * Who sees what: an admin sees and manages every connection; any other caller only its own (those
 * its key's `user_id` started). Another's connection answers 404, like an absent one. Re-sealing
 * the stored tokens under a new key is admin-only.
 */
import type { Context } from "hono";
import { Hono } from "hono";
import { z } from "zod";
import { holderOf } from "../access-control/identity";
import type { Principal } from "../access-control/principal";
import { connectionStub } from "./rpc";
import { AuthorizationView, CompletionView, beginAuthorization, completeAuthorization, providerFor } from "./authorization";
import {
  type Caller,
  ConnectionView,
  connectionIdsAfter,
  connectionView,
  deleteConnection,
  getConnection,
  listConnections,
  updateConnection,
  visibleTo,
} from "./connections";
import { connectionIdSchema } from "../outbound/header-ref";
import { ProvidersCatalog, findProvider, listCategories, providerView, scopesFor, unknownSubService } from "./providers";
import { keyRingOf } from "./sealing";
import { resealStarts } from "./starts";
import type { AppEnv } from "../platform/http/app-env";
import { HttpError, badRequest, notFound } from "../platform/http/errors";
import { addRoute } from "../platform/http/route";
import { CONNECTOR_ID } from "../platform/settings/connector-settings";

export const connectorsRouter = new Hono<AppEnv>();

const DOOR = { area: "connectors", auth: { tag: "connectors" }, store: "connectors" } as const;

const providerIdSchema = z.string().max(64).regex(CONNECTOR_ID, { message: "must match ^[a-z][a-z0-9_]*$" });
const subServicesSchema = z
  .array(providerIdSchema)
  .min(1, { message: "must name at least one sub-service" })
  .max(64)
  .refine((ids) => new Set(ids).size === ids.length, { message: "must not repeat a sub-service" });
const connectionParams = z.object({ connection_id: connectionIdSchema });

function callerOf(p: Principal): Caller {
  return { ...holderOf(p.key), admin: p.admin };
}

const connectionNotFound = () => notFound("connection not found");

/** The connection `id` if `caller` may see it, else 404 (absent and foreign alike). */
async function visibleConnection(db: D1Database, caller: Caller, id: string) {
  const row = await getConnection(db, id);
  if (!row || !visibleTo(row, caller)) throw connectionNotFound();
  return row;
}

/** The provider of a listed connection; 409 when the providers document no longer has it. */
function providerOfConnection(c: Context<AppEnv>, providerId: string) {
  const provider = findProvider(c.get("settings").connectors.providers, providerId);
  if (!provider) throw new HttpError(409, "the connection's provider is no longer configured (CONNECTORS_PROVIDERS)");
  return provider;
}

/** The 400 for a sub-service the provider does not have (its index, never its value). */
function checkSubServices(provider: Parameters<typeof unknownSubService>[0], subs: string[]): void {
  const bad = unknownSubService(provider, subs);
  if (bad >= 0) throw badRequest(`invalid body: sub_services.${bad}: not a sub-service of the provider`);
}

addRoute(
  connectorsRouter,
  {
    method: "get",
    path: "/api/connectors/providers",
    summary: "The connector providers catalog (spec §2.9)",
    description:
      "Providers come from the operator's providers document (CONNECTORS_PROVIDERS) and are listed with or without a connector store; categories come from the store and are [] without one. A view never carries the provider's OAuth endpoints, client id or client secret env names.",
    area: "connectors",
    auth: { tag: "connectors" },
    response: ProvidersCatalog,
  },
  async (c) => {
    const settings = c.get("settings");
    const categories = settings.connectors.storeUrl ? await listCategories(c.env.DB) : [];
    return { categories, providers: settings.connectors.providers.map(providerView) };
  },
);

addRoute(
  connectorsRouter,
  {
    method: "post",
    path: "/api/connectors/connections/start",
    summary: "Start connecting to an OAuth provider: answers the provider's authorization URL",
    description:
      "Body `{provider_id, sub_services}`. Answers the authorization URL (response_type=code, client_id, redirect_uri = CONNECTORS_OAUTH_REDIRECT_URI, the sub-services' scopes, a random `state`, a PKCE S256 `code_challenge`) and when the start expires. The provider sends the browser back to the redirect URI with `code` and `state`; POST them to /api/connectors/oauth/complete. 501 `connector-provider-not-configured` (with `env_var`) when the provider's client id or secret env var is unset.",
    ...DOOR,
    body: z.object({ provider_id: providerIdSchema, sub_services: subServicesSchema }).strict(),
    response: AuthorizationView,
  },
  async (c, { body, principal }) => {
    const settings = c.get("settings");
    const provider = providerFor(settings, body.provider_id);
    checkSubServices(provider, body.sub_services);
    return beginAuthorization(
      c.env,
      settings,
      callerOf(principal),
      { purpose: "connect", provider, sub_services: body.sub_services, connection_id: null },
      Date.now(),
    );
  },
);

addRoute(
  connectorsRouter,
  {
    method: "post",
    path: "/api/connectors/oauth/complete",
    summary: "Complete an authorization with the provider's code",
    description:
      "Body `{state, code}` as the provider's redirect carried them. The state is single use, expires, and may be completed only by the key that started it (or an admin). Exchanges the code (with the PKCE verifier and the client's credentials) at the provider's token endpoint and stores the tokens, sealed, in the connection's object. Answers `{kind: connected|reconnected|widened, connection}`. Every failure is 400 with a code: `oauth-state-invalid` (unknown, expired, used or another's state), `oauth-exchange-failed` (the token endpoint refused or failed), `oauth-provider-gone`, `oauth-connection-gone`.",
    ...DOOR,
    body: z.object({ state: z.string().min(1).max(512), code: z.string().min(1).max(4096) }).strict(),
    response: CompletionView,
  },
  (c, { body, principal }) => completeAuthorization(c.env, c.get("settings"), callerOf(principal), body, Date.now()),
);

addRoute(
  connectorsRouter,
  {
    method: "get",
    path: "/api/connectors/connections",
    summary: "List connections (an admin's: all; anyone else's: its own)",
    description:
      "Oldest first, with each connection's health from its object. `limit` caps the page (default 50; values above 200 are clamped); `total` counts every match. Filters: `provider_id`, `owner_user_id`.",
    ...DOOR,
    query: z.object({
      limit: z
        .string()
        .regex(/^\d+$/, { message: "limit must be a positive integer" })
        .transform(Number)
        .refine((n) => n >= 1, { message: "limit must be at least 1" })
        .transform((n) => Math.min(n, 200))
        .optional(),
      provider_id: providerIdSchema.optional(),
      owner_user_id: z.string().min(1).max(128).optional(),
    }),
    response: z.object({ items: z.array(ConnectionView), total: z.number().int() }),
  },
  async (c, { query, principal }) => {
    const { rows, total } = await listConnections(
      c.env.DB,
      callerOf(principal),
      { provider_id: query.provider_id, owner_user_id: query.owner_user_id },
      query.limit ?? 50,
    );
    const now = Date.now();
    const items = await Promise.all(rows.map(async (row) => connectionView(row, await connectionStub(c.env, row.connection_id).health(now))));
    return { items, total };
  },
);

addRoute(
  connectorsRouter,
  {
    method: "get",
    path: "/api/connectors/connections/{connection_id}",
    summary: "Read a connection (never its tokens)",
    ...DOOR,
    params: connectionParams,
    response: ConnectionView,
    errors: [404],
  },
  async (c, { params, principal }) => {
    const row = await visibleConnection(c.env.DB, callerOf(principal), params.connection_id);
    return connectionView(row, await connectionStub(c.env, row.connection_id).health(Date.now()));
  },
);

addRoute(
  connectorsRouter,
  {
    method: "patch",
    path: "/api/connectors/connections/{connection_id}/sub-services",
    summary: "Change a connection's sub-services: narrowing is immediate, widening needs re-consent",
    description:
      "Body `{sub_services}` (the whole new set). A subset of the current set applies at once (`kind: narrowed`, or `unchanged`); the tokens keep what the provider granted until the next reconnect. A set with any sub-service the connection does not have answers `kind: reauthorization_required` with an `authorization` (as the start door's) for the new set: the connection changes only when that authorization completes (`kind: widened`).",
    ...DOOR,
    params: connectionParams,
    body: z.object({ sub_services: subServicesSchema }).strict(),
    response: z.object({
      kind: z.enum(["unchanged", "narrowed", "reauthorization_required"]),
      connection: ConnectionView,
      authorization: AuthorizationView.nullable(),
    }),
    errors: [404, 409],
  },
  async (c, { params, body, principal }) => {
    const settings = c.get("settings");
    const row = await visibleConnection(c.env.DB, callerOf(principal), params.connection_id);
    const provider = providerOfConnection(c, row.provider_id);
    checkSubServices(provider, body.sub_services);
    const stub = connectionStub(c.env, row.connection_id);
    const widening = body.sub_services.some((s) => !row.sub_services.includes(s));
    if (widening) {
      const authorization = await beginAuthorization(
        c.env,
        settings,
        callerOf(principal),
        { purpose: "widen", provider, sub_services: body.sub_services, connection_id: row.connection_id },
        Date.now(),
      );
      return { kind: "reauthorization_required" as const, connection: connectionView(row, await stub.health(Date.now())), authorization };
    }
    if (body.sub_services.length === row.sub_services.length) {
      return { kind: "unchanged" as const, connection: connectionView(row, await stub.health(Date.now())), authorization: null };
    }
    const updated = await updateConnection(c.env.DB, row.connection_id, body.sub_services, scopesFor(provider, body.sub_services), new Date().toISOString());
    if (!updated) throw connectionNotFound();
    return { kind: "narrowed" as const, connection: connectionView(updated, await stub.health(Date.now())), authorization: null };
  },
);

addRoute(
  connectorsRouter,
  {
    method: "post",
    path: "/api/connectors/connections/{connection_id}/reconnect",
    summary: "Re-authorize a connection: answers a fresh authorization URL for the same connection",
    description: "No body (or `{}`). Completing the authorization replaces the connection's tokens (`kind: reconnected`); until then the old ones stay in use.",
    ...DOOR,
    params: connectionParams,
    body: z.object({}).strict(),
    bodyOptional: true,
    response: AuthorizationView,
    errors: [404, 409],
  },
  async (c, { params, principal }) => {
    const settings = c.get("settings");
    const row = await visibleConnection(c.env.DB, callerOf(principal), params.connection_id);
    const provider = providerOfConnection(c, row.provider_id);
    return beginAuthorization(
      c.env,
      settings,
      callerOf(principal),
      { purpose: "reconnect", provider, sub_services: row.sub_services, connection_id: row.connection_id },
      Date.now(),
    );
  },
);

addRoute(
  connectorsRouter,
  {
    method: "delete",
    path: "/api/connectors/connections/{connection_id}",
    summary: "Delete a connection and its tokens",
    description:
      "Erases the tokens, the listing row and any open authorization for it. Tools whose headers reference it fail at dispatch from then on. The provider is not called (revoke the grant at the provider if it must end there too).",
    ...DOOR,
    params: connectionParams,
    response: z.object({ removed: z.literal(true), connection_id: z.string() }),
    errors: [404],
  },
  async (c, { params, principal }) => {
    const row = await visibleConnection(c.env.DB, callerOf(principal), params.connection_id);
    // Tokens first: a failure after this leaves a listing row whose health reads `missing`, and a retry finishes.
    await connectionStub(c.env, row.connection_id).erase();
    await deleteConnection(c.env.DB, row.connection_id);
    return { removed: true as const, connection_id: row.connection_id };
  },
);

/** Connections re-sealed side by side, per batch. */
const RESEAL_PARALLEL = 10;

addRoute(
  connectorsRouter,
  {
    method: "post",
    path: "/api/connectors/tokens/reencrypt",
    summary: "Re-seal every stored token under the current encryption key (admin)",
    description:
      "After rotating CONNECTORS_ENCRYPTION_KEY (the old key moved to CONNECTORS_ENCRYPTION_KEY_PREVIOUS), re-seals every connection's tokens and every open authorization's verifier under the new key. Answers counts: re-sealed, already current, missing (no tokens) and unopenable (no configured key opens them: such a connection must reconnect). Once `unopenable` is 0 the previous key may be removed.",
    ...DOOR,
    auth: { tag: "connectors", admin: true },
    body: z.object({}).strict(),
    bodyOptional: true,
    response: z.object({
      current_key_id: z.string(),
      connections: z.object({
        total: z.number().int(),
        resealed: z.number().int(),
        already_current: z.number().int(),
        missing: z.number().int(),
        unopenable: z.number().int(),
      }),
      authorizations: z.object({ resealed: z.number().int(), dropped: z.number().int() }),
    }),
  },
  async (c) => {
    const ring = await keyRingOf(c.get("settings").connectors.keys);
    const counts = { total: 0, resealed: 0, already_current: 0, missing: 0, unopenable: 0 };
    let cursor = "";
    for (;;) {
      const ids = await connectionIdsAfter(c.env.DB, cursor, 100);
      if (!ids.length) break;
      cursor = ids[ids.length - 1];
      for (let i = 0; i < ids.length; i += RESEAL_PARALLEL) {
        const outcomes = await Promise.all(ids.slice(i, i + RESEAL_PARALLEL).map((id) => connectionStub(c.env, id).reseal(ring)));
        for (const o of outcomes) {
          counts.total += 1;
          if (o === "resealed") counts.resealed += 1;
          else if (o === "current") counts.already_current += 1;
          else if (o === "missing") counts.missing += 1;
          else counts.unopenable += 1;
        }
      }
    }
    const authorizations = await resealStarts(c.env.DB, ring, Date.now());
    return { current_key_id: ring.current.id, connections: counts, authorizations };
  },
);

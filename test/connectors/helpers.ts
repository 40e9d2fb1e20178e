/**
 * Shared pieces of the connectors tests: a providers document pointing at fake hosts, the vars
 * that configure it, a scripted fake OAuth provider answering at the network edge, and a flow
 * helper that starts and completes a connection.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import type { ConnectorConnection } from "../../durable-objects/connector-connection";
import { sha256Hex } from "../../src/access-control/crypto";
import { expect } from "vitest";
import { codeChallengeS256 } from "../../src/connectors/pkce";
import { keyRingOf } from "../../src/connectors/sealing";
import { answerOnly, fakeNetwork, type NetCall } from "../helpers/network";
import { admin, mintKey } from "../helpers/http";
import { callWith, settingsOf } from "../targets/helpers";
import { must } from "../../src/platform/must";

export const TOKEN_URL = "https://oauth.fake/token";
export const AUTHORIZE_URL = "https://oauth.fake/authorize";
export const TOOL_URL = "https://tools.fake/run";
export const AGENT_URL = "https://agents.fake/turn";
export const REDIRECT_URI = "https://app.example/oauth/callback";
export const CLIENT_ID = "acme-client-id";
export const CLIENT_SECRET = "acme-client-secret-VALUE";

export const PROVIDERS = [
  {
    id: "acme",
    display_name: "Acme Suite",
    description: "Mail, calendar and files",
    icon_url: "https://oauth.fake/icon.png",
    kind: "oauth",
    category: "productivity",
    sub_services: [
      { id: "mail", display_name: "Mail", scopes: ["mail.read"] },
      { id: "calendar", display_name: "Calendar", description: "Events", scopes: ["cal.read", "cal.write"] },
      { id: "files", display_name: "Files", scopes: ["files", "mail.read"] },
    ],
    oauth: {
      authorization_endpoint: AUTHORIZE_URL,
      token_endpoint: TOKEN_URL,
      client_id_env: "ACME_CLIENT_ID",
      client_secret_env: "ACME_CLIENT_SECRET",
      authorize_params: { prompt: "consent" },
    },
    // Where its connections' tokens may be sent: the fake tool and agent endpoints.
    api_origins: [new URL(TOOL_URL).origin, new URL(AGENT_URL).origin],
  },
  {
    id: "plain",
    display_name: "Plain",
    icon_url: "https://plain.fake/icon.png",
    kind: "none",
    origin: "community",
    sub_services: [{ id: "all", display_name: "Everything" }],
    config_fields: [{ key: "api_base", label: "API base", target: "header" }],
  },
];

/** The test env plus a configured connector area (the wrangler.toml defaults are GitHub's example). */
export const VARS: Record<string, unknown> = {
  CONNECTORS_PROVIDERS: JSON.stringify(PROVIDERS),
  CONNECTORS_OAUTH_REDIRECT_URI: REDIRECT_URI,
  ACME_CLIENT_ID: CLIENT_ID,
  ACME_CLIENT_SECRET: CLIENT_SECRET,
};

export const OLD_KEY = String((env as unknown as Record<string, unknown>).CONNECTORS_ENCRYPTION_KEY);
export const NEW_KEY = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))));

export function call(method: string, path: string, opts: { key?: string; body?: unknown } = {}, vars: Record<string, unknown> = VARS) {
  return callWith(vars, method, path, opts);
}

export async function ring(vars: Record<string, unknown> = VARS) {
  return keyRingOf(settingsOf(vars).connectors.keys);
}

/** What the fake provider issues next, per grant type. */
export interface Issue {
  expires_in?: number | null;
  refresh?: boolean;
  /** Answer this status (with `{error}`) instead of tokens. */
  fail?: { status: number; error: string };
  /** Held until released (to overlap refreshes). */
  hold?: Promise<void>;
}

/**
 * A fake OAuth provider and tool endpoint at the network edge. `consent` plays the user's browser
 * at the authorization endpoint: it checks the URL's parameters and mints a code tied to its
 * PKCE challenge; the token endpoint checks the client's credentials and the verifier.
 */
export function fakeProvider() {
  const codes = new Map<string, { challenge: string; redirect_uri: string; scope: string }>();
  const refreshTokens = new Set<string>();
  let n = 0;
  const next = { code: {} as Issue, refresh: {} as Issue };
  const tokenCalls: Array<{ grant_type: string; params: URLSearchParams; authorization: string | null }> = [];
  const toolCalls: NetCall[] = [];
  const issued: string[] = [];

  async function token(req: Request, body: string): Promise<Response> {
    const params = new URLSearchParams(body);
    tokenCalls.push({ grant_type: params.get("grant_type") ?? "", params, authorization: req.headers.get("authorization") });
    expect(req.headers.get("authorization")).toBe(`Basic ${btoa(`${CLIENT_ID}:${CLIENT_SECRET}`)}`);
    expect(req.headers.get("content-type")).toBe("application/x-www-form-urlencoded");
    const grant = params.get("grant_type");
    const plan = grant === "refresh_token" ? next.refresh : next.code;
    if (plan.hold) await plan.hold;
    if (plan.fail) return Response.json({ error: plan.fail.error, error_description: `refused ${CLIENT_SECRET}` }, { status: plan.fail.status });
    if (grant === "authorization_code") {
      const c = codes.get(params.get("code") ?? "");
      if (!c) return Response.json({ error: "invalid_grant" }, { status: 400 });
      codes.delete(must(params.get("code"), 'params.get("code")'));
      if (c.redirect_uri !== params.get("redirect_uri")) return Response.json({ error: "invalid_grant" }, { status: 400 });
      if ((await codeChallengeS256(params.get("code_verifier") ?? "")) !== c.challenge) return Response.json({ error: "invalid_grant" }, { status: 400 });
    } else if (grant === "refresh_token") {
      if (!refreshTokens.has(params.get("refresh_token") ?? "")) return Response.json({ error: "invalid_grant" }, { status: 400 });
    } else {
      return Response.json({ error: "unsupported_grant_type" }, { status: 400 });
    }
    n += 1;
    const access = `at-${n}-${crypto.randomUUID()}`;
    issued.push(access);
    const answer: Record<string, unknown> = { access_token: access, token_type: "Bearer", scope: "granted" };
    if (plan.expires_in !== null) answer.expires_in = plan.expires_in ?? 3600;
    if (plan.refresh !== false) {
      const rt = `rt-${n}-${crypto.randomUUID()}`;
      refreshTokens.add(rt);
      issued.push(rt);
      answer.refresh_token = rt;
    }
    return Response.json(answer);
  }

  const edge = fakeNetwork(
    answerOnly({
      [`POST ${TOKEN_URL}`]: token,
      [`POST ${TOOL_URL}`]: (_req, _body, calls) => {
        toolCalls.push(must(calls.at(-1), "the tool call"));
        return Response.json({ ok: true, authorization: "seen" });
      },
      [`POST ${AGENT_URL}`]: (_req, _body, calls) => {
        toolCalls.push(must(calls.at(-1), "the agent call"));
        return Response.json({ text: "the agent answered" });
      },
    }),
  );

  return {
    edge,
    tokenCalls,
    toolCalls,
    /** Every token the provider issued (access and refresh): none may show in any answer. */
    issued,
    next,
    /** The access token issued most recently. */
    lastAccess: () =>
      must(
        [...issued].reverse().find((t) => t.startsWith("at-")),
        "the item found",
      ),
    /** The user consents at the authorization URL: answers the code and state the redirect carries. */
    consent(authorizationUrl: string): { code: string; state: string; url: URL } {
      const url = new URL(authorizationUrl);
      expect(`${url.origin}${url.pathname}`).toBe(AUTHORIZE_URL);
      expect(url.searchParams.get("response_type")).toBe("code");
      expect(url.searchParams.get("client_id")).toBe(CLIENT_ID);
      expect(url.searchParams.get("code_challenge_method")).toBe("S256");
      const code = `code-${crypto.randomUUID()}`;
      codes.set(code, {
        challenge: must(url.searchParams.get("code_challenge"), 'url.searchParams.get("code_challenge")'),
        redirect_uri: must(url.searchParams.get("redirect_uri"), 'url.searchParams.get("redirect_uri")'),
        scope: must(url.searchParams.get("scope"), 'url.searchParams.get("scope")'),
      });
      return { code, state: must(url.searchParams.get("state"), 'url.searchParams.get("state")'), url };
    },
  };
}

export type FakeProvider = ReturnType<typeof fakeProvider>;

/** Starts and completes a connection as `key` (admin by default). */
export async function connect(fake: FakeProvider, opts: { key?: string; sub_services?: string[]; vars?: Record<string, unknown> } = {}) {
  const key = opts.key ?? (await admin());
  const started = await call(
    "POST",
    "/api/connectors/connections/start",
    { key, body: { provider_id: "acme", sub_services: opts.sub_services ?? ["mail"] } },
    opts.vars,
  );
  expect(started.status, started.text).toBe(200);
  const { code, state } = fake.consent(started.body.data.authorization_url);
  const done = await call("POST", "/api/connectors/oauth/complete", { key, body: { state, code } }, opts.vars);
  expect(done.status, done.text).toBe(200);
  return { id: done.body.data.connection.connection_id as string, started, done };
}

/** A non-admin key with the connectors grant (and tools, to declare nothing: declaring is admin-only). */
export function connectorsUser(scopes: string[] = ["connectors:write"]) {
  return mintKey({ scopes });
}

/** No answer text may carry any token the provider issued, nor the client secret. */
export function expectNoSecrets(text: string, fake: FakeProvider): void {
  for (const t of fake.issued) expect(text).not.toContain(t);
  expect(text).not.toContain(CLIENT_SECRET);
}

/** The ConnectorConnection object of `connectionId`, for runInDurableObject. */
export function objectOf(connectionId: string) {
  return env.CONNECTIONS.get(env.CONNECTIONS.idFromName(connectionId)) as unknown as DurableObjectStub<ConnectorConnection>;
}

/** Everything the connection's object stores: every table's rows, as plain objects. */
export function storedRows(connectionId: string): Promise<Array<Record<string, unknown>>> {
  return runInDurableObject(objectOf(connectionId), async (_instance: ConnectorConnection, state) => {
    const tables = state.storage.sql
      .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\' AND name NOT LIKE 'sqlite%'")
      .toArray();
    return tables.flatMap((t) =>
      state.storage.sql
        .exec<Record<string, SqlStorageValue>>(`SELECT * FROM "${t.name}"`)
        .toArray()
        .map((r) => ({ table: t.name, ...r })),
    );
  });
}

/** The open start row of `state` (looked up by its hash), or null. */
export async function startRow(state: string): Promise<Record<string, unknown> | null> {
  return env.DB.prepare("SELECT * FROM connector_oauth_starts WHERE state_hash = ?")
    .bind(await sha256Hex(state))
    .first();
}

/** Runs a tool through the admin door with the connector vars. */
export async function runTool(tool: string, args: Record<string, unknown> = {}, vars: Record<string, unknown> = VARS) {
  return call("POST", "/api/run-tool", { key: await admin(), body: { tool_name: tool, arguments: args } }, vars);
}

/** Declares an HTTP tool at TOOL_URL with `headers`. */
export async function declareTool(title: string, headers: Record<string, unknown>, vars: Record<string, unknown> = VARS) {
  return call(
    "POST",
    "/api/tools-config/entries",
    { key: await admin(), body: { title, kind: "http", description: "uses a connection", url: TOOL_URL, headers } },
    vars,
  );
}

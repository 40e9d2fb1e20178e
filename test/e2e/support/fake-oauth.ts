/**
 * A fake OAuth 2.0 provider for end-to-end tests (docs/connectors.md): an HTTPS server on
 * 127.0.0.1 under the test PKI (tls.ts), so it can stand in for a provider whose endpoints the
 * providers document requires to be https. It serves
 *
 *   GET  /authorize  the user's consent: checks the authorization URL's parameters, mints a code
 *                    bound to the PKCE challenge and redirect URI, and redirects (302) back to the
 *                    redirect URI with `code` and `state`, as a real provider does after consent;
 *   POST /token      the code exchange (client authenticated with HTTP Basic, the verifier checked
 *                    against the challenge, the code single use) and the refresh grant (refresh
 *                    tokens rotate: each is single use);
 *   POST /resource   a protected API: answers 200 only for an access token it issued that has not
 *                    expired, so an HTTP tool pointed here proves it sent a live token.
 *
 * Every token it issues is recorded in `issued`, so a test can check none ever shows in an answer.
 */
import { createHash, randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { request } from "node:https";
import { restartableHttps } from "./restartable-https";
import type { TestPki } from "./tls";
import { must } from "../../../src/platform/must";

export interface FakeOAuthOptions {
  clientId: string;
  clientSecret: string;
  /** `expires_in` of every access token issued (seconds). */
  accessTtlSeconds: number;
}

export interface TokenRequestRecord {
  grant_type: string;
  params: Record<string, string>;
  status: number;
}

export interface ResourceRequestRecord {
  authorization: string | null;
  status: number;
  body: string;
}

export interface FakeOAuth {
  origin: string;
  authorizeUrl: string;
  tokenUrl: string;
  resourceUrl: string;
  readonly tokenRequests: TokenRequestRecord[];
  readonly resourceRequests: ResourceRequestRecord[];
  /** Every access and refresh token issued, and every code minted. */
  readonly issued: string[];
  /** Plays the user at the authorization URL: answers what the redirect back carries. */
  consent: (authorizationUrl: string) => Promise<{ code: string; state: string; location: URL }>;
  stop: () => Promise<void>;
}

const s256 = (verifier: string) => createHash("sha256").update(verifier, "ascii").digest("base64url");

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json", "cache-control": "no-store" });
  res.end(JSON.stringify(body));
}

export async function startFakeOAuth(pki: TestPki, opts: FakeOAuthOptions): Promise<FakeOAuth> {
  const codes = new Map<string, { challenge: string; redirect_uri: string; scope: string }>();
  const refreshTokens = new Set<string>();
  const accessTokens = new Map<string, { expiresAt: number; n: number }>();
  const tokenRequests: TokenRequestRecord[] = [];
  const resourceRequests: ResourceRequestRecord[] = [];
  const issued: string[] = [];
  let n = 0;

  function issue(res: ServerResponse, scope: string): void {
    n += 1;
    const access = `e2e-at-${n}-${randomUUID()}`;
    const refresh = `e2e-rt-${n}-${randomUUID()}`;
    accessTokens.set(access, { expiresAt: Date.now() + opts.accessTtlSeconds * 1000, n });
    refreshTokens.add(refresh);
    issued.push(access, refresh);
    json(res, 200, { access_token: access, token_type: "Bearer", expires_in: opts.accessTtlSeconds, refresh_token: refresh, scope });
  }

  async function token(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const params = Object.fromEntries(new URLSearchParams(await readBody(req)));
    const record: TokenRequestRecord = { grant_type: params.grant_type ?? "", params, status: 200 };
    tokenRequests.push(record);
    const refuse = (status: number, error: string) => {
      record.status = status;
      json(res, status, { error });
    };
    const expected = `Basic ${Buffer.from(`${opts.clientId}:${opts.clientSecret}`).toString("base64")}`;
    if (req.headers.authorization !== expected) return refuse(401, "invalid_client");
    if (params.grant_type === "authorization_code") {
      const c = codes.get(params.code ?? "");
      if (!c) return refuse(400, "invalid_grant");
      codes.delete(must(params.code, "params.code"));
      if (c.redirect_uri !== params.redirect_uri || s256(params.code_verifier ?? "") !== c.challenge) return refuse(400, "invalid_grant");
      return issue(res, c.scope);
    }
    if (params.grant_type === "refresh_token") {
      if (!refreshTokens.delete(params.refresh_token ?? "")) return refuse(400, "invalid_grant");
      return issue(res, "rotated");
    }
    return refuse(400, "unsupported_grant_type");
  }

  function authorize(req: IncomingMessage, res: ServerResponse): void {
    const q = new URL(req.url ?? "/", "https://fake").searchParams;
    const ok =
      q.get("response_type") === "code" &&
      q.get("client_id") === opts.clientId &&
      q.get("code_challenge_method") === "S256" &&
      /^[A-Za-z0-9_-]{43}$/.test(q.get("code_challenge") ?? "") &&
      !!q.get("state") &&
      !!q.get("redirect_uri") &&
      !!q.get("scope");
    if (!ok) return json(res, 400, { error: "invalid_request" });
    const code = `e2e-code-${randomUUID()}`;
    issued.push(code);
    codes.set(code, {
      challenge: must(q.get("code_challenge"), 'q.get("code_challenge")'),
      redirect_uri: must(q.get("redirect_uri"), 'q.get("redirect_uri")'),
      scope: must(q.get("scope"), 'q.get("scope")'),
    });
    const back = new URL(must(q.get("redirect_uri"), 'q.get("redirect_uri")'));
    back.searchParams.set("code", code);
    back.searchParams.set("state", must(q.get("state"), 'q.get("state")'));
    res.writeHead(302, { location: back.toString() });
    res.end();
  }

  async function resource(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    const authorization = req.headers.authorization ?? null;
    const t = accessTokens.get(/^Bearer (.+)$/.exec(authorization ?? "")?.[1] ?? "");
    const status = t && t.expiresAt > Date.now() ? 200 : 401;
    resourceRequests.push({ authorization, status, body });
    if (status === 200) json(res, 200, { ok: true, token_number: must(t, "t").n });
    else json(res, 401, { error: "invalid_token" });
  }

  const server = restartableHttps(pki, (req, res) => {
    const path = new URL(req.url ?? "/", "https://fake").pathname;
    const route = `${req.method} ${path}`;
    const done = (p: Promise<void> | void) =>
      Promise.resolve(p).catch(() => {
        if (!res.headersSent) json(res, 500, { error: "server_error" });
      });
    if (route === "GET /authorize") return void done(authorize(req, res));
    if (route === "POST /token") return void done(token(req, res));
    if (route === "POST /resource") return void done(resource(req, res));
    json(res, 404, { error: "not_found" });
  });
  await server.start();
  const origin = `https://127.0.0.1:${server.port}`;

  function consent(authorizationUrl: string): Promise<{ code: string; state: string; location: URL }> {
    return new Promise((resolve, reject) => {
      const req = request(authorizationUrl, { method: "GET", ca: pki.ca }, (res) => {
        res.resume();
        const location = res.headers.location;
        if (res.statusCode !== 302 || !location) return reject(new Error(`the fake provider refused the authorization URL (HTTP ${res.statusCode})`));
        const back = new URL(location);
        resolve({
          code: must(back.searchParams.get("code"), 'back.searchParams.get("code")'),
          state: must(back.searchParams.get("state"), 'back.searchParams.get("state")'),
          location: back,
        });
      });
      req.on("error", reject);
      req.end();
    });
  }

  return {
    origin,
    authorizeUrl: `${origin}/authorize`,
    tokenUrl: `${origin}/token`,
    resourceUrl: `${origin}/resource`,
    tokenRequests,
    resourceRequests,
    issued,
    consent,
    stop: () => server.stop(),
  };
}

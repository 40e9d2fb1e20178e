/**
 * A weak bootstrap token is no token (src/access-control/bootstrap-token.ts; docs/deploy.md): with
 * ACCESS_CONTROL_BOOTSTRAP_TOKEN short or published, `POST /api/keys/bootstrap` answers 501
 * `access-control-not-configured` saying why (never the value), mints nothing and counts no failed
 * attempt; `GET /api/login/methods` reports `bootstrap: false`.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { BOOTSTRAP_TOKEN_MIN_LENGTH, PUBLISHED_BOOTSTRAP_TOKENS, bootstrapTokenProblem } from "../../src/access-control/bootstrap-token";
import { BASE, fetchWithEnv, readResult } from "../helpers/http";
import { must } from "../../src/platform/must";

const PUBLISHED = "local-dev-bootstrap-token";
const SHORT = "a".repeat(BOOTSTRAP_TOKEN_MIN_LENGTH - 1);

async function bootstrapWith(token: unknown, sent: string, ip: string) {
  return readResult(
    await fetchWithEnv(
      { ...env, ACCESS_CONTROL_BOOTSTRAP_TOKEN: token },
      new Request(`${BASE}/api/keys/bootstrap`, {
        method: "POST",
        headers: { "content-type": "application/json", "cf-connecting-ip": ip },
        body: JSON.stringify({ user_id: "weak-root", bootstrap_token: sent }),
      }),
    ),
  );
}

async function methodsWith(token: unknown) {
  return readResult(await fetchWithEnv({ ...env, ACCESS_CONTROL_BOOTSTRAP_TOKEN: token }, new Request(`${BASE}/api/login/methods`)));
}

const keyCount = async () => must(await env.DB.prepare("SELECT COUNT(*) AS n FROM api_keys").first<{ n: number }>(), "the row").n;
const failures = async (ip: string) =>
  must(await env.DB.prepare("SELECT COUNT(*) AS n FROM auth_throttle WHERE client_ip = ?").bind(ip).first<{ n: number }>(), "the row").n;

describe("the bootstrap token rule", () => {
  it("accepts a long random token and refuses unset, short and published ones, naming the setting only", () => {
    expect(bootstrapTokenProblem(String(env.ACCESS_CONTROL_BOOTSTRAP_TOKEN))).toBeNull();
    expect(bootstrapTokenProblem("b".repeat(BOOTSTRAP_TOKEN_MIN_LENGTH))).toBeNull();
    expect(bootstrapTokenProblem(undefined)).toBe("ACCESS_CONTROL_BOOTSTRAP_TOKEN is not set");
    expect(bootstrapTokenProblem("")).toBe("ACCESS_CONTROL_BOOTSTRAP_TOKEN is not set");
    expect(bootstrapTokenProblem(SHORT)).toContain(`shorter than ${BOOTSTRAP_TOKEN_MIN_LENGTH} characters`);
    expect(PUBLISHED_BOOTSTRAP_TOKENS).toContain(PUBLISHED);
    for (const token of PUBLISHED_BOOTSTRAP_TOKENS) expect(bootstrapTokenProblem(token)).toContain("published value");
  });
});

describe("POST /api/keys/bootstrap with a weak token", () => {
  // First in this describe, on this file's empty D1: a published token would mint the first admin key.
  it.each([
    ["the token committed in wrangler.toml until now", PUBLISHED, "published value"],
    ["a token shorter than the minimum", SHORT, "shorter than 32 characters"],
  ])("refuses %s with 501 access-control-not-configured, even when the caller sends it; nothing minted, no failure counted", async (_label, token, why) => {
    const ip = `10.26.${Math.floor(Math.random() * 200)}.1`;
    expect(await keyCount()).toBe(0);
    const r = await bootstrapWith(token, token, ip);
    expect(r.status).toBe(501);
    expect(r.body.code).toBe("access-control-not-configured");
    expect(r.body.error).toContain("ACCESS_CONTROL_BOOTSTRAP_TOKEN");
    expect(r.body.error).toContain(why);
    expect(JSON.stringify(r.body)).not.toContain(token);
    expect(await keyCount()).toBe(0);
    expect(await failures(ip)).toBe(0);
    // A wrong guess is refused the same way: nothing tells it apart from the right one.
    expect((await bootstrapWith(token, "x".repeat(40), ip)).status).toBe(501);
  });

  it("GET /api/login/methods reports bootstrap false for a short or published token, true for the configured one", async () => {
    expect(await keyCount()).toBe(0);
    expect((await methodsWith(PUBLISHED)).body.data.bootstrap).toBe(false);
    expect((await methodsWith(SHORT)).body.data.bootstrap).toBe(false);
    expect((await methodsWith(env.ACCESS_CONTROL_BOOTSTRAP_TOKEN)).body.data.bootstrap).toBe(true);
  });

  it("the configured random token still mints the first admin key", async () => {
    const r = await bootstrapWith(env.ACCESS_CONTROL_BOOTSTRAP_TOKEN, String(env.ACCESS_CONTROL_BOOTSTRAP_TOKEN), "10.26.250.1");
    expect(r.status).toBe(200);
    expect(r.body.data.token).toMatch(/^sk-/);
  });
});

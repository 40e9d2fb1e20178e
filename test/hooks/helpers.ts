/** Shared by the hooks tests: register hooks, deliver to topics, sign like the providers do. */
import { createHmac } from "node:crypto";
import { expect } from "vitest";
import { admin, call, type CallResult } from "../helpers/http";

export function registerHook(body: Record<string, unknown>, key?: string): Promise<CallResult> {
  return (async () => call("POST", "/api/hooks", { key: key ?? (await admin()), body }))();
}

/** Registers and expects 200. */
export async function hook(body: Record<string, unknown>, key?: string): Promise<CallResult> {
  const r = await registerHook(body, key);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r;
}

/** Posts `body` (raw text) to topic `topic`'s public door, with no key unless `headers` carry one. */
export function deliver(topic: string, body: string, headers: Record<string, string> = {}): Promise<CallResult> {
  return call("POST", `/api/hooks/incoming/${topic}`, { rawBody: body, headers: { "content-type": "application/json", ...headers } });
}

/** GitHub's X-Hub-Signature-256 over `body`, computed with Node's crypto (not the service's code). */
export function githubSignature(secret: string, body: string): string {
  return `sha256=${createHmac("sha256", secret).update(body, "utf8").digest("hex")}`;
}

export async function bindVerifier(topic: string, body: Record<string, unknown>): Promise<CallResult> {
  const r = await call("PUT", `/api/hooks/topics/${topic}/verifier`, { key: await admin(), body });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r;
}

/**
 * The code sandbox's identity (docs/plugins.md "Sandbox"). The reference can run
 * operator code in a sandbox provider; this build has none, and a Worker cannot start one, so the
 * door says so honestly (decisions §15) and what one would take. There are no mutation doors.
 */
import { Hono } from "hono";
import { z } from "zod";
import type { AppEnv } from "../../platform/http/app-env";
import { addRoute } from "../../platform/http/route";

export const sandboxRouter = new Hono<AppEnv>();

export const SandboxView = z
  .object({
    present: z.literal(false),
    provider: z.null(),
    module: z.null(),
    sessions: z.array(z.never()),
    policy: z.null(),
    detail: z.string(),
    requires: z.array(z.string()),
  })
  .strict();
export type SandboxView = z.infer<typeof SandboxView>;

export const SANDBOX_VIEW: SandboxView = Object.freeze({
  present: false,
  provider: null,
  module: null,
  sessions: [],
  policy: null,
  detail:
    "No code sandbox is configured: this build runs no operator-supplied code. Tools are built-ins, declared HTTP tools and presets; agents are declared endpoints. Nothing here can start a sandbox session.",
  requires: [
    "an isolated runtime for untrusted code outside this Worker (e.g. Cloudflare Workers for Platforms dispatch namespaces, or Cloudflare Containers)",
    "a binding to it in wrangler.toml and a provider module in this build that starts, bounds and ends sessions",
    "a policy: CPU and memory limits, wall-clock timeout, outbound network through the address guard, and which keys may run code",
  ],
}) as SandboxView;

addRoute(
  sandboxRouter,
  {
    method: "get",
    path: "/api/sandbox",
    summary: "The code sandbox's identity and policy (none in this build)",
    description: "Always `present: false`, with what a sandbox would need (`requires`). No session is ever listed.",
    area: "sandbox",
    auth: { tag: "sandbox" },
    response: SandboxView,
  },
  () => SANDBOX_VIEW,
);

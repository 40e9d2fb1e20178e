/**
 * The hooks' public doors (platform-facts B6; docs/hooks.md "Firing"):
 *
 * - `POST /api/hooks/incoming/{topic}`: a provider's delivery. A topic with a verifier is checked
 *   over the raw body first and fails closed (401, one constant message); a topic without one is
 *   open to anyone by design (the hooks' bound keys are the only boundary, spec §5.5). A replayed
 *   delivery id answers 200 `already_seen` and fires nothing. `GET` on the same path is a ping for
 *   providers that check a URL before they send: it answers `{status: "ready"}` for any topic and
 *   fires nothing (a GET carries no signed body to verify).
 * - `GET|POST /api/hooks/trigger/{token}`: a trigger link. The token is the capability; every miss
 *   is one uniform 404.
 *
 * Declared public in the route table, so the OpenAPI document, the authorization matrix and the
 * fuzz suite cover them. The raw body is read once under the body cap and never parsed before it
 * is authenticated (src/hooks/deliveries.ts). A fire answers 202 `{status: "accepted", fired,
 * skipped}`; payload values are never echoed.
 */
import { Hono } from "hono";
import type { Context } from "hono";
import { z } from "zod";
import type { AppEnv } from "../../platform/http/app-env";
import { HttpError, describeFailure, serverError } from "../../platform/http/errors";
import { addPublicRoute } from "../../platform/http/route";
import type { FireAnswer } from "../fire";
import { receiveDelivery, receiveLinkCall } from "../deliveries";
import { HookTopic } from "../names";

export const hookTriggersRouter = new Hono<AppEnv>();

const FireAnswerSchema = z.union([
  z
    .object({
      status: z.literal("accepted"),
      fired: z.array(z.object({ hook: z.string(), run_id: z.string() }).strict()),
      skipped: z.array(z.object({ hook: z.string(), reason: z.string() }).strict()),
    })
    .strict(),
  z.object({ status: z.literal("already_seen") }).strict(),
]);

const ALREADY_SEEN = { status: 200, description: 'A replayed delivery id: `{status: "already_seen"}`, nothing fired.', schema: FireAnswerSchema };

/** 202 for a fire, 200 for a replay; a fault submitting a run is 503 so the provider redelivers. */
async function answer(c: Context<AppEnv>, fire: () => Promise<FireAnswer>): Promise<Response> {
  let out: FireAnswer;
  try {
    out = await fire();
  } catch (err) {
    if (err instanceof HttpError) throw err;
    throw serverError("hook_fire_failed", "temporarily unable to accept; redeliver later", {
      reason: `hooks: a fire could not be submitted: ${describeFailure(err)}`,
      retryAfterSeconds: 1,
    });
  }
  return c.json({ data: out }, out.status === "accepted" ? 202 : 200);
}

addPublicRoute(
  hookTriggersRouter,
  {
    method: "post",
    path: "/api/hooks/incoming/{topic}",
    summary: "Deliver an event to a topic: fires its hooks (public; verified when the topic has a verifier)",
    description:
      "Public. With a verifier bound to the topic the raw body is verified first (401 `signature verification failed` for anything that does not verify, whatever the reason); without one the topic is open to anyone, by design, and each hook's bound execution key is the only boundary. " +
      "The body must be JSON (or empty: payload null), at most 1 MiB. A delivery id (the verifier's: X-GitHub-Delivery, webhook-id, the Stripe event id, the generic binding's header; on an open topic X-Delivery-Id) seen within HOOKS_REPLAY_WINDOW_SECONDS answers 200 `{status: \"already_seen\"}` and fires nothing. " +
      'Otherwise 202 `{status: "accepted", fired: [{hook, run_id}], skipped: [{hook, reason}]}`: each fired hook is a background tool run (read it at GET /api/tool-runs/{run_id}); a condition that is not true or a jq error is a skip. A topic with no hooks answers 202 with nothing fired. 503 when a run could not be submitted (redeliver).',
    area: "hooks",
    auth: { public: true },
    store: "tool-runs",
    params: z.object({ topic: HookTopic }),
    rawBody: true,
    status: 202,
    response: FireAnswerSchema,
    alsoResponds: [ALREADY_SEEN],
    errors: [401, 503],
  },
  (c, { params, raw }) => answer(c, () => receiveDelivery(c.env, c.get("settings"), params.topic, raw ?? new Uint8Array(0), c.req.raw.headers, new Date())),
);

addPublicRoute(
  hookTriggersRouter,
  {
    method: "get",
    path: "/api/hooks/incoming/{topic}",
    summary: "Ping a topic's delivery URL (public): answers ready, fires nothing",
    description:
      'For providers that check a URL before sending. Answers `{status: "ready"}` for every topic, so it tells nothing about a topic; deliveries are POSTs.',
    area: "hooks",
    auth: { public: true },
    params: z.object({ topic: HookTopic }),
    response: z.object({ status: z.literal("ready") }).strict(),
  },
  () => ({ status: "ready" as const }),
);

const linkDescription =
  'Public: the token is the capability (and a valid api key too when the link was created with require_api_key). Every miss (malformed, unknown, expired or deleted token; a missing or invalid key on a link that requires one) is the same 404 `{"error":"not found"}`. ' +
  "Fires the link's topic's hooks as the link's execution key, with the link's tool_kwargs merged over each expr output and under each hook's own tool_kwargs. The payload is the JSON body (POST; empty: null) or the query parameters as an object of strings (GET). An X-Delivery-Id seen within HOOKS_REPLAY_WINDOW_SECONDS answers 200 `already_seen`. Answers as the topic door does.";

for (const method of ["get", "post"] as const) {
  addPublicRoute(
    hookTriggersRouter,
    {
      method,
      path: "/api/hooks/trigger/{token}",
      summary: method === "post" ? "Call a trigger link with a JSON payload (public)" : "Call a trigger link with query parameters as the payload (public)",
      description: linkDescription,
      area: "hooks",
      auth: { public: true },
      store: "tool-runs",
      // Any text: a malformed token is a miss like any other (404), never a 400 that tells them apart.
      params: z.object({ token: z.string() }),
      rawBody: method === "post",
      status: 202,
      response: FireAnswerSchema,
      alsoResponds: [ALREADY_SEEN],
      errors: [404, 503],
    },
    (c, { params, raw }) =>
      answer(c, () => receiveLinkCall(c.env, c.get("settings"), params.token, c.req.raw, method === "post" ? (raw ?? new Uint8Array(0)) : null, new Date())),
  );
}

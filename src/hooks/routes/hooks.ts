/**
 * Hooks (spec §4.11 "Hooks"; platform-facts B6; docs/hooks.md): register a hook on a
 * topic, list and delete hooks; bind and unbind a topic's verifier (admin); create, list and delete
 * trigger links. Tagged `hooks` (`hooks:read` for GETs, `hooks:write` for the rest; the verifier
 * doors are admin-only). Every fire is a background tool run, so these doors share the tool runs'
 * store gate: 501 `tool-runs-not-configured` without TOOL_RUNS_STORE_URL (as schedules do). The
 * public doors that fire hooks are in src/hooks/routes/triggers.ts.
 */
import { Hono } from "hono";
import { z } from "zod";
import { heldBy, holderOf } from "../../access-control/identity";
import type { Principal } from "../../access-control/principal";
import type { AppEnv } from "../../platform/http/app-env";
import { forbidden, notFound } from "../../platform/http/errors";
import { addRoute } from "../../platform/http/route";
import { deleteHook, getHook, listHooks } from "../hook-store";
import { HookTopic, TriggerLinkName } from "../names";
import { HookCreateBody, HookView, hookView } from "../record";
import { createTriggerLink, registerHook } from "../register";
import { TriggerLinkBody, TriggerLinkCreated, TriggerLinkView, deleteLink, getLink, linkView, listLinks } from "../trigger-links";
import { VERIFIERS, VERIFIER_KINDS } from "../verifiers";
import { VerifierBody, VerifierView, deleteVerifier, listVerifiers, putVerifier, verifierView } from "../verifier-store";

export const hooksRouter = new Hono<AppEnv>();

/**
 * A restricted caller may delete only what it created (403): its user_id made it (`at`: when the
 * creator was recorded), in its own key's lineage (src/access-control/identity.ts), so an earlier holder's
 * rows under the same user_id are not its own. An absent row is left to the door's 404.
 */
function refuseOthers(p: Principal, row: { created_by: string; at: string } | null): void {
  if (row && !heldBy(holderOf(p.key), row.created_by, row.at)) throw forbidden();
}

const DOOR = { area: "hooks", auth: { tag: "hooks" }, store: "tool-runs" } as const;
const ADMIN_DOOR = { area: "hooks", auth: { tag: "hooks", admin: true }, store: "tool-runs" } as const;

/** Any segment of the hooks grammar (a name that cannot exist is simply not found). */
const AnyName = z.object({ name: TriggerLinkName });

addRoute(
  hooksRouter,
  {
    method: "get",
    path: "/api/hooks/verifiers",
    summary: "The verifier kinds a topic can be bound to",
    description:
      "Each kind with the headers a delivery must carry, where its delivery id (the replay key) comes from, and whether a signed timestamp is checked (HOOKS_VERIFIER_TOLERANCE_SECONDS).",
    area: "hooks",
    auth: { tag: "hooks" },
    response: z.object({
      items: z.array(
        z
          .object({
            kind: z.enum(VERIFIER_KINDS),
            description: z.string(),
            signature_headers: z.array(z.string()),
            delivery_id: z.string(),
            timestamp_tolerance: z.boolean(),
          })
          .strict(),
      ),
      total: z.number().int(),
    }),
  },
  () => {
    const items = VERIFIER_KINDS.map((k) => VERIFIERS[k].info);
    return { items, total: items.length };
  },
);

addRoute(
  hooksRouter,
  {
    method: "put",
    path: "/api/hooks/topics/{topic}/verifier",
    summary: "Bind (or re-bind) a topic's verifier (admin)",
    description:
      'Body `{kind, secret, signature_header?, delivery_header?}`; kinds: github, stripe, standard_webhooks, hmac_sha256 (the header options are the generic kind\'s only). `secret` is the value (sealed at rest with SETTINGS_ENCRYPTION_KEY: 501 settings-encryption-not-configured without it) or `{"env": "SECRET_…"}`; it is never shown back. ' +
      "From then on every delivery to `POST /api/hooks/incoming/{topic}` is verified over its raw body before anything parses it, and one that does not verify is 401.",
    ...ADMIN_DOOR,
    params: z.object({ topic: HookTopic }),
    body: VerifierBody,
    response: VerifierView,
  },
  async (c, { params, body, principal }) => {
    const stored = await putVerifier(c.env.DB, c.env, c.get("settings"), params.topic, body, principal.key.user_id, new Date().toISOString());
    return verifierView(stored);
  },
);

addRoute(
  hooksRouter,
  {
    method: "delete",
    path: "/api/hooks/topics/{topic}/verifier",
    summary: "Unbind a topic's verifier (admin): the topic is open to anyone again",
    description: "Unknown binding 404. Without a verifier anyone can fire the topic's hooks; their execution keys are then the only boundary.",
    ...ADMIN_DOOR,
    params: z.object({ topic: HookTopic }),
    response: z.object({ removed: z.literal(true), topic: z.string() }).strict(),
    errors: [404],
  },
  async (c, { params }) => {
    if (!(await deleteVerifier(c.env.DB, params.topic))) throw notFound("verifier not found");
    return { removed: true as const, topic: params.topic };
  },
);

addRoute(
  hooksRouter,
  {
    method: "post",
    path: "/api/hooks/trigger-links",
    summary: "Create a trigger link: a capability URL that fires a topic's hooks",
    description:
      "Body `{topic, execution_key, name?, ttl_seconds, tool_kwargs?, require_api_key?}`. `ttl_seconds` is required: a positive whole number of seconds, or null for a link kept until deleted. The execution key is bound by pass-role (as a hook's) and every fire through the link runs as it. " +
      "Answers `{name, trigger_path, token, topic, expires_at}`: the token is shown this once (only its SHA-256 is kept). A live link of the same name is 409. Calling `trigger_path` (GET or POST) fires the topic's hooks with the link's `tool_kwargs` merged over each expr output and under the hook's own; every miss is a uniform 404.",
    ...DOOR,
    stores: [{ kind: "key", at: "execution_key" }],
    body: TriggerLinkBody,
    response: TriggerLinkCreated,
    errors: [404, 409],
  },
  async (c, { body, principal }) => createTriggerLink(c.env.DB, principal, body, new Date()),
);

addRoute(
  hooksRouter,
  {
    method: "get",
    path: "/api/hooks/trigger-links",
    summary: "List live trigger links (never their tokens)",
    description: "By name. A restricted caller (an owned key) lists only the links it created.",
    ...DOOR,
    pinnable: false,
    response: z.object({ items: z.array(TriggerLinkView), total: z.number().int() }),
  },
  async (c, { principal: p }) => {
    const items = (await listLinks(c.env.DB, p.restricted ? holderOf(p.key) : null, Date.now())).map(linkView);
    return { items, total: items.length };
  },
);

addRoute(
  hooksRouter,
  {
    method: "delete",
    path: "/api/hooks/trigger-links/{name}",
    summary: "Delete a trigger link: its URL answers 404 from now on",
    description: "Unknown or expired link 404. A restricted caller may delete only links it created (403).",
    ...DOOR,
    params: AnyName,
    response: z.object({ removed: z.literal(true), name: z.string() }).strict(),
    errors: [403, 404],
  },
  async (c, { params, principal: p }) => {
    const now = Date.now();
    if (p.restricted) {
      const link = await getLink(c.env.DB, params.name, now);
      refuseOthers(p, link && { created_by: link.created_by, at: link.created_at });
    }
    if (!(await deleteLink(c.env.DB, params.name, now))) throw notFound("trigger link not found");
    return { removed: true as const, name: params.name };
  },
);

addRoute(
  hooksRouter,
  {
    method: "post",
    path: "/api/hooks",
    summary: "Register (or replace) a hook: fire a tool when a delivery on a topic matches",
    description:
      "Body `{name, topic, tool, execution_key, tool_kwargs?, condition | condition_id + condition_kwargs, expr | expr_id + expr_kwargs, state_binding?}`. `condition` (jq over the delivery's payload) must emit exactly `true` for the hook to fire (absent: always); `expr` (jq over the payload) emits the tool input's base object (absent: `{}`); the input is expr output ← a trigger link's tool_kwargs ← the hook's tool_kwargs (shallow, strongest last). " +
      "The execution key is bound by pass-role (your own key or one you own; an admin any key: absent 404; non-admin refusals a uniform 403; a condition reading `.request` 400) and must be allowed to run the tool now (403); every fire's run re-checks it live. Re-posting a name replaces that hook. " +
      "Answers `{registered, name}`, plus `warning` when the topic has no verifier (anyone can fire it: the bound key is the only boundary) or the key is an admin or broad key. " +
      "Order: body 400 → store 501 → unknown tool 404 → condition/expr 400 → pass-role 403/404/400 → the key's run grant 403 → a restricted caller replacing another identity's hook 403 → a full topic (32 hooks) 409 → state_binding 501/404/400.",
    ...DOOR,
    stores: [
      { kind: "tool", at: "tool" },
      { kind: "key", at: "execution_key" },
      { kind: "state", at: "state_binding.states[].state" },
    ],
    body: HookCreateBody,
    response: z.object({ registered: z.literal(true), name: z.string(), warning: z.string().optional() }).strict(),
    errors: [403, 404, 409],
  },
  async (c, { body, principal }) => registerHook(c.env, c.get("settings"), principal, body, new Date()),
);

addRoute(
  hooksRouter,
  {
    method: "get",
    path: "/api/hooks",
    summary: "List hooks by name, with how each topic is triggered",
    description:
      "Filter `topic` (exact). Unpaged: `{items, total, topic_verifiers, trigger_auth}`. `topic_verifiers` maps each listed topic that has a verifier to its kind; `trigger_auth` maps every listed topic to how `POST /api/hooks/incoming/{topic}` is authenticated: `verifier:<kind>`, or `open` (anyone can fire it; the hooks' execution keys are the only boundary). Trigger links fire any topic with their token. A restricted caller (an owned key) lists only the hooks it created.",
    ...DOOR,
    pinnable: false,
    query: z.object({ topic: HookTopic.optional() }),
    response: z.object({
      items: z.array(HookView),
      total: z.number().int(),
      topic_verifiers: z.record(z.string(), z.enum(VERIFIER_KINDS)),
      trigger_auth: z.record(z.string(), z.string()),
    }),
  },
  async (c, { query, principal: p }) => {
    const rows = await listHooks(c.env.DB, { topic: query.topic, createdBy: p.restricted ? holderOf(p.key) : undefined });
    const topics = [...new Set([...(query.topic ? [query.topic] : []), ...rows.map((r) => r.topic)])].sort();
    const verifiers = new Map((await listVerifiers(c.env.DB, topics)).map((v) => [v.topic, v.kind]));
    return {
      items: rows.map(hookView),
      total: rows.length,
      topic_verifiers: Object.fromEntries(
        topics.flatMap((t) => {
          const v = verifiers.get(t);
          return v === undefined ? [] : [[t, v]];
        }),
      ),
      trigger_auth: Object.fromEntries(topics.map((t) => [t, verifiers.has(t) ? `verifier:${verifiers.get(t)}` : "open"])),
    };
  },
);

addRoute(
  hooksRouter,
  {
    method: "delete",
    path: "/api/hooks/{name}",
    summary: "Delete a hook: no fire after this",
    description: "Unknown name 404. A restricted caller may delete only hooks it created (403). Runs already submitted go on.",
    ...DOOR,
    params: AnyName,
    response: z.object({ removed: z.literal(true), name: z.string() }).strict(),
    errors: [403, 404],
  },
  async (c, { params, principal: p }) => {
    if (p.restricted) {
      // A hook's creator is recorded again, with `updated_at`, whenever it is registered anew.
      const hook = await getHook(c.env.DB, params.name);
      refuseOthers(p, hook && { created_by: hook.created_by, at: hook.updated_at });
    }
    if (!(await deleteHook(c.env.DB, params.name))) throw notFound("hook not found");
    return { removed: true as const, name: params.name };
  },
);

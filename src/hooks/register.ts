/**
 * Registering a hook and creating a trigger link (docs/hooks.md). Order of a hook's
 * registration, each step refusing before anything is written: the body (400, the route pipeline)
 * → the store (501) → the tool exists (404) → `condition` and `expr` render and compile (400) →
 * pass-role binds the execution key (decisions §2: a non-admin gets a uniform 403 for a key absent
 * or not its own; an admin 404 for an absent key; a condition reading `.request` 400) → the bound
 * key may run the tool now (the live authorizer a fire's run uses; 403) → a restricted caller may
 * not replace another identity's hook (403) → the topic has room (409) → the caller holds the
 * states grants its `state_binding` needs (403; src/states/binding-refs.ts) → the binding is
 * checked as a target config's is (501/404/400; its templates attached on use) → write.
 */
import { heldBy, holderOf } from "../access-control/identity";
import { type KeyRecord, findByUserId } from "../access-control/key-store";
import { authorizeTurn, bindExecutionKey } from "../access-control/pass-role";
import type { Principal } from "../access-control/principal";
import { grantsTag, isAdminKey } from "../access-control/scopes";
import type { Env } from "../platform/env";
import { HttpError, conflict, forbidden, notFound } from "../platform/http/errors";
import type { Settings } from "../platform/settings/settings";
import { checkRunBinding } from "../tool-runs/binding-check";
import { assertMayBind } from "../states/binding-refs";
import { runInputSchema } from "../tool-runs/submit";
import { MAX_HOOKS_PER_TOPIC, countTopicHooks, getHook, upsertHookStatement } from "./hook-store";
import { hookProgram } from "./programs";
import type { HookCreateBody, HookRow } from "./record";
import { type NewLink, type TriggerLinkBody, type TriggerLinkCreated, insertLink, triggerPath } from "./trigger-links";
import { getVerifier } from "./verifier-store";

/** Said in the answer when anyone may fire the hook: spec §5.5, the bound key is the only boundary. */
export function openTopicWarning(topic: string): string {
  return `this hook's topic has no verifier: anyone who can reach POST /api/hooks/incoming/${topic} can fire it, so its execution key is the only boundary. Bind a least-privilege key (one that may run this tool and nothing else), or bind a verifier (PUT /api/hooks/topics/${topic}/verifier).`;
}

/** Said when the bound key can do far more than the hook needs. */
export const BROAD_KEY_WARNING =
  "the execution key is an admin or broad key (it may run every tool): whoever can fire this can run its tool with that authority. Bind a least-privilege key.";

function broad(key: KeyRecord): boolean {
  return isAdminKey(key) || key.scopes.includes("*") || grantsTag(key.scopes, "tools", "write");
}

export interface Registered {
  registered: true;
  name: string;
  warning?: string;
}

export async function registerHook(env: Env, settings: Settings, caller: Principal, body: HookCreateBody, now: Date): Promise<Registered> {
  const db = env.DB;
  if (!(await runInputSchema(db, body.tool))) throw notFound("tool not found");
  const condition_program = await hookProgram(db, "condition", body.condition, body.condition_id, body.condition_kwargs);
  const expr_program = await hookProgram(db, "expr", body.expr, body.expr_id, body.expr_kwargs);

  const fingerprint = await bindExecutionKey(db, caller, body.execution_key);
  const auth = await authorizeTurn(db, body.execution_key, fingerprint, { kind: "tool", name: body.tool }, now);
  // The caller may bind the key (its own, one it owns, or as an admin), so it may learn this much.
  if (!auth.ok) throw new HttpError(403, "execution_key may not run this tool");

  const existing = await getHook(db, body.name);
  if (caller.restricted && existing && !heldBy(holderOf(caller.key), existing.created_by, existing.updated_at)) throw forbidden();
  if ((await countTopicHooks(db, body.topic, body.name)) >= MAX_HOOKS_PER_TOPIC)
    throw conflict(`the topic already has ${MAX_HOOKS_PER_TOPIC} hooks, the most one topic may carry`);
  // The binding runs later under the execution key (or a link's): bounded by the caller's own states grants.
  assertMayBind(caller, body.state_binding);
  await checkRunBinding(env, settings, body.state_binding, now);

  const nowIso = now.toISOString();
  const row: HookRow = {
    name: body.name,
    topic: body.topic,
    tool: body.tool,
    execution_key: body.execution_key,
    execution_key_fingerprint: fingerprint,
    tool_kwargs: body.tool_kwargs,
    condition: body.condition ?? null,
    condition_id: body.condition_id ?? null,
    condition_kwargs: body.condition_id !== undefined ? (body.condition_kwargs ?? {}) : null,
    condition_program,
    expr: body.expr ?? null,
    expr_id: body.expr_id ?? null,
    expr_kwargs: body.expr_id !== undefined ? (body.expr_kwargs ?? {}) : null,
    expr_program,
    state_binding: body.state_binding ?? null,
    created_by: caller.key.user_id,
    created_at: existing?.created_at ?? nowIso,
    updated_at: nowIso,
  };
  await upsertHookStatement(db, row).run();
  const warnings = [(await getVerifier(db, body.topic)) ? null : openTopicWarning(body.topic), broad(auth.key) ? BROAD_KEY_WARNING : null].filter(
    (w): w is string => w !== null,
  );
  return warnings.length ? { registered: true, name: body.name, warning: warnings.join(" ") } : { registered: true, name: body.name };
}

/**
 * Creates a trigger link: pass-role binds its execution key (as a hook's), mints the token and
 * stores its hash. A live link of the same name is 409 (a capability is not silently replaced).
 */
export async function createTriggerLink(db: D1Database, caller: Principal, body: TriggerLinkBody, now: Date): Promise<TriggerLinkCreated> {
  const fingerprint = await bindExecutionKey(db, caller, body.execution_key);
  const nowMs = now.getTime();
  const name = body.name ?? `link-${crypto.randomUUID().replace(/-/g, "").slice(0, 12)}`;
  const link: NewLink = {
    name,
    topic: body.topic,
    execution_key: body.execution_key,
    execution_key_fingerprint: fingerprint,
    tool_kwargs: body.tool_kwargs,
    require_api_key: body.require_api_key,
    created_by: caller.key.user_id,
    created_at: now.toISOString(),
    expires_at: body.ttl_seconds === null ? null : nowMs + body.ttl_seconds * 1000,
  };
  const minted = await insertLink(db, link, nowMs);
  if (!minted) throw conflict("a trigger link of that name exists (delete it first)");
  const key = await findByUserId(db, body.execution_key);
  const answer: TriggerLinkCreated = {
    name,
    trigger_path: triggerPath(minted.token),
    token: minted.token,
    topic: body.topic,
    expires_at: link.expires_at === null ? null : new Date(link.expires_at).toISOString(),
  };
  return key && broad(key) ? { ...answer, warning: BROAD_KEY_WARNING } : answer;
}

/**
 * Key policy history doors (docs/access-control.md, "Key policy history"): the versions
 * of a key's policy and the rollback to one of them. An admin reaches every key; another key only
 * the keys it owns (as for the key doors); an owned key none.
 */
import { Hono } from "hono";
import { z } from "zod";
import { randomFingerprint, randomToken, sha256Hex } from "../crypto";
import { findByUserId, updateKey } from "../key-store";
import { KeyView, assertRoleExists, assertScopesExist, assertWithinCaller, keyView, manageable } from "../key-policy";
import { KeyVersion, getKeyVersion, listKeyVersions } from "../key-versions";
import { holderOf } from "../identity";
import { userIdSchema } from "../schemas";
import type { AppEnv } from "../../platform/http/app-env";
import { HttpError } from "../../platform/http/errors";
import { pageSchema, pagingQuery, toPage, toWindow } from "../../platform/http/paging";
import { addRoute } from "../../platform/http/route";
import { must } from "../../platform/must";

export const accessControlKeysRouter = new Hono<AppEnv>();

const AREA = "auth";
const userIdParams = z.object({ user_id: userIdSchema });
const keyNotFound = () => new HttpError(404, "api key not found");

addRoute(
  accessControlKeysRouter,
  {
    method: "get",
    path: "/api/auth/api-keys/{user_id}/policy/versions",
    summary: "A key's policy history, newest first",
    description:
      "One version per mint, edit, scopes change, revoke and rollback: the key's description, scopes, condition, role, disabled flag, owner and fingerprint after the change (before it, for a revoke). An admin reads any key's history, also after a revoke, across every holder of the user_id; another key reads the history of keys it owns while they exist, from the key's own mint on (an earlier holder's versions under a re-issued user_id are left out: docs/access-control.md, \"Identities\"). Any other case is 404, as if absent, so a read cannot probe for keys.",
    area: AREA,
    auth: { tag: "auth" },
    params: userIdParams,
    query: pagingQuery,
    response: pageSchema(KeyVersion),
    errors: [404],
  },
  async (c, { params, query, principal: p }) => {
    let since: string | undefined;
    if (!p.admin) {
      const k = p.restricted ? null : await findByUserId(c.env.DB, params.user_id);
      if (!k || k.owner_user_id !== p.key.user_id) throw keyNotFound();
      // The key's own lineage only: an earlier holder's history under the user_id is not its owner's to read.
      since = holderOf(k).since;
    }
    const w = toWindow(query);
    const { items, total } = await listKeyVersions(c.env.DB, params.user_id, w.offset, w.pageSize, since);
    if (total === 0) throw keyNotFound();
    return toPage(items, total, w);
  },
);

addRoute(
  accessControlKeysRouter,
  {
    method: "post",
    path: "/api/auth/api-keys/{user_id}/policy/rollback",
    summary: "Restore an earlier version of a key's policy as a new version",
    description:
      "Restores `version`'s description, scopes, condition, role and disabled flag (not the owner), checked like an edit: a non-admin only within its own scopes, custom scope ids and the role must still exist (400). The key keeps its raw key and `key_fingerprint`, so routes bound to it keep working. With `remint: true` the key is re-minted instead: a new raw key (shown once as `api_key`; the old one stops working) and a new fingerprint, so every route bound to the key must be bound again. Who may: as for PUT on the key (admin any, 404 when absent; others keys they own, uniform 403).",
    area: AREA,
    auth: { tag: "auth" },
    params: userIdParams,
    body: z.object({ version: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER), remint: z.boolean().default(false) }).strict(),
    response: z.object({ key: KeyView, version: z.number().int(), api_key: z.string().optional() }),
    errors: [404],
  },
  async (c, { params, body, principal: p }) => {
    const target = await manageable(c.env.DB, p, params.user_id);
    const old = await getKeyVersion(c.env.DB, target.user_id, body.version);
    // A non-admin rolls back within the key's own lineage (the versions it can read).
    if (!old || (!p.admin && old.created_at < holderOf(target).since)) throw new HttpError(404, "key version not found");
    assertWithinCaller(p, old.scopes);
    await assertScopesExist(c.env.DB, old.scopes, "the version's scopes");
    await assertRoleExists(c.env.DB, old.role, "the version's role");
    const apiKey = body.remint ? `sk-${randomToken()}` : undefined;
    await updateKey(
      c.env.DB,
      target.user_id,
      {
        description: old.description,
        scopes: old.scopes,
        condition: old.condition,
        role: old.role,
        disabled: old.disabled,
        ...(apiKey ? { key_hash: await sha256Hex(apiKey), key_fingerprint: randomFingerprint() } : {}),
      },
      { actor: p.key.user_id, action: "rollback", now: new Date().toISOString() },
    );
    const key = must(await findByUserId(c.env.DB, target.user_id), "the key just rolled back");
    const latest = await listKeyVersions(c.env.DB, target.user_id, 0, 1);
    return { key: keyView(key), version: latest.items[0]?.version ?? 0, ...(apiKey ? { api_key: apiKey } : {}) };
  },
);

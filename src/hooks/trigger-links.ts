/**
 * Trigger links (platform-facts B6; docs/hooks.md "Trigger links"): a capability URL
 * `/api/hooks/trigger/{token}` that fires a topic's hooks as the link's own bound execution key.
 * The token (`trg-` + 32 random bytes, base64url) is shown once, in the create answer; D1
 * (`hook_trigger_links`, migration 0017) keeps only its SHA-256. A link lives until `expires_at`
 * (null: until deleted); reads treat an expired link as gone, and the prune pass removes it.
 */
import { z } from "zod";
import type { Holder } from "../access-control/identity";
import { capabilityTokenKind } from "../access-control/capability-tokens";
import { constantTimeEqual } from "../access-control/crypto";
import { userIdSchema } from "../access-control/schemas";
import { JsonObject, MAX_KWARGS_BYTES, boundedJsonObject } from "../platform/http/bounded-json";
import { all, d1, first, run, sql, trusted } from "../platform/persistence/d1";
import { jsonColumn } from "../platform/persistence/stored-json";
import { HookTopic, TriggerLinkName } from "./names";

/** A link's token (src/access-control/capability-tokens.ts); a misshapen one is a miss without a lookup. */
const TOKEN = capabilityTokenKind("trg-");
/** The longest finite lifetime a link may be given (ten years); null is "until deleted". */
export const MAX_LINK_TTL_SECONDS = 315_360_000;

export const TriggerLinkBody = z
  .object({
    topic: HookTopic,
    /** The key every fire through the link runs as (pass-role bound; its fingerprint is stored). */
    execution_key: userIdSchema,
    name: TriggerLinkName.optional(),
    /** Required: seconds until the link expires (a positive whole number), or null for a link kept until deleted. */
    ttl_seconds: z.union([
      z.number().int({ message: "must be a whole number of seconds" }).positive({ message: "must be positive" }).max(MAX_LINK_TTL_SECONDS),
      z.null(),
    ]),
    /** Merged over each hook's expr output and under the hook's own tool_kwargs. */
    tool_kwargs: boundedJsonObject(MAX_KWARGS_BYTES).default({}),
    /** The link also needs a valid api key (x-api-key or Bearer) on each call. */
    require_api_key: z.boolean().default(false),
  })
  .strict();
export type TriggerLinkBody = z.infer<typeof TriggerLinkBody>;

const iso = z.string().describe("ISO-8601 UTC");

/** A link as the listing shows it: never its token. */
export const TriggerLinkView = z
  .object({
    name: z.string(),
    topic: z.string(),
    execution_key: z.string(),
    execution_key_fingerprint: z.string(),
    tool_kwargs: JsonObject,
    require_api_key: z.boolean(),
    created_by: z.string(),
    created_at: iso,
    expires_at: iso.nullable(),
  })
  .strict()
  .describe("HookTriggerLink");
export type TriggerLinkView = z.infer<typeof TriggerLinkView>;

/** The create answer: the token, shown this once. */
export const TriggerLinkCreated = z
  .object({ name: z.string(), trigger_path: z.string(), token: z.string(), topic: z.string(), expires_at: iso.nullable(), warning: z.string().optional() })
  .strict();
export type TriggerLinkCreated = z.infer<typeof TriggerLinkCreated>;

const int = z.coerce.number().int();
const StoredLink = z.object({
  name: z.string(),
  token_hash: z.string(),
  topic: z.string(),
  execution_key: z.string(),
  execution_key_fingerprint: z.string(),
  tool_kwargs: jsonColumn(JsonObject),
  require_api_key: int,
  created_by: z.string(),
  created_at: z.string(),
  expires_at: int.nullable(),
});
export type StoredLink = z.infer<typeof StoredLink>;

const COLUMNS = trusted("name, token_hash, topic, execution_key, execution_key_fingerprint, tool_kwargs, require_api_key, created_by, created_at, expires_at");

const isoOf = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function linkView(l: StoredLink): TriggerLinkView {
  return {
    name: l.name,
    topic: l.topic,
    execution_key: l.execution_key,
    execution_key_fingerprint: l.execution_key_fingerprint,
    tool_kwargs: l.tool_kwargs,
    require_api_key: l.require_api_key === 1,
    created_by: l.created_by,
    created_at: l.created_at,
    expires_at: isoOf(l.expires_at),
  };
}

export const triggerPath = (token: string) => `/api/hooks/trigger/${token}`;

export interface NewLink {
  name: string;
  topic: string;
  execution_key: string;
  execution_key_fingerprint: string;
  tool_kwargs: JsonObject;
  require_api_key: boolean;
  created_by: string;
  created_at: string;
  expires_at: number | null;
}

/** Mints the token and stores the link; false (nothing written) when the name is taken by a live link. */
export async function insertLink(db: D1Database, link: NewLink, nowMs: number): Promise<{ token: string } | null> {
  const token = TOKEN.mint();
  const hash = await TOKEN.hash(token);
  // An expired link's name is free again: its row is replaced in the same statement.
  const r = await run(
    d1(db)`INSERT INTO hook_trigger_links (${COLUMNS})
       VALUES (${link.name}, ${hash}, ${link.topic}, ${link.execution_key}, ${link.execution_key_fingerprint}, ${JSON.stringify(link.tool_kwargs)},
         ${link.require_api_key ? 1 : 0}, ${link.created_by}, ${link.created_at}, ${link.expires_at})
       ON CONFLICT (name) DO UPDATE SET token_hash = excluded.token_hash, topic = excluded.topic, execution_key = excluded.execution_key,
         execution_key_fingerprint = excluded.execution_key_fingerprint, tool_kwargs = excluded.tool_kwargs,
         require_api_key = excluded.require_api_key, created_by = excluded.created_by, created_at = excluded.created_at, expires_at = excluded.expires_at
       WHERE hook_trigger_links.expires_at IS NOT NULL AND hook_trigger_links.expires_at <= ${nowMs}`,
  );
  return r.changes > 0 ? { token } : null;
}

/** The live link a token opens, or null (malformed, unknown, expired): every miss is the same. */
export async function linkByToken(db: D1Database, token: string, nowMs: number): Promise<StoredLink | null> {
  if (!TOKEN.isShaped(token)) return null;
  const hash = await TOKEN.hash(token);
  const link = await first(StoredLink, d1(db)`SELECT ${COLUMNS} FROM hook_trigger_links WHERE token_hash = ${hash}`);
  if (!link) return null;
  // The indexed lookup found it; the comparison that decides is constant-time, as for api keys.
  if (!constantTimeEqual(link.token_hash, hash)) return null;
  return link.expires_at !== null && link.expires_at <= nowMs ? null : link;
}

export async function getLink(db: D1Database, name: string, nowMs: number): Promise<StoredLink | null> {
  return first(StoredLink, d1(db)`SELECT ${COLUMNS} FROM hook_trigger_links WHERE name = ${name} AND (expires_at IS NULL OR expires_at > ${nowMs})`);
}

/**
 * Live links by name; `createdBy` narrows to one creator's lineage (a restricted caller's listing:
 * made by its user_id since its key lineage began, src/access-control/identity.ts).
 */
export async function listLinks(db: D1Database, createdBy: Holder | null, nowMs: number): Promise<StoredLink[]> {
  const mine = createdBy === null ? sql`` : sql`AND created_by = ${createdBy.user_id} AND created_at >= ${createdBy.since}`;
  return all(StoredLink, d1(db)`SELECT ${COLUMNS} FROM hook_trigger_links WHERE (expires_at IS NULL OR expires_at > ${nowMs}) ${mine} ORDER BY name`);
}

/** Deletes a live link; false when there is none of that name. */
export async function deleteLink(db: D1Database, name: string, nowMs: number): Promise<boolean> {
  return (await run(d1(db)`DELETE FROM hook_trigger_links WHERE name = ${name} AND (expires_at IS NULL OR expires_at > ${nowMs})`)).changes > 0;
}

/** The prune pass: expired links. */
export async function pruneTriggerLinks(db: D1Database, nowMs: number): Promise<number> {
  return (await run(d1(db)`DELETE FROM hook_trigger_links WHERE expires_at IS NOT NULL AND expires_at <= ${nowMs}`)).changes;
}

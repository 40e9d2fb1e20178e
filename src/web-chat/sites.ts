/**
 * Web sites (docs/channels.md, "Web sites and entry gates"): what an operator sets per web
 * identity in D1 (`web_sites`, migration 0025): the origins whose pages may embed the widget, and
 * whether the entry gate is on. An identity without a row has the defaults: no other origin, no
 * gate. The row is read by the public doors with the route, so its read is a kit Statement they
 * can batch.
 */
import { z } from "zod";
import { type SqlValue, type Statement, d1, first, identifiers, list, run } from "../platform/persistence/d1";
import { jsonColumn, validStored } from "../platform/persistence/stored-json";
import { WEB_IDENTITY } from "../conversations/model/web";
import { type AttachmentPolicy, parsePolicy } from "./attachments";
import { PrechatBody, type PrechatForm, type PrechatView } from "./prechat";

/** A web identity: the route's `our_identity`, also a URL path segment of the public doors. */
export const WebIdentity = z.string().regex(WEB_IDENTITY, { message: "must be 1-64 letters, digits, '_' or '-'" });

/** How many origins one identity may allow. */
export const MAX_ALLOWED_ORIGINS = 20;

/** Hosts a plain-http origin may name: a developer's own machine, never a network peer. */
const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1"]);

/** A host as the URL parser serializes it: DNS labels in punycode, an IPv4 address, or a bracketed IPv6 one. */
const HOST = /^(?:[a-z0-9-]+\.)*[a-z0-9-]+$|^\[[0-9a-f:.]+\]$/;

/** A scheme, then a host with an optional port and nothing else (no "@", path, query or fragment). */
const ORIGIN_TEXT = /^https?:\/\/[^/?#\\@\s]+\/?$/i;

/**
 * The origin `text` names, serialized as a browser sends it in `Origin` (lowercase scheme and
 * host, punycode, no default port, no trailing slash), or null when `text` is not exactly an
 * origin: https, or http for a loopback host; no credentials, path, query or fragment (a lone
 * trailing "/" is tolerated, since operators paste origins from the address bar).
 */
export function normalizeOrigin(text: string): string | null {
  if (!ORIGIN_TEXT.test(text)) return null;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return null;
  }
  // The URL parser lets through host characters no browser origin has ("*", "_"): a wildcard
  // would be stored and never match, so it is refused instead.
  if (!HOST.test(url.hostname)) return null;
  if (url.protocol === "http:" && !LOOPBACK_HOSTS.has(url.hostname)) return null;
  return url.origin;
}

/** One allowed origin in a request body, normalized; refused without echoing the value. */
const AllowedOrigin = z
  .string()
  .max(300)
  .transform((text, ctx) => {
    const origin = normalizeOrigin(text);
    if (origin === null) {
      ctx.addIssue({ code: "custom", message: "must be an origin: https://host[:port], or http:// for localhost or 127.0.0.1, with no path" });
      return z.NEVER;
    }
    return origin;
  });

/** The body of `PUT /api/channels/web/sites/{identity}`; duplicates (after normalizing) are kept once. */
export const SiteBody = z
  .object({
    allowed_origins: z
      .array(AllowedOrigin)
      .max(MAX_ALLOWED_ORIGINS)
      .transform((origins) => [...new Set(origins)]),
  })
  .strict();

/** The stored list: origins as `normalizeOrigin` wrote them. */
const StoredOrigins = z.array(z.string());

const SiteRow = z.object({
  allowed_origins: jsonColumn(StoredOrigins),
  gate_enabled: z.number().int(),
  require_verified: z.number().int(),
  attachments: z.string().nullable(),
  prechat: jsonColumn(PrechatBody).nullable(),
  updated_at: z.string(),
  updated_by: z.string(),
});

/** What the public doors need of a site. */
export interface Site {
  allowed_origins: string[];
  gate_enabled: boolean;
  /** Only verified visitors may hold a session (src/web-chat/verification.ts). */
  require_verified: boolean;
  /** The pre-chat form (src/web-chat/prechat.ts), or null. */
  prechat: PrechatForm | null;
  /** What visitors may upload (src/web-chat/attachments.ts). */
  attachments: AttachmentPolicy;
}

/** A site as the config doors show it; `updated_at`/`updated_by` are null while it has the defaults. */
export const SiteView = z
  .object({
    identity: z.string(),
    allowed_origins: z.array(z.string()),
    updated_at: z.string().nullable(),
    updated_by: z.string().nullable(),
  })
  .strict()
  .describe("WebSite");
export type SiteView = z.infer<typeof SiteView>;

/** The read of `identity`'s site row, for a batch (its row goes to `parseSite`). */
export function siteStatement(db: D1Database, identity: string): Statement {
  return d1(
    db,
  )`SELECT allowed_origins, gate_enabled, require_verified, prechat, attachments, updated_at, updated_by FROM web_sites WHERE identity = ${identity}`;
}

/** The site in a row read by `siteStatement` (null: no row, so the defaults). */
export function parseSite(row: unknown): Site {
  if (row === null || row === undefined)
    return { allowed_origins: [], gate_enabled: false, require_verified: false, prechat: null, attachments: parsePolicy(null) };
  const r = validStored(SiteRow, row, "web_sites row");
  return {
    allowed_origins: r.allowed_origins,
    gate_enabled: r.gate_enabled === 1,
    require_verified: r.require_verified === 1,
    prechat: r.prechat,
    attachments: parsePolicy(r.attachments),
  };
}

/** `identity`'s site (the defaults when it has no row). */
export async function readSite(db: D1Database, identity: string): Promise<Site> {
  return parseSite(await first(z.unknown(), siteStatement(db, identity)));
}

/** `identity`'s site as the config doors show it. */
export async function readSiteView(db: D1Database, identity: string): Promise<SiteView> {
  const row = await first(SiteRow, siteStatement(db, identity));
  return {
    identity,
    allowed_origins: row?.allowed_origins ?? [],
    updated_at: row?.updated_at ?? null,
    updated_by: row?.updated_by ?? null,
  };
}

/** The site row's columns an operator's door sets on their own. */
export type SiteColumn = "allowed_origins" | "gate_enabled" | "prechat" | "attachments";

/**
 * Sets one column of `identity`'s site row and stamps who did it, creating the row with the
 * defaults (no allowed origins, the gate off, nothing else) when it has none.
 */
export async function writeSiteColumn(db: D1Database, identity: string, column: SiteColumn, value: SqlValue, nowIso: string, by: string): Promise<void> {
  const row: Record<string, SqlValue> = { identity, allowed_origins: "[]", gate_enabled: 0, [column]: value, updated_at: nowIso, updated_by: by };
  const name = identifiers([column]);
  await run(
    d1(db)`INSERT INTO web_sites (${identifiers(Object.keys(row))}) VALUES (${list(Object.values(row))})
      ON CONFLICT(identity) DO UPDATE SET ${name} = excluded.${name}, updated_at = excluded.updated_at, updated_by = excluded.updated_by`,
  );
}

/** Replaces `identity`'s allowed origins. */
export async function writeAllowedOrigins(db: D1Database, identity: string, origins: string[], nowIso: string, by: string): Promise<SiteView> {
  await writeSiteColumn(db, identity, "allowed_origins", JSON.stringify(origins), nowIso, by);
  return { identity, allowed_origins: origins, updated_at: nowIso, updated_by: by };
}

/** Switches `identity`'s gate. */
export async function writeGateEnabled(db: D1Database, identity: string, enabled: boolean, nowIso: string, by: string): Promise<void> {
  await writeSiteColumn(db, identity, "gate_enabled", enabled ? 1 : 0, nowIso, by);
}

/** `identity`'s pre-chat form as the operator's doors show it. */
export async function readPrechat(db: D1Database, identity: string): Promise<PrechatView> {
  return { identity, fields: (await readSite(db, identity)).prechat?.fields ?? null };
}

/** Sets (`form`) or removes (null) `identity`'s pre-chat form; setting creates its row with the defaults when it has none. */
export async function writePrechat(db: D1Database, identity: string, form: PrechatForm | null, nowIso: string, by: string): Promise<PrechatView> {
  if (!form) {
    await run(d1(db)`UPDATE web_sites SET prechat = NULL, updated_at = ${nowIso}, updated_by = ${by} WHERE identity = ${identity} AND prechat IS NOT NULL`);
    return { identity, fields: null };
  }
  await writeSiteColumn(db, identity, "prechat", JSON.stringify(form), nowIso, by);
  return { identity, fields: form.fields };
}

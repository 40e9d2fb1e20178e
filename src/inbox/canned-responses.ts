/**
 * Canned responses (docs/inbox.md, "Canned responses"): saved replies an operator inserts with
 * `/shortcode`, kept in D1 (migrations/0027_canned_responses.sql). A template must parse as
 * mustache when it is stored, so a render only fails on what the thread's context makes of it.
 *
 * The cap of 500 rows is written into the upsert itself (a new shortcode goes in only while the
 * table holds fewer), and the upsert runs in one batch with the read that tells a create from a
 * replace, so two writers racing for the last free place cannot both get in.
 */
import { z } from "zod";
import { conflict, notFound } from "../platform/http/errors";
import { intactIdentifier } from "../platform/http/identifiers";
import { type Page, type Window, toPage } from "../platform/http/paging";
import { CountRow, all, batch, d1, first, rowsOf, run, sql, trusted } from "../platform/persistence/d1";
import { must } from "../platform/must";
import { parseMustache } from "../templates/inference";

/** At most this many canned responses per deployment: a reply box's menu, not a content store. */
export const MAX_CANNED_RESPONSES = 500;
export const MAX_SHORTCODE_CHARS = 32;
export const MAX_TITLE_CHARS = 120;
export const MAX_TEMPLATE_CHARS = 4096;

const SHORTCODE_RULE = `must be 1 to ${MAX_SHORTCODE_CHARS} characters of a-z, 0-9, _ and - (lowercase)`;

/** What follows the `/` in the reply box: lowercase, so `/Refund` and `/refund` cannot be two replies. */
export const Shortcode = z.string().regex(new RegExp(`^[a-z0-9_-]{1,${MAX_SHORTCODE_CHARS}}$`), { message: SHORTCODE_RULE });

/** A prefix of shortcodes, as the list door's `q` takes it (empty: every shortcode). */
export const ShortcodePrefix = z.string().regex(new RegExp(`^[a-z0-9_-]{0,${MAX_SHORTCODE_CHARS}}$`), { message: SHORTCODE_RULE });

/** A canned response: the stored row, and the view every door answers. */
export const CannedResponse = z
  .object({
    shortcode: z.string(),
    title: z.string(),
    template: z.string(),
    created_at: z.string(),
    updated_at: z.string(),
    updated_by: z.string().nullable(),
  })
  .strict();
export type CannedResponse = z.infer<typeof CannedResponse>;

/** The create-or-replace body. The template is checked by mustache's own parser, never rendered here. */
export const CannedResponseBody = z
  .object({
    title: intactIdentifier(z.string().trim().min(1, { message: "must not be blank" }).max(MAX_TITLE_CHARS)),
    template: z
      .string()
      .min(1, { message: "must not be empty" })
      .max(MAX_TEMPLATE_CHARS)
      .refine((t) => parseMustache(t) !== null, { message: "does not parse as mustache" }),
  })
  .strict();
export type CannedResponseBody = z.infer<typeof CannedResponseBody>;

const COLUMNS = trusted("shortcode, title, template, created_at, updated_at, updated_by");
const ExistedRow = z.object({ existed: z.number() });

export const cannedResponseNotFound = () => notFound("canned response not found");

/** A page of canned responses in shortcode order, those starting with `prefix` when it is not empty. */
export async function listCannedResponses(db: D1Database, prefix: string, w: Window): Promise<Page<CannedResponse>> {
  // substr, not LIKE: `_` is a shortcode character and a LIKE wildcard.
  const where = prefix === "" ? sql`` : sql`WHERE substr(shortcode, 1, ${prefix.length}) = ${prefix}`;
  const [items, total] = await Promise.all([
    all(CannedResponse, d1(db)`SELECT ${COLUMNS} FROM canned_responses ${where} ORDER BY shortcode LIMIT ${w.pageSize} OFFSET ${w.offset}`),
    first(CountRow, d1(db)`SELECT COUNT(*) AS n FROM canned_responses ${where}`),
  ]);
  return toPage(items, total?.n ?? 0, w);
}

/** Every canned response in shortcode order (the backup's export; the table holds at most 500). */
export async function allCannedResponses(db: D1Database): Promise<CannedResponse[]> {
  return all(CannedResponse, d1(db)`SELECT ${COLUMNS} FROM canned_responses ORDER BY shortcode`);
}

export async function getCannedResponse(db: D1Database, shortcode: string): Promise<CannedResponse | null> {
  return first(CannedResponse, d1(db)`SELECT ${COLUMNS} FROM canned_responses WHERE shortcode = ${shortcode}`);
}

/** The canned response, or the door's 404. */
export async function requireCannedResponse(db: D1Database, shortcode: string): Promise<CannedResponse> {
  const found = await getCannedResponse(db, shortcode);
  if (!found) throw cannedResponseNotFound();
  return found;
}

/**
 * Creates or replaces `shortcode` as `userId`; a replace keeps `created_at`. 409 when it is new
 * and the table already holds MAX_CANNED_RESPONSES.
 */
export async function putCannedResponse(
  db: D1Database,
  shortcode: string,
  body: CannedResponseBody,
  userId: string,
  now: string,
): Promise<{ created: boolean; canned_response: CannedResponse }> {
  const q = d1(db);
  const existedRead = q`SELECT EXISTS (SELECT 1 FROM canned_responses WHERE shortcode = ${shortcode}) AS existed`;
  const readBack = q`SELECT ${COLUMNS} FROM canned_responses WHERE shortcode = ${shortcode}`;
  const [existed, upsert, stored] = await batch(db, [
    existedRead,
    q`INSERT INTO canned_responses (${COLUMNS})
        SELECT ${shortcode}, ${body.title}, ${body.template}, ${now}, ${now}, ${userId}
        WHERE EXISTS (SELECT 1 FROM canned_responses WHERE shortcode = ${shortcode})
           OR (SELECT COUNT(*) FROM canned_responses) < ${MAX_CANNED_RESPONSES}
      ON CONFLICT(shortcode) DO UPDATE SET title = excluded.title, template = excluded.template,
        updated_at = excluded.updated_at, updated_by = excluded.updated_by`,
    readBack,
  ]);
  if (!upsert.meta.changes) throw conflict(`at most ${MAX_CANNED_RESPONSES} canned responses: delete one first`);
  const created = rowsOf(ExistedRow, existed.results, existedRead.text)[0]?.existed !== 1;
  const row = must(rowsOf(CannedResponse, stored.results, readBack.text)[0], "the canned response this batch wrote");
  return { created, canned_response: row };
}

/** Whether a row was there to delete. */
export async function deleteCannedResponse(db: D1Database, shortcode: string): Promise<boolean> {
  const meta = await run(d1(db)`DELETE FROM canned_responses WHERE shortcode = ${shortcode}`);
  return meta.changes > 0;
}

/**
 * Roles (docs/access-control.md, "Roles"): `{name, description, grants: {tag: level},
 * condition?}`, versioned on every edit. A key (or its owner) that names a role is bounded by the
 * role's grants and condition in addition to its own scopes; the role is read live, in the key's
 * own statement (src/access-control/key-store.ts), so an edit reaches the key's next request.
 *
 * The policy part is pure (`roleAllows`, the grants schema); the rest is D1 glue. Every write and
 * its version row go in one D1 batch, which D1 runs as one transaction.
 */
import { z } from "zod";
import { HttpError, conflict } from "../platform/http/errors";
import { CountRow, type SqlFragment, type Statement, all, batch, d1, first, join, rowsOf, sql, trusted } from "../platform/persistence/d1";
import { jsonColumn } from "../platform/persistence/stored-json";
import { type Action, SCOPE_TAGS, type ScopeTag } from "./scopes";
import { must } from "../platform/must";

export const ROLE_LEVELS = ["none", "read", "write"] as const;
export type RoleLevel = (typeof ROLE_LEVELS)[number];

/** A role's stored grants: absent tag = none, so only read and write are kept. */
export const RoleGrants = z.partialRecord(z.enum(SCOPE_TAGS), z.enum(["read", "write"]));
export type RoleGrants = z.infer<typeof RoleGrants>;

const TAGS = new Set<string>(SCOPE_TAGS);
const LEVELS = new Set<string>(ROLE_LEVELS);

/**
 * A grant map as a caller sends it: `{tag: "none"|"read"|"write"}` over the scope tags. Checked by
 * hand so a refusal names the rule, never the offending key (zod would put the key in the path).
 * Values stay as sent ("none" included) so a merge can remove a tag.
 */
export const RoleGrantsInput = z
  .record(z.string(), z.unknown())
  .superRefine((map, ctx) => {
    const entries = Object.entries(map);
    if (entries.some(([tag]) => !TAGS.has(tag))) ctx.addIssue({ code: "custom", message: "keys must be scope tags (see the scope grammar)" });
    if (entries.some(([, level]) => typeof level !== "string" || !LEVELS.has(level)))
      ctx.addIssue({ code: "custom", message: 'levels must be "none", "read" or "write"' });
  })
  .transform((map) => map as Partial<Record<ScopeTag, RoleLevel>>)
  .meta({
    description: 'Scope tag → "none" | "read" | "write" (absent tag = none).',
    propertyNames: { enum: [...SCOPE_TAGS] },
    additionalProperties: { enum: [...ROLE_LEVELS] },
  });
export type RoleGrantsInput = z.infer<typeof RoleGrantsInput>;

/** Drops "none" (absent = none), so stored maps compare equal when they grant the same. */
export function normalizeGrants(input: Partial<Record<ScopeTag, RoleLevel>>): RoleGrants {
  const out: RoleGrants = {};
  for (const tag of SCOPE_TAGS) {
    const level = input[tag];
    if (level === "read" || level === "write") out[tag] = level;
  }
  return out;
}

/** Does the grant map allow `action` on `tag`? write implies read; absent = none. */
export function roleAllows(grants: RoleGrants, tag: string, action: Action): boolean {
  const level = (grants as Record<string, string | undefined>)[tag];
  return level === "write" || (level === "read" && action === "read");
}

/** A role name: lower-case letters, digits, `_` and `-`, starting with a letter. */
export const RoleName = z.string().regex(/^[a-z][a-z0-9_-]{0,63}$/, { message: "must be 1-64 characters of a-z, 0-9, _ and -, starting with a letter" });

export const RoleConditionInput = z.string().min(1).max(4096);

/** A role as the doors show it. */
export const Role = z.object({
  name: z.string(),
  description: z.string(),
  grants: RoleGrants,
  condition: z.string().nullable(),
  version: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type Role = z.infer<typeof Role>;

export const ROLE_VERSION_ACTIONS = ["create", "edit", "grants", "rollback", "delete"] as const;
export type RoleVersionAction = (typeof ROLE_VERSION_ACTIONS)[number];

/** One entry of a role's history: the role as it was after `action`. */
export const RoleVersion = z.object({
  name: z.string(),
  version: z.number().int(),
  description: z.string(),
  grants: RoleGrants,
  condition: z.string().nullable(),
  action: z.enum(ROLE_VERSION_ACTIONS),
  actor: z.string().nullable(),
  created_at: z.string(),
});
export type RoleVersion = z.infer<typeof RoleVersion>;

/** The raw D1 rows (for backup and restore). */
export const RoleRow = z
  .object({
    name: z.string(),
    description: z.string(),
    grants: z.string(),
    condition: z.string().nullable(),
    version: z.number().int(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .strict();
export type RoleRow = z.infer<typeof RoleRow>;
export const RoleVersionRow = z
  .object({
    name: z.string(),
    version: z.number().int(),
    description: z.string(),
    grants: z.string(),
    condition: z.string().nullable(),
    action: z.string(),
    actor: z.string().nullable(),
    created_at: z.string(),
  })
  .strict();
export type RoleVersionRow = z.infer<typeof RoleVersionRow>;

const storedRole = Role.extend({ grants: jsonColumn(RoleGrants) });
const storedVersion = RoleVersion.extend({ grants: jsonColumn(RoleGrants) });

const ROLE_COLUMNS = sql`name, description, grants, condition, version, created_at, updated_at`;
const VERSION_COLUMNS = sql`name, version, description, grants, condition, action, actor, created_at`;
const RoleName1 = z.object({ name: z.string() });

export async function getRole(db: D1Database, name: string): Promise<Role | null> {
  return first(storedRole, d1(db)`SELECT ${ROLE_COLUMNS} FROM roles WHERE name = ${name}`);
}

export async function listRoles(db: D1Database, offset: number, limit: number): Promise<{ items: Role[]; total: number }> {
  const rows = d1(db)`SELECT ${ROLE_COLUMNS} FROM roles ORDER BY name LIMIT ${limit} OFFSET ${offset}`;
  const count = d1(db)`SELECT COUNT(*) AS n FROM roles`;
  const [page, counted] = await batch(db, [rows, count]);
  return { items: rowsOf(storedRole, page.results, rows.text), total: rowsOf(CountRow, counted.results, count.text)[0]?.n ?? 0 };
}

/** Every role name (capabilities and `me`: a handful of rows). */
export async function roleNames(db: D1Database): Promise<string[]> {
  return (await all(RoleName1, d1(db)`SELECT name FROM roles ORDER BY name`)).map((r) => r.name);
}

/** Appends the role's current row as its next version (run after the write, in the same batch). */
function versionStatement(db: D1Database, name: string, action: RoleVersionAction, actor: string | null, now: string): Statement {
  return d1(db)`INSERT INTO role_versions (name, version, description, grants, condition, action, actor, created_at)
    SELECT name, version, description, grants, condition, ${action}, ${actor}, ${now} FROM roles WHERE name = ${name}`;
}

/** The next version number of `name` (a re-created name continues its history). */
function nextVersion(name: string): SqlFragment {
  return sql`(SELECT COALESCE(MAX(version), 0) + 1 FROM role_versions WHERE name = ${name})`;
}

export interface NewRole {
  name: string;
  description: string;
  grants: RoleGrants;
  condition: string | null;
}

/** Creates a role (409 when the name exists). */
export async function createRole(db: D1Database, r: NewRole, actor: string | null, now: string): Promise<Role> {
  try {
    await batch(db, [
      d1(db)`INSERT INTO roles (name, description, grants, condition, version, created_at, updated_at)
        VALUES (${r.name}, ${r.description}, ${JSON.stringify(r.grants)}, ${r.condition}, ${nextVersion(r.name)}, ${now}, ${now})`,
      versionStatement(db, r.name, "create", actor, now),
    ]);
  } catch (err) {
    if (String(err).includes("UNIQUE")) throw conflict("a role with this name already exists");
    throw err;
  }
  return must(await getRole(db, r.name), "the role just created");
}

export interface RoleEdit {
  description?: string;
  /** Replaces the whole map. */
  grants?: RoleGrants;
  condition?: string | null;
}

/** Applies a partial edit as a new version; null when the role does not exist. */
export async function editRole(db: D1Database, name: string, edit: RoleEdit, actor: string | null, now: string): Promise<Role | null> {
  const sets: SqlFragment[] = [];
  if (edit.description !== undefined) sets.push(sql`description = ${edit.description}`);
  if (edit.grants !== undefined) sets.push(sql`grants = ${JSON.stringify(edit.grants)}`);
  if (edit.condition !== undefined) sets.push(sql`condition = ${edit.condition}`);
  return bumpRole(db, name, sets, "edit", actor, now);
}

/**
 * Merges `changes` into the grant map as a new version ("none" removes a tag). The merge is
 * SQLite's json_patch, so two concurrent merges both land.
 */
export async function mergeRoleGrants(
  db: D1Database,
  name: string,
  changes: Partial<Record<ScopeTag, RoleLevel>>,
  actor: string | null,
  now: string,
): Promise<Role | null> {
  const patch: Record<string, string | null> = {};
  for (const [tag, level] of Object.entries(changes)) patch[tag] = level === "none" ? null : level;
  return bumpRole(db, name, [sql`grants = json_patch(grants, ${JSON.stringify(patch)})`], "grants", actor, now);
}

/** Restores version `version`'s description, grants and condition as a new version. */
export async function rollbackRole(db: D1Database, name: string, version: number, actor: string | null, now: string): Promise<Role | null> {
  const from = (column: "description" | "grants" | "condition") =>
    sql`${trusted(column)} = (SELECT v.${trusted(column)} FROM role_versions v WHERE v.name = ${name} AND v.version = ${version})`;
  return bumpRole(db, name, [from("description"), from("grants"), from("condition")], "rollback", actor, now);
}

async function bumpRole(db: D1Database, name: string, sets: SqlFragment[], action: RoleVersionAction, actor: string | null, now: string): Promise<Role | null> {
  const [update] = await batch(db, [
    d1(db)`UPDATE roles SET ${join([...sets, sql`version = ${nextVersion(name)}`, sql`updated_at = ${now}`])} WHERE name = ${name}`,
    versionStatement(db, name, action, actor, now),
  ]);
  if ((update.meta.changes ?? 0) === 0) return null;
  return getRole(db, name);
}

/** How many keys name the role. */
export async function keysUsingRole(db: D1Database, name: string): Promise<number> {
  return (await first(CountRow, d1(db)`SELECT COUNT(*) AS n FROM api_keys WHERE role = ${name}`))?.n ?? 0;
}

/**
 * Deletes a role. Refused (409) while a key names it unless `force`; the in-use test and the
 * delete are one statement, so a key given the role meanwhile cannot slip between them. A forced
 * delete leaves those keys naming a role that does not exist, which denies them everything (fail
 * closed) until the name is re-created or their role is changed. The history is kept.
 */
export async function deleteRole(db: D1Database, name: string, force: boolean, actor: string | null, now: string): Promise<{ keys: number }> {
  const existing = await getRole(db, name);
  if (!existing) throw new HttpError(404, "role not found");
  const keys = await keysUsingRole(db, name);
  const allowed = sql`(${force ? 1 : 0} = 1 OR NOT EXISTS (SELECT 1 FROM api_keys WHERE role = ${name}))`;
  const [, del] = await batch(db, [
    d1(db)`INSERT INTO role_versions (name, version, description, grants, condition, action, actor, created_at)
      SELECT name, ${nextVersion(name)}, description, grants, condition, 'delete', ${actor}, ${now} FROM roles WHERE name = ${name} AND ${allowed}`,
    d1(db)`DELETE FROM roles WHERE name = ${name} AND ${allowed}`,
  ]);
  if ((del.meta.changes ?? 0) === 0) {
    if (!(await getRole(db, name))) throw new HttpError(404, "role not found");
    throw new HttpError(409, "role is in use by api keys; delete with force=true to leave them denied", "role-in-use");
  }
  return { keys };
}

export async function listRoleVersions(db: D1Database, name: string, offset: number, limit: number): Promise<{ items: RoleVersion[]; total: number }> {
  const rows = d1(db)`SELECT ${VERSION_COLUMNS} FROM role_versions WHERE name = ${name} ORDER BY version DESC LIMIT ${limit} OFFSET ${offset}`;
  const count = d1(db)`SELECT COUNT(*) AS n FROM role_versions WHERE name = ${name}`;
  const [page, counted] = await batch(db, [rows, count]);
  return { items: rowsOf(storedVersion, page.results, rows.text), total: rowsOf(CountRow, counted.results, count.text)[0]?.n ?? 0 };
}

export async function getRoleVersion(db: D1Database, name: string, version: number): Promise<RoleVersion | null> {
  return first(storedVersion, d1(db)`SELECT ${VERSION_COLUMNS} FROM role_versions WHERE name = ${name} AND version = ${version}`);
}

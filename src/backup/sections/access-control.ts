/**
 * The access-control sections (docs/backup.md): `keys` (secret: the hashes), `roles`, `scopes`
 * and `public-routes`, as the raw rows of `ACCESS_CONTROL_TABLES` (src/access-control/tables.ts), checked
 * on import with the rules the access-control doors apply.
 *
 * A key or role carries its version history; an import replaces the history of each key or role
 * it writes with the document's, so the history stays the one of the row it describes.
 */
import { z } from "zod";
import { assertConditionCompiles } from "../../access-control/condition";
import { KeyScopes } from "../../access-control/key-policy";
import { KEY_VERSION_ACTIONS } from "../../access-control/key-versions";
import { pinRefusal } from "../../access-control/public-routes";
import { ROLE_VERSION_ACTIONS, RoleConditionInput, RoleGrants, RoleName } from "../../access-control/roles";
import { userIdSchema } from "../../access-control/schemas";
import { CUSTOM_SCOPE_ID, isCustomScopeId } from "../../access-control/scopes";
import { ACCESS_CONTROL_TABLES } from "../../access-control/tables";
import { MAX_SCOPE_URL_LENGTH, scopeUrlProblem } from "../../access-control/url-pattern";
import { registry } from "../../platform/http/route";
import { type SqlValue, type Statement, all, d1, identifiers, join, list, sql } from "../../platform/persistence/d1";
import { type DeployedKey, deployedKeys, deployedRoles, deployedScopeIds } from "../deployment";
import type { KeyBackupRow, RoleBackupRow } from "../rows";
import { type ImportContext, atRow, defineSection, parseAtRow, refuseDuplicates, rowFault, runBatch } from "../section";

/** The columns of an access-control table, from its row schema (so the statements follow the schema). */
function columnsOf(table: keyof typeof ACCESS_CONTROL_TABLES): string[] {
  return Object.keys(ACCESS_CONTROL_TABLES[table].shape);
}

/** Every row of `table`, in `orderBy` order, each validated against `schema` (the table's own, from ACCESS_CONTROL_TABLES). */
async function readTable<S extends z.ZodType>(
  db: D1Database,
  table: keyof typeof ACCESS_CONTROL_TABLES,
  schema: S,
  orderBy: string[],
): Promise<Array<z.output<S>>> {
  return all(schema, d1(db)`SELECT ${identifiers(columnsOf(table))} FROM ${identifiers([table])} ORDER BY ${identifiers(orderBy)}`);
}

/** A column's value to bind: rows arrive checked against their table's schema, so each is an SQL scalar or absent. */
function columnValue(row: Record<string, unknown>, column: string): SqlValue {
  const v = row[column] ?? null;
  if (v === null || typeof v === "string" || typeof v === "number" || typeof v === "boolean") return v;
  throw new Error(`column ${column} of a backup row holds no SQL value`);
}

/** `INSERT … ON CONFLICT(key) DO UPDATE` over every column of `table`'s row schema. */
function upsert(db: D1Database, table: keyof typeof ACCESS_CONTROL_TABLES, conflict: string[], row: Record<string, unknown>): Statement {
  const cols = columnsOf(table);
  const updates = cols.filter((c) => !conflict.includes(c)).map((c) => sql`${identifiers([c])} = excluded.${identifiers([c])}`);
  const onConflict = updates.length ? sql`DO UPDATE SET ${join(updates)}` : sql`DO NOTHING`;
  return d1(db)`INSERT INTO ${identifiers([table])} (${identifiers(cols)}) VALUES (${list(cols.map((c) => columnValue(row, c)))})
    ON CONFLICT(${identifiers(conflict)}) ${onConflict}`;
}

function insert(db: D1Database, table: keyof typeof ACCESS_CONTROL_TABLES, row: Record<string, unknown>): Statement {
  const cols = columnsOf(table);
  return d1(db)`INSERT INTO ${identifiers([table])} (${identifiers(cols)}) VALUES (${list(cols.map((c) => columnValue(row, c)))})`;
}

function groupBy<T, K extends keyof T>(rows: T[], key: K): Map<T[K], T[]> {
  const out = new Map<T[K], T[]>();
  for (const r of rows) out.set(r[key], [...(out.get(r[key]) ?? []), r]);
  return out;
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

const KeyHash = z.string().regex(/^[0-9a-f]{64}$/, { message: "must be the SHA-256 of the raw key, 64 lower-case hex digits" });
const Fingerprint = z.string().min(1).max(128);
const Flag = z.union([z.literal(0), z.literal(1)], { error: "must be 0 or 1" });
const KeyDescription = z.string().max(512);

/** The versions of one key or role: each about that row, numbered 1 and up, no number twice. */
function checkVersions(
  section: "keys" | "roles",
  i: number,
  owner: string,
  versions: Array<{ version: number } & Record<string, unknown>>,
  ownerField: string,
): void {
  const seen = new Set<number>();
  for (const [j, v] of versions.entries()) {
    if (v[ownerField] !== owner) throw rowFault(section, i, `versions.${j}.${ownerField}`, "must equal the row's");
    if (v.version < 1) throw rowFault(section, i, `versions.${j}.version`, "must be at least 1");
    if (seen.has(v.version)) throw rowFault(section, i, `versions.${j}.version`, "repeats an earlier version");
    seen.add(v.version);
  }
}

/** The key rows this import writes (the importing key's own row is kept as it is: skipped). */
function writtenKeys(rows: KeyBackupRow[] | undefined, ctx: ImportContext): KeyBackupRow[] {
  return (rows ?? []).filter((r) => r.user_id !== ctx.principal.key.user_id);
}

/** The owner_user_id key `userId` will have after this import: undefined when it will not exist. */
function ownerAfterImport(ctx: ImportContext, rows: KeyBackupRow[], deployed: Map<string, DeployedKey>, userId: string): string | null | undefined {
  const written = writtenKeys(rows, ctx).find((k) => k.user_id === userId);
  if (written) return written.owner_user_id;
  return deployed.get(userId)?.owner_user_id;
}

/** Does the key exist after this import (in the deployment, or written by it)? */
export async function keyWillExist(ctx: ImportContext, userId: string): Promise<boolean> {
  return (await deployedKeys(ctx)).has(userId) || writtenKeys(ctx.rows.keys, ctx).some((k) => k.user_id === userId);
}

/** Does the role exist after this import? */
export async function roleWillExist(ctx: ImportContext, name: string): Promise<boolean> {
  return (await deployedRoles(ctx)).has(name) || (ctx.rows.roles ?? []).some((r) => r.name === name);
}

export const keysSection = defineSection({
  name: "keys",
  secret: true,
  description:
    "API keys with their SHA-256 hashes, fingerprints, scopes, roles, owners and policy history. Raw keys are never known; importing the hashes makes the same raw keys work in the target deployment. The importing key's own row is skipped.",
  async exportRows(ctx) {
    const [keys, versions] = await Promise.all([
      readTable(ctx.db, "api_keys", ACCESS_CONTROL_TABLES.api_keys, ["user_id"]),
      readTable(ctx.db, "api_key_versions", ACCESS_CONTROL_TABLES.api_key_versions, ["user_id", "version"]),
    ]);
    const byUser = groupBy(versions, "user_id");
    return keys.map((k) => ({ ...k, versions: byUser.get(k.user_id) ?? [] }));
  },
  async validate(rows, ctx) {
    refuseDuplicates("keys", rows, (r) => r.user_id, "user_id");
    refuseDuplicates("keys", rows, (r) => r.key_hash, "key_hash");
    const deployed = await deployedKeys(ctx);
    const holderOfHash = new Map([...deployed].map(([userId, k]) => [k.key_hash, userId]));
    const customScopes = new Set([...(await deployedScopeIds(ctx)), ...(ctx.rows.scopes ?? []).map((s) => s.scope_id)]);
    const skipped: Array<{ index: number; reason: string }> = [];
    for (const [i, row] of rows.entries()) {
      parseAtRow("keys", i, "user_id", userIdSchema, row.user_id);
      if (row.user_id === ctx.principal.key.user_id) {
        skipped.push({ index: i, reason: "the importing key's own row: kept as it is, so the import cannot lock its caller out" });
        continue;
      }
      parseAtRow("keys", i, "key_hash", KeyHash, row.key_hash);
      const holder = holderOfHash.get(row.key_hash);
      if (holder !== undefined && holder !== row.user_id) throw rowFault("keys", i, "key_hash", "is the hash of another key of this deployment");
      parseAtRow("keys", i, "description", KeyDescription, row.description);
      parseAtRow("keys", i, "key_fingerprint", Fingerprint, row.key_fingerprint);
      parseAtRow("keys", i, "disabled", Flag, row.disabled);
      const scopes = parseJson(row.scopes);
      if (!scopes.ok) throw rowFault("keys", i, "scopes", "must be a JSON array of scopes");
      const list = parseAtRow("keys", i, "scopes", KeyScopes, scopes.value);
      const missing = list.findIndex((s) => isCustomScopeId(s) && !customScopes.has(s));
      if (missing >= 0) throw rowFault("keys", i, `scopes.${missing}`, "no such custom scope in the deployment or this import");
      const condition = row.condition;
      if (condition !== null) {
        parseAtRow("keys", i, "condition", RoleConditionInput, condition);
        await atRow("keys", i, () => assertConditionCompiles(condition));
      }
      if (row.role !== null && !(await roleWillExist(ctx, row.role))) throw rowFault("keys", i, "role", "no such role in the deployment or this import");
      if (row.owner_user_id !== null) {
        if (row.owner_user_id === row.user_id) throw rowFault("keys", i, "owner_user_id", "a key cannot own itself");
        const owner = ownerAfterImport(ctx, rows, deployed, row.owner_user_id);
        if (owner === undefined) throw rowFault("keys", i, "owner_user_id", "no such key in the deployment or this import");
        if (owner !== null) throw rowFault("keys", i, "owner_user_id", "an owned key cannot own keys");
      }
      checkVersions("keys", i, row.user_id, row.versions, "user_id");
      for (const [j, v] of row.versions.entries()) {
        parseAtRow("keys", i, `versions.${j}.action`, z.enum(KEY_VERSION_ACTIONS), v.action);
        parseAtRow("keys", i, `versions.${j}.disabled`, Flag, v.disabled);
        const vs = parseJson(v.scopes);
        if (!vs.ok || !z.array(z.string()).safeParse(vs.value).success) throw rowFault("keys", i, `versions.${j}.scopes`, "must be a JSON array of scopes");
      }
    }
    return { rows: writtenKeys(rows, ctx), skipped };
  },
  async apply(plan, ctx) {
    const db = ctx.db;
    const statements = plan.rows.flatMap((k) => [
      upsert(db, "api_keys", ["user_id"], k),
      d1(db)`DELETE FROM api_key_versions WHERE user_id = ${k.user_id}`,
      ...k.versions.map((v) => insert(db, "api_key_versions", v)),
    ]);
    await runBatch(db, statements);
    return plan.skipped.length ? { applied: plan.rows.length, skipped: plan.skipped } : { applied: plan.rows.length };
  },
});

const RoleDescription = z.string().max(512);

/** A stored grant map: JSON of scope tag → "read" | "write" (what the role doors store). */
function checkGrants(i: number, field: string, text: string): void {
  const parsed = parseJson(text);
  if (!parsed.ok || !RoleGrants.safeParse(parsed.value).success) throw rowFault("roles", i, field, 'must be a JSON object of scope tag to "read" or "write"');
}

export const rolesSection = defineSection({
  name: "roles",
  secret: false,
  description: "Roles (versioned grant maps and conditions that bound keys), with their version history.",
  async exportRows(ctx) {
    const [roles, versions] = await Promise.all([
      readTable(ctx.db, "roles", ACCESS_CONTROL_TABLES.roles, ["name"]),
      readTable(ctx.db, "role_versions", ACCESS_CONTROL_TABLES.role_versions, ["name", "version"]),
    ]);
    const byName = groupBy(versions, "name");
    return roles.map((r) => ({ ...r, versions: byName.get(r.name) ?? [] }));
  },
  async validate(rows) {
    refuseDuplicates("roles", rows, (r) => r.name, "name");
    for (const [i, row] of rows.entries()) {
      parseAtRow("roles", i, "name", RoleName, row.name);
      parseAtRow("roles", i, "description", RoleDescription, row.description);
      checkGrants(i, "grants", row.grants);
      const condition = row.condition;
      if (condition !== null) {
        parseAtRow("roles", i, "condition", RoleConditionInput, condition);
        await atRow("roles", i, () => assertConditionCompiles(condition));
      }
      if (row.version < 1) throw rowFault("roles", i, "version", "must be at least 1");
      checkVersions("roles", i, row.name, row.versions, "name");
      for (const [j, v] of row.versions.entries()) {
        parseAtRow("roles", i, `versions.${j}.action`, z.enum(ROLE_VERSION_ACTIONS), v.action);
        checkGrants(i, `versions.${j}.grants`, v.grants);
      }
    }
    return rows;
  },
  async apply(rows: RoleBackupRow[], ctx) {
    const db = ctx.db;
    await runBatch(
      db,
      rows.flatMap((r) => [
        upsert(db, "roles", ["name"], r),
        d1(db)`DELETE FROM role_versions WHERE name = ${r.name}`,
        ...r.versions.map((v) => insert(db, "role_versions", v)),
      ]),
    );
    return { applied: rows.length };
  },
});

const ScopeId = z
  .string()
  .regex(CUSTOM_SCOPE_ID, { message: "must be 1-64 characters of a-z, 0-9, _ . -, starting with a letter" })
  .refine(isCustomScopeId, { message: "must not be a scope tag (or the reserved word urls)" });

export const scopesSection = defineSection({
  name: "scopes",
  secret: false,
  description: "Custom URL scopes: one row per URL of a scope (scope_id, url, pattern).",
  exportRows: (ctx) => readTable(ctx.db, "auth_scopes", ACCESS_CONTROL_TABLES.auth_scopes, ["scope_id", "url"]),
  async validate(rows) {
    refuseDuplicates("scopes", rows, (r) => JSON.stringify([r.scope_id, r.url]), "(scope_id, url)");
    for (const [i, row] of rows.entries()) {
      parseAtRow("scopes", i, "scope_id", ScopeId, row.scope_id);
      parseAtRow("scopes", i, "url", z.string().min(1).max(MAX_SCOPE_URL_LENGTH), row.url);
      parseAtRow("scopes", i, "pattern", Flag, row.pattern);
      const problem = scopeUrlProblem(row.url, row.pattern === 1);
      if (problem) throw rowFault("scopes", i, "url", problem);
    }
    return rows;
  },
  async apply(rows, ctx) {
    await runBatch(
      ctx.db,
      rows.map((r) => upsert(ctx.db, "auth_scopes", ["scope_id", "url"], r)),
    );
    return { applied: rows.length };
  },
});

export const publicRoutesSection = defineSection({
  name: "public-routes",
  secret: false,
  description: "Doors pinned public (method, path template of the route table).",
  exportRows: (ctx) => readTable(ctx.db, "public_routes", ACCESS_CONTROL_TABLES.public_routes, ["path", "method"]),
  async validate(rows) {
    refuseDuplicates("public-routes", rows, (r) => `${r.method} ${r.path}`, "(method, path)");
    for (const [i, row] of rows.entries()) {
      const door = registry.find((d) => d.method.toUpperCase() === row.method && d.path === row.path);
      if (!door) throw rowFault("public-routes", i, null, "names no door of this deployment's route table (method in upper case, path as the template)");
      const refusal = pinRefusal(door);
      if (refusal) throw rowFault("public-routes", i, null, `this door cannot be pinned public: ${refusal}`);
    }
    return rows;
  },
  async apply(rows, ctx) {
    await runBatch(
      ctx.db,
      rows.map((r) => upsert(ctx.db, "public_routes", ["method", "path"], r)),
    );
    return { applied: rows.length };
  },
});

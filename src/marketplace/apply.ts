/**
 * Applying a plan, and uninstalling: one D1 batch each, so a change lands whole or not at all.
 *
 * An install's batch opens with a guard statement: it re-checks, inside the transaction, that no
 * name the plan writes is held by a declaration the plugin does not own (one could have been
 * declared by hand between the plan and the batch; the fleet lock only keeps marketplace
 * operations apart). If one is, the guard inserts into `marketplace_guard`, whose CHECK fails, and
 * D1 rolls the batch back: `GuardTripped` tells the caller to plan again and refuse with names.
 */
import { type SqlFragment, type Statement, batch, d1, sql, trusted } from "../platform/persistence/d1";
import type { DeclarationKind } from "./contract";
import type { OwnedDeclaration } from "./installs";
import { KIND_TABLES, removeStatements, writeStatements } from "./kinds";
import type { Plan } from "./plan";

/** The guard stopped a batch: the store changed under the plan. */
export class GuardTripped extends Error {
  constructor() {
    super("a declaration the plan would write appeared meanwhile");
    this.name = "GuardTripped";
  }
}

function guardStatement(db: D1Database, plan: Plan): Statement {
  const toolish = JSON.stringify(plan.declarations.filter((d) => KIND_TABLES[d.kind].namespace === "tool").map((d) => d.name));
  const agents = JSON.stringify(plan.declarations.filter((d) => d.kind === "agent").map((d) => d.name));
  // Table and column come from the code's constants; the kind, the name lists and the ref are bound.
  const unowned = (table: string, column: string, kind: DeclarationKind, list: string): SqlFragment =>
    sql`EXISTS (SELECT 1 FROM json_each(${list}) j JOIN ${trusted(table)} t ON t.${trusted(column)} = j.value
       WHERE NOT EXISTS (SELECT 1 FROM marketplace_owned o WHERE o.kind = ${kind} AND o.name = j.value AND o.ref = ${plan.ref}))`;
  return d1(db)`INSERT INTO marketplace_guard (violation) SELECT 1 WHERE
         ${unowned("tool_declarations", "title", "http_tool", toolish)}
         OR ${unowned("presets", "name", "preset", toolish)}
         OR ${unowned("agent_declarations", "title", "agent", agents)}`;
}

/** The statements of a plan, in order: guard, removals, writes, ownership, the install row. */
export function planStatements(db: D1Database, plan: Plan, nowIso: string): Statement[] {
  const q = d1(db);
  const out: Statement[] = [guardStatement(db, plan)];
  for (const r of plan.remove) {
    out.push(...removeStatements(db, r.kind, r.name));
    out.push(q`DELETE FROM marketplace_owned WHERE kind = ${r.kind} AND name = ${r.name} AND ref = ${plan.ref}`);
  }
  for (const d of plan.declarations) {
    const replaced = plan.replace.includes(d);
    out.push(...writeStatements(db, d, { exists: replaced, currentBody: plan.presetBodies.get(d.name) ?? null }, nowIso));
    // A stale claim (another plugin's, on a declaration since deleted by hand) passes to this plugin.
    out.push(
      q`INSERT INTO marketplace_owned (kind, name, ref) VALUES (${d.kind}, ${d.name}, ${plan.ref}) ON CONFLICT(kind, name) DO UPDATE SET ref = excluded.ref`,
    );
  }
  out.push(
    plan.operation === "install"
      ? q`INSERT INTO marketplace_installs (ref, namespace, name, version, installed_at, updated_at) VALUES (${plan.ref}, ${plan.namespace}, ${plan.name}, ${plan.version}, ${nowIso}, ${nowIso})`
      : q`UPDATE marketplace_installs SET namespace = ${plan.namespace}, name = ${plan.name}, version = ${plan.version}, updated_at = ${nowIso} WHERE ref = ${plan.ref}`,
  );
  return out;
}

/** Runs a plan's batch; throws GuardTripped when the guard stopped it. */
export async function applyPlan(db: D1Database, plan: Plan, nowIso: string): Promise<void> {
  try {
    await batch(db, planStatements(db, plan, nowIso));
  } catch (err) {
    if (/CHECK constraint failed|UNIQUE constraint failed/i.test(String(err))) throw new GuardTripped();
    throw err;
  }
}

/** Removes an installed plugin: what it owns, its ownership rows and its install row, in one batch. */
export async function applyUninstall(db: D1Database, ref: string, owned: OwnedDeclaration[]): Promise<void> {
  const statements = owned.flatMap((o) => removeStatements(db, o.kind, o.name));
  statements.push(d1(db)`DELETE FROM marketplace_owned WHERE ref = ${ref}`);
  statements.push(d1(db)`DELETE FROM marketplace_installs WHERE ref = ${ref}`);
  await batch(db, statements);
}

/**
 * Applying a plan, and uninstalling: one D1 batch each, so a change lands whole or not at all.
 *
 * An install's batch opens with a guard statement: it re-checks, inside the transaction, that no
 * name the plan writes is held by a declaration the plugin does not own (one could have been
 * declared by hand between the plan and the batch; the fleet lock only keeps marketplace
 * operations apart). If one is, the guard inserts into `marketplace_guard`, whose CHECK fails, and
 * D1 rolls the batch back: `GuardTripped` tells the caller to plan again and refuse with names.
 */
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

function guardStatement(db: D1Database, plan: Plan): D1PreparedStatement {
  const toolish = JSON.stringify(plan.declarations.filter((d) => KIND_TABLES[d.kind].namespace === "tool").map((d) => d.name));
  const agents = JSON.stringify(plan.declarations.filter((d) => d.kind === "agent").map((d) => d.name));
  const unowned = (table: string, column: string, kind: DeclarationKind, list: string) =>
    `EXISTS (SELECT 1 FROM json_each(${list}) j JOIN ${table} t ON t.${column} = j.value
       WHERE NOT EXISTS (SELECT 1 FROM marketplace_owned o WHERE o.kind = '${kind}' AND o.name = j.value AND o.ref = ?3))`;
  return db
    .prepare(
      `INSERT INTO marketplace_guard (violation) SELECT 1 WHERE
         ${unowned("tool_declarations", "title", "http_tool", "?1")}
         OR ${unowned("presets", "name", "preset", "?1")}
         OR ${unowned("agent_declarations", "title", "agent", "?2")}`,
    )
    .bind(toolish, agents, plan.ref);
}

/** The statements of a plan, in order: guard, removals, writes, ownership, the install row. */
export function planStatements(db: D1Database, plan: Plan, nowIso: string): D1PreparedStatement[] {
  const out: D1PreparedStatement[] = [guardStatement(db, plan)];
  for (const r of plan.remove) {
    out.push(...removeStatements(db, r.kind, r.name));
    out.push(db.prepare("DELETE FROM marketplace_owned WHERE kind = ? AND name = ? AND ref = ?").bind(r.kind, r.name, plan.ref));
  }
  for (const d of plan.declarations) {
    const replaced = plan.replace.includes(d);
    out.push(...writeStatements(db, d, { exists: replaced, currentBody: plan.presetBodies.get(d.name) ?? null }, nowIso));
    // A stale claim (another plugin's, on a declaration since deleted by hand) passes to this plugin.
    out.push(
      db
        .prepare("INSERT INTO marketplace_owned (kind, name, ref) VALUES (?, ?, ?) ON CONFLICT(kind, name) DO UPDATE SET ref = excluded.ref")
        .bind(d.kind, d.name, plan.ref),
    );
  }
  out.push(
    plan.operation === "install"
      ? db
          .prepare("INSERT INTO marketplace_installs (ref, namespace, name, version, installed_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?5)")
          .bind(plan.ref, plan.namespace, plan.name, plan.version, nowIso)
      : db
          .prepare("UPDATE marketplace_installs SET namespace = ?2, name = ?3, version = ?4, updated_at = ?5 WHERE ref = ?1")
          .bind(plan.ref, plan.namespace, plan.name, plan.version, nowIso),
  );
  return out;
}

/** Runs a plan's batch; throws GuardTripped when the guard stopped it. */
export async function applyPlan(db: D1Database, plan: Plan, nowIso: string): Promise<void> {
  try {
    await db.batch(planStatements(db, plan, nowIso));
  } catch (err) {
    if (/CHECK constraint failed|UNIQUE constraint failed/i.test(String(err))) throw new GuardTripped();
    throw err;
  }
}

/** Removes an installed plugin: what it owns, its ownership rows and its install row, in one batch. */
export async function applyUninstall(db: D1Database, ref: string, owned: OwnedDeclaration[]): Promise<void> {
  const statements = owned.flatMap((o) => removeStatements(db, o.kind, o.name));
  statements.push(db.prepare("DELETE FROM marketplace_owned WHERE ref = ?").bind(ref));
  statements.push(db.prepare("DELETE FROM marketplace_installs WHERE ref = ?").bind(ref));
  await db.batch(statements);
}

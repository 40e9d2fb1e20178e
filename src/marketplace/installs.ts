/** The install store's reads (D1 `marketplace_installs`, `marketplace_owned`; migrations/0011). */
import { z } from "zod";
import { all, batch, d1, rowsOf, trusted } from "../platform/persistence/d1";
import { validStored } from "../platform/persistence/stored-json";
import { DECLARATION_KINDS, type DeclarationKind, DeclarationNames } from "./contract";

/** An install row as stored. */
const InstallRow = z.object({
  ref: z.string(),
  namespace: z.string(),
  name: z.string(),
  version: z.string(),
  installed_at: z.string(),
  updated_at: z.string(),
});
type InstallRow = z.infer<typeof InstallRow>;

export const InstalledPlugin = InstallRow.extend({
  /** What the plugin owns, by kind (sorted names). */
  declarations: DeclarationNames,
});
export type InstalledPlugin = z.infer<typeof InstalledPlugin>;

export interface OwnedDeclaration {
  kind: DeclarationKind;
  name: string;
}

const OwnedRow = z.object({ kind: z.string(), name: z.string(), ref: z.string() });
type OwnedRow = z.infer<typeof OwnedRow>;
const VersionRow = z.object({ ref: z.string(), version: z.string() });

const OwnedKind = z.enum(DECLARATION_KINDS.map((k) => k.kind) as [DeclarationKind, ...DeclarationKind[]]);

function owned(rows: OwnedRow[]): Array<OwnedDeclaration & { ref: string }> {
  return rows.map((r) => ({ kind: validStored(OwnedKind, r.kind, "marketplace_owned row"), name: r.name, ref: r.ref }));
}

function namesOf(items: OwnedDeclaration[]): DeclarationNames {
  const pick = (kind: DeclarationKind) =>
    items
      .filter((o) => o.kind === kind)
      .map((o) => o.name)
      .sort();
  return { http_tools: pick("http_tool"), agents: pick("agent"), presets: pick("preset") };
}

function toInstalled(r: InstallRow, items: OwnedDeclaration[]): InstalledPlugin {
  return {
    ref: r.ref,
    namespace: r.namespace,
    name: r.name,
    version: r.version,
    installed_at: r.installed_at,
    updated_at: r.updated_at,
    declarations: namesOf(items),
  };
}

const INSTALL_COLUMNS = trusted("ref, namespace, name, version, installed_at, updated_at");

/** Every installed plugin with what it owns, by ref (two statements, one round trip). */
export async function listInstalled(db: D1Database): Promise<InstalledPlugin[]> {
  const installsStmt = d1(db)`SELECT ${INSTALL_COLUMNS} FROM marketplace_installs ORDER BY ref`;
  const ownedStmt = d1(db)`SELECT kind, name, ref FROM marketplace_owned`;
  const [installs, ownedRows] = await batch(db, [installsStmt, ownedStmt]);
  const every = owned(rowsOf(OwnedRow, ownedRows.results, ownedStmt.text));
  return rowsOf(InstallRow, installs.results, installsStmt.text).map((r) =>
    toInstalled(
      r,
      every.filter((o) => o.ref === r.ref),
    ),
  );
}

/** One installed plugin, or null. */
export async function getInstalled(db: D1Database, ref: string): Promise<InstalledPlugin | null> {
  const installsStmt = d1(db)`SELECT ${INSTALL_COLUMNS} FROM marketplace_installs WHERE ref = ${ref}`;
  const ownedStmt = d1(db)`SELECT kind, name, ref FROM marketplace_owned WHERE ref = ${ref}`;
  const [installs, ownedRows] = await batch(db, [installsStmt, ownedStmt]);
  const row = rowsOf(InstallRow, installs.results, installsStmt.text)[0];
  return row ? toInstalled(row, owned(rowsOf(OwnedRow, ownedRows.results, ownedStmt.text))) : null;
}

/** Installed versions by ref (for the registry reads' `installed_version`). */
export async function installedVersions(db: D1Database): Promise<Map<string, string>> {
  const results = await all(VersionRow, d1(db)`SELECT ref, version FROM marketplace_installs`);
  return new Map(results.map((r) => [r.ref, r.version]));
}

/** The flat owned list of one installed plugin. */
export function ownedList(p: InstalledPlugin): OwnedDeclaration[] {
  return [
    ...p.declarations.http_tools.map((name) => ({ kind: "http_tool" as const, name })),
    ...p.declarations.agents.map((name) => ({ kind: "agent" as const, name })),
    ...p.declarations.presets.map((name) => ({ kind: "preset" as const, name })),
  ];
}

/**
 * The hooks sections (docs/backup.md, docs/hooks.md "Backup"): `hooks` (the hooks with their
 * rendered programs, and the topic verifier bindings without their literal secrets) and
 * `hook-secrets` (secret: those secrets, sealed). Both need the tool runs' store, as the
 * hooks doors do (501 `tool-runs-not-configured`). Trigger links are capabilities: never exported,
 * never imported (a restored deployment mints new ones).
 *
 * A hook is checked with the registration door's body schema (`HookCreateBody`), its stored
 * programs must compile (and a program given as jq text must be that text: that is what the door
 * renders it to), its tool and execution key must exist in the deployment or this import, the
 * key's pass-role rules hold, a topic carries at most MAX_HOOKS_PER_TOPIC hooks once the import
 * lands, and a `state_binding` is checked as a target config's is. Its execution key is bound as
 * the route section binds a route's: by the importing admin, storing the key's fingerprint as the
 * target deployment knows it (the source's, when `keys` came along). Its grants are not checked
 * here: each fire's run checks them live (docs/hooks.md "Who a fire runs as").
 *
 * A binding is checked with the verifier door's schema (`VerifierBody`) and its code
 * (`verifierRecord`: a Standard Webhooks secret is base64, an env reference is within the
 * secret-reference scope), and a literal secret is sealed under the importing deployment's
 * SETTINGS_ENCRYPTION_KEY. In `hook-secrets` each secret travels sealed for its topic under the
 * exporting deployment's key (src/backup/secret-values.ts): an admin's export never holds one in
 * the clear, and it opens where that key is held (current or previous). A binding whose secret is withheld takes
 * it from this import's `hook-secrets`, else keeps the one the deployment's binding of the topic
 * has (opened and sealed again), else is refused: a verified topic that lost its secret would
 * refuse every delivery. `{"env"}` references are not secrets and stay in the `hooks` rows.
 */
import { bindExecutionKey } from "../../access-control/pass-role";
import { userIdSchema } from "../../access-control/schemas";
import { HttpError } from "../../platform/http/errors";
import { MAX_HOOKS_PER_TOPIC, listHooks, upsertHookStatement } from "../../hooks/hook-store";
import { HookTopic } from "../../hooks/names";
import { HookCreateBody, type HookRow } from "../../hooks/record";
import {
  type StoredVerifier,
  VerifierBody,
  VerifierSecretLiteral,
  getVerifier,
  listVerifiers,
  openSealedVerifierSecret,
  upsertVerifierStatement,
  verifierRecord,
  verifierView,
} from "../../hooks/verifier-store";
import { deployedKeys } from "../deployment";
import type { HookBackupRow, HookSecretBackupRow } from "../rows";
import { BackupSealer, backupAad, openBackupSecret } from "../secret-values";
import { type ImportContext, atRow, defineSection, firstDuplicate, inRow, parseAtRow, rowFault, runBatch } from "../section";
import { keyWillExist } from "./access-control";
import { checkBindingNames, checkBindingsAtApply } from "./bindings";
import { checkImportedExecutionKey, compiles, targetWillExist } from "./references";

const S = "hooks";
const SECRETS = "hook-secrets";

type HookEntry = Extract<HookBackupRow, { type: "hook" }>;
type VerifierEntry = Extract<HookBackupRow, { type: "verifier" }>;

/** The 409 an export answers when a sealed secret cannot be opened to travel. */
function unopenable(): HttpError {
  return new HttpError(
    409,
    "a topic verifier's sealed secret does not open under SETTINGS_ENCRYPTION_KEY (unset, rotated out, or altered), so hook-secrets cannot be exported",
  );
}

/** The verifier door's body for a binding: the header fields are the generic kind's only. */
function verifierBody(
  kind: StoredVerifier["kind"],
  secret: string | { env: string },
  headers: { signature_header: string | null; delivery_header: string | null },
): unknown {
  return kind === "hmac_sha256" ? { kind, secret, signature_header: headers.signature_header, delivery_header: headers.delivery_header } : { kind, secret };
}

/** Where a sealed verifier secret may be restored: its topic. */
const hookSecretAad = (topic: string) => backupAad(SECRETS, topic);

/** A `hook-secrets` row's secret, opened (a sealed one for its topic only) and checked as the verifier door checks a literal. */
async function openedHookSecret(ctx: ImportContext, j: number, row: HookSecretBackupRow): Promise<string> {
  return parseAtRow(SECRETS, j, "secret", VerifierSecretLiteral, await openBackupSecret(ctx, SECRETS, j, "secret", row.secret, hookSecretAad(row.topic)));
}

/**
 * A withheld (literal) secret of topic `topic`'s binding: this import's `hook-secrets` row, else
 * the deployment's binding's own, opened. Refuses the row when neither is to be had.
 */
async function withheldSecret(ctx: ImportContext, i: number, topic: string): Promise<string> {
  const secrets = ctx.rows[SECRETS] ?? [];
  const j = secrets.findIndex((s) => s.topic === topic);
  if (j >= 0) return openedHookSecret(ctx, j, secrets[j]);
  const deployed = await getVerifier(ctx.db, topic);
  if (!deployed || deployed.secret_sealed === null)
    throw rowFault(
      S,
      i,
      "secret",
      "its value is neither in this import (import the hook-secrets section with it) nor in the deployment's binding of the topic",
    );
  const opened = await openSealedVerifierSecret(deployed, ctx.settings);
  if (opened === null)
    throw rowFault(
      S,
      i,
      "secret",
      "the deployment's binding of the topic has a secret that does not open under SETTINGS_ENCRYPTION_KEY (import the hook-secrets section with it)",
    );
  return opened;
}

async function planVerifier(ctx: ImportContext, i: number, r: VerifierEntry): Promise<StoredVerifier> {
  parseAtRow(S, i, "topic", HookTopic, r.topic);
  parseAtRow(S, i, "created_by", userIdSchema, r.created_by);
  if (r.kind === "hmac_sha256") {
    if (r.signature_header === null) throw rowFault(S, i, "signature_header", "must be set for the hmac_sha256 kind");
  } else {
    for (const field of ["signature_header", "delivery_header"] as const)
      if (r[field] !== null) throw rowFault(S, i, field, "must be null: only the hmac_sha256 kind has it");
  }
  const secret = typeof r.secret === "string" ? await withheldSecret(ctx, i, r.topic) : r.secret;
  const body = parseAtRow(S, i, null, VerifierBody, verifierBody(r.kind, secret, r));
  return atRow(S, i, () =>
    verifierRecord(ctx.env, ctx.settings, r.topic, body, { created_by: r.created_by, created_at: r.created_at, updated_at: r.updated_at }),
  );
}

/** A program's three fields: jq text, or a text resource id with kwargs, and the rendered program. */
async function checkProgram(i: number, r: HookEntry, what: "condition" | "expr"): Promise<void> {
  const text = r[what];
  const id = r[`${what}_id`];
  const program = r[`${what}_program`];
  if ((text === null && id === null) !== (program === null)) throw rowFault(S, i, `${what}_program`, `must be set exactly when ${what} or ${what}_id is`);
  // The door renders jq text to itself; only a text resource renders to something else.
  if (text !== null && program !== text) throw rowFault(S, i, `${what}_program`, `must equal ${what} (a program given as jq text is that text)`);
  if (program !== null) await compiles(S, i, `${what}_program`, program);
}

interface HookPlanRow {
  index: number;
  row: Omit<HookRow, "execution_key_fingerprint">;
}

async function planHook(ctx: ImportContext, i: number, r: HookEntry, deployed: Set<string>): Promise<HookPlanRow> {
  // Every field that is set, so the door's rules see them all (both forms, kwargs without an id).
  const program = (what: "condition" | "expr") =>
    Object.fromEntries(([what, `${what}_id`, `${what}_kwargs`] as const).flatMap((f) => (r[f] !== null ? [[f, r[f]]] : [])));
  const body = parseAtRow(S, i, null, HookCreateBody, {
    name: r.name,
    topic: r.topic,
    tool: r.tool,
    execution_key: r.execution_key,
    tool_kwargs: r.tool_kwargs,
    ...program("condition"),
    ...program("expr"),
    state_binding: r.state_binding,
  });
  parseAtRow(S, i, "created_by", userIdSchema, r.created_by);
  await checkProgram(i, r, "condition");
  await checkProgram(i, r, "expr");
  if (!(await targetWillExist(ctx, "tool", body.tool))) throw rowFault(S, i, "tool", "names no tool of the deployment or this import");
  if (!(await keyWillExist(ctx, body.execution_key))) throw rowFault(S, i, "execution_key", "names no key of the deployment or this import");
  if (!(await checkImportedExecutionKey(ctx, S, i, body.execution_key, "a fire")) && deployed.has(body.execution_key)) {
    await atRow(S, i, () => bindExecutionKey(ctx.db, ctx.principal, body.execution_key));
  }
  await checkBindingNames(ctx, S, i, "state_binding", r.state_binding);
  const { type: _type, execution_key_fingerprint: _fingerprint, ...row } = r;
  // As the door stores them: kwargs `{}` when an id is given without any.
  const kwargs = (what: "condition" | "expr") => (r[`${what}_id`] !== null ? (r[`${what}_kwargs`] ?? {}) : null);
  return { index: i, row: { ...row, condition_kwargs: kwargs("condition"), expr_kwargs: kwargs("expr") } };
}

/** Refuses the first hook that would put its topic over MAX_HOOKS_PER_TOPIC once the import lands. */
async function checkTopicRoom(ctx: ImportContext, hooks: Array<{ i: number; r: HookEntry }>): Promise<void> {
  const imported = new Set(hooks.map((h) => h.r.name));
  const perTopic = new Map<string, number>();
  for (const h of await listHooks(ctx.db, {})) if (!imported.has(h.name)) perTopic.set(h.topic, (perTopic.get(h.topic) ?? 0) + 1);
  for (const { i, r } of hooks) {
    const n = (perTopic.get(r.topic) ?? 0) + 1;
    if (n > MAX_HOOKS_PER_TOPIC) throw rowFault(S, i, "topic", `would carry more than ${MAX_HOOKS_PER_TOPIC} hooks, the most one topic may carry`);
    perTopic.set(r.topic, n);
  }
}

interface HooksPlan {
  verifiers: StoredVerifier[];
  hooks: HookPlanRow[];
}

export const hooksSection = defineSection({
  name: S,
  secret: false,
  description:
    "Hooks (with the programs their fires run) and topic verifier bindings; literal verifier secrets are withheld (in hook-secrets). Trigger links are never exported.",
  store: "tool-runs",
  async exportRows(ctx) {
    const [verifiers, hooks] = await Promise.all([listVerifiers(ctx.db, null), listHooks(ctx.db, {})]);
    return [...verifiers.map((v): HookBackupRow => ({ type: "verifier", ...verifierView(v) })), ...hooks.map((h): HookBackupRow => ({ type: "hook", ...h }))];
  },
  async validate(rows, ctx) {
    const verifiers = rows.flatMap((r, i) => (r.type === "verifier" ? [{ i, r }] : []));
    const hooks = rows.flatMap((r, i) => (r.type === "hook" ? [{ i, r }] : []));
    const dupTopic = firstDuplicate(verifiers, (v) => v.r.topic);
    if (dupTopic >= 0) throw rowFault(S, verifiers[dupTopic].i, "topic", "repeats the topic of an earlier verifier row");
    const dupName = firstDuplicate(hooks, (h) => h.r.name);
    if (dupName >= 0) throw rowFault(S, hooks[dupName].i, "name", "repeats the name of an earlier hook row");
    const plan: HooksPlan = { verifiers: [], hooks: [] };
    for (const { i, r } of verifiers) plan.verifiers.push(await planVerifier(ctx, i, r));
    const deployed = new Set((await deployedKeys(ctx)).keys());
    for (const { i, r } of hooks) plan.hooks.push(await planHook(ctx, i, r, deployed));
    await checkTopicRoom(ctx, hooks);
    return plan;
  },
  async apply(plan, ctx) {
    await checkBindingsAtApply(
      ctx,
      S,
      plan.hooks.map((h) => ({ index: h.index, binding: h.row.state_binding })),
    );
    const statements = plan.verifiers.map((v) => upsertVerifierStatement(ctx.db, v));
    for (const h of plan.hooks) {
      // Bound as the registration door binds (the admin may bind any key); the fingerprint is the target's.
      const fingerprint = await inRow(S, h.index, () => bindExecutionKey(ctx.db, ctx.principal, h.row.execution_key));
      statements.push(upsertHookStatement(ctx.db, { ...h.row, execution_key_fingerprint: fingerprint }));
    }
    await runBatch(ctx.db, statements);
    return { applied: plan.verifiers.length + plan.hooks.length };
  },
});

export const hookSecretsSection = defineSection({
  name: SECRETS,
  secret: true,
  description:
    "The literal secrets of topic verifiers, by topic, each sealed under SETTINGS_ENCRYPTION_KEY for its topic: it opens only in a deployment holding that key (current or previous), where the import seals it again at rest.",
  store: "tool-runs",
  async exportRows(ctx) {
    const sealer = new BackupSealer(ctx);
    const rows: HookSecretBackupRow[] = [];
    for (const v of await listVerifiers(ctx.db, null)) {
      if (v.secret_sealed === null) continue;
      const secret = await openSealedVerifierSecret(v, ctx.settings);
      if (secret === null) throw unopenable();
      rows.push({ topic: v.topic, secret: await sealer.seal(secret, hookSecretAad(v.topic)) });
    }
    return rows;
  },
  async validate(rows, ctx) {
    const dup = firstDuplicate(rows, (r) => r.topic);
    if (dup >= 0) throw rowFault(SECRETS, dup, "topic", "repeats the topic of an earlier row");
    const partners = (ctx.rows.hooks ?? []).filter((r): r is VerifierEntry => r.type === "verifier");
    const standalone: StoredVerifier[] = [];
    for (const [i, row] of rows.entries()) {
      parseAtRow(SECRETS, i, "topic", HookTopic, row.topic);
      const secret = await openedHookSecret(ctx, i, row);
      const partner = partners.find((p) => p.topic === row.topic);
      if (partner) {
        // Sealed into the hooks section's batch with its binding.
        if (typeof partner.secret !== "string")
          throw rowFault(SECRETS, i, "topic", "this import's binding of the topic takes its secret from an env reference");
        continue;
      }
      const deployed = await getVerifier(ctx.db, row.topic);
      if (!deployed) throw rowFault(SECRETS, i, "topic", "names no topic verifier of the deployment or this import's hooks section");
      if (deployed.secret_sealed === null) throw rowFault(SECRETS, i, "topic", "the deployment's binding of the topic takes its secret from an env reference");
      const body = parseAtRow(SECRETS, i, null, VerifierBody, verifierBody(deployed.kind, secret, deployed));
      standalone.push(
        await atRow(SECRETS, i, () =>
          verifierRecord(ctx.env, ctx.settings, row.topic, body, { created_by: deployed.created_by, created_at: deployed.created_at, updated_at: ctx.nowIso }),
        ),
      );
    }
    return { count: rows.length, standalone };
  },
  async apply(plan, ctx) {
    await runBatch(
      ctx.db,
      plan.standalone.map((v) => upsertVerifierStatement(ctx.db, v)),
    );
    return { applied: plan.count };
  },
});

/**
 * The conversation sections (docs/backup.md): `target-configs`, `routes` and `route-secrets`
 * (secret: the api routes' callback signing secrets).
 *
 * A route is checked with the route door's rules (its body schema, the address guard on
 * `callback_url`, the target exists, the (channel, our_identity) pair is unclaimed, the door does
 * not change under threads, the pass-role rules of its execution key) and its compiled programs
 * must compile. Its execution key is bound as the route door binds it, by the importing admin,
 * which stores the key's fingerprint as the target deployment knows it: the route then runs as
 * the same key (the same raw key, when the `keys` section came along).
 *
 * The callback secret: from this import's `route-secrets`, else the one the deployment's route of
 * that name already has, else a fresh one, shown once in the import's answer (`callback_secrets`).
 * An export seals each callback secret for its route (src/backup/secret-values.ts).
 */
import { z } from "zod";
import { base64url } from "../../access-control/crypto";
import { bindExecutionKey } from "../../access-control/pass-role";
import { flushListings } from "../../shards/listing-table";
import { listRoutes, routeByChannelIdentity, routeHasThreads, upsertRouteStatement } from "../../conversations/store";
import type { Route } from "../../conversations/model/route";
import { routeCreateBody, routeNameSchema } from "../../conversations/model/schemas";
import { conflict } from "../../platform/http/errors";
import { d1 } from "../../platform/persistence/d1";
import { listConfigs, putConfigStatement } from "../../persons/target-configs";
import { assertDeclaredUrl } from "../../outbound/urls";
import { deployedKeys } from "../deployment";
import type { RouteBackupRow, RouteSecretBackupRow } from "../rows";
import { BackupSealer, backupAad, openBackupSecret } from "../secret-values";
import { type ImportContext, atRow, defineSection, inRow, parseAtRow, refuseDuplicates, rowFault, runBatch } from "../section";
import { keyWillExist } from "./access-control";
import { checkBindingNames, checkBindingsAtApply } from "./bindings";
import { checkImportedExecutionKey, compiles, targetWillExist } from "./references";
import { must } from "../../platform/must";

export const targetConfigsSection = defineSection({
  name: "target-configs",
  secret: false,
  description: "Target conversation configs (multichannel, greeting, state binding), as the config door takes them.",
  store: "conversations",
  exportRows: (ctx) => listConfigs(ctx.db),
  async validate(rows, ctx) {
    refuseDuplicates("target-configs", rows, (r) => `${r.target_kind}:${r.target_name}`, "(target_kind, target_name)");
    for (const [i, row] of rows.entries()) {
      if (!(await targetWillExist(ctx, row.target_kind, row.target_name)))
        throw rowFault("target-configs", i, "target_name", `names no ${row.target_kind} of the deployment or this import`);
      await checkBindingNames(ctx, "target-configs", i, "state_binding", row.state_binding);
    }
    return rows;
  },
  async apply(rows, ctx) {
    await checkBindingsAtApply(
      ctx,
      "target-configs",
      rows.map((row, index) => ({ index, binding: row.state_binding })),
    );
    await runBatch(
      ctx.db,
      // An import is an admin's write: the importing admin is each config's writer.
      rows.map((c) => putConfigStatement(ctx.db, c, ctx.nowIso, ctx.principal.key.user_id)),
    );
    return { applied: rows.length };
  },
});

const CallbackSecret = z.string().regex(/^[\x21-\x7e]{16,512}$/, { message: "must be 16-512 printable characters" });

/** Where a sealed callback secret may be restored: its route. */
const routeSecretAad = (routeName: string) => backupAad("route-secrets", routeName);

const OPENED_ROUTE_SECRETS = "route-secrets-opened";

/** This import's callback secrets by route, opened (sealed ones for their route only) and checked (memoized: both route sections ask). */
async function openedRouteSecrets(ctx: ImportContext): Promise<Map<string, string>> {
  const known = ctx.memo.get(OPENED_ROUTE_SECRETS) as Map<string, string> | undefined;
  if (known) return known;
  const out = new Map<string, string>();
  for (const [i, row] of (ctx.rows["route-secrets"] ?? []).entries()) {
    const plain = await openBackupSecret(ctx, "route-secrets", i, "callback_secret", row.callback_secret, routeSecretAad(row.route_name));
    out.set(row.route_name, parseAtRow("route-secrets", i, "callback_secret", CallbackSecret, plain));
  }
  ctx.memo.set(OPENED_ROUTE_SECRETS, out);
  return out;
}

interface RoutePlanRow {
  index: number;
  row: Omit<Route, "execution_key_fingerprint">;
  minted: boolean;
}

export const routesSection = defineSection({
  name: "routes",
  secret: false,
  description: "Conversation routes with their compiled programs; callback secrets are not here (route-secrets).",
  store: "conversations",
  async exportRows(ctx) {
    return (await listRoutes(ctx.db)).map(({ callback_secret: _secret, ...route }): RouteBackupRow => route);
  },
  async validate(rows, ctx) {
    refuseDuplicates("routes", rows, (r) => r.route_name, "route_name");
    refuseDuplicates(
      "routes",
      rows.filter((r) => r.channel !== null),
      (r) => JSON.stringify([r.channel, r.our_identity]),
      "(channel, our_identity)",
    );
    const existing = new Map((await listRoutes(ctx.db)).map((r) => [r.route_name, r]));
    const secrets = await openedRouteSecrets(ctx);
    const deployed = await deployedKeys(ctx);
    let flushed = false;
    const plan: RoutePlanRow[] = [];
    for (const [i, row] of rows.entries()) {
      parseAtRow("routes", i, "route_name", routeNameSchema, row.route_name);
      const body = parseAtRow("routes", i, null, routeCreateBody, {
        door: row.door,
        target_kind: row.target_kind,
        target_name: row.target_name,
        execution_key: row.execution_key,
        payload_expr: row.payload_expr,
        reply_expr: row.reply_expr,
        initial_mode: row.initial_mode,
        channel: row.channel,
        our_identity: row.our_identity,
        callback_url: row.callback_url,
        turns_per_hour_override: row.turns_per_hour_override,
        answer_feedback: row.answer_feedback,
      });
      for (const [expr, program, field] of [
        [row.payload_expr, row.payload_program, "payload_program"],
        [row.reply_expr, row.reply_program, "reply_program"],
      ] as const) {
        if ((expr === null) !== (program === null)) throw rowFault("routes", i, field, "must be set exactly when its expression is");
        if (program !== null) await compiles("routes", i, field, program);
      }
      const callbackUrl = body.callback_url;
      if (callbackUrl) await atRow("routes", i, () => assertDeclaredUrl("callback_url", callbackUrl, ctx.settings));
      if (!(await targetWillExist(ctx, body.target_kind, body.target_name)))
        throw rowFault("routes", i, "target_name", `names no ${body.target_kind} of the deployment or this import`);
      if (!(await keyWillExist(ctx, body.execution_key))) throw rowFault("routes", i, "execution_key", "names no key of the deployment or this import");
      if (!(await checkImportedExecutionKey(ctx, "routes", i, body.execution_key, "a turn")) && deployed.has(body.execution_key)) {
        await atRow("routes", i, () => bindExecutionKey(ctx.db, ctx.principal, body.execution_key));
      }
      if (row.channel !== null && row.our_identity !== null) {
        const holder = await routeByChannelIdentity(ctx.db, row.channel, row.our_identity);
        if (holder && holder.route_name !== row.route_name)
          throw rowFault("routes", i, "our_identity", "(channel, our_identity) is already claimed by another route of the deployment");
      }
      const before = existing.get(row.route_name);
      if (before && before.door !== row.door) {
        // As the route door: a thread's first record is in its listing shard before its door answered.
        if (!flushed) await flushListings(ctx.env);
        flushed = true;
        if (await routeHasThreads(ctx.db, row.route_name)) throw rowFault("routes", i, "door", "cannot change on a route that already has threads");
      }
      let secret: string | null = null;
      let minted = false;
      if (row.callback_url !== null) {
        secret = secrets.get(row.route_name) ?? (before?.callback_url && before.callback_secret ? before.callback_secret : null);
        if (secret === null) {
          secret = base64url(crypto.getRandomValues(new Uint8Array(32)));
          minted = true;
        }
      }
      const { execution_key_fingerprint: _fingerprint, ...stored } = row;
      plan.push({ index: i, row: { ...stored, callback_secret: secret, created_at: before?.created_at ?? row.created_at }, minted });
    }
    return plan;
  },
  async apply(plan, ctx) {
    const statements: D1PreparedStatement[] = [];
    for (const p of plan) {
      // Bound as the route door binds (the admin may bind any key); the fingerprint is the target's.
      const fingerprint = await inRow("routes", p.index, () => bindExecutionKey(ctx.db, ctx.principal, p.row.execution_key));
      statements.push(upsertRouteStatement(ctx.db, { ...p.row, execution_key_fingerprint: fingerprint }));
    }
    try {
      await runBatch(ctx.db, statements);
    } catch (err) {
      if (String(err).includes("UNIQUE"))
        throw conflict("a (channel, our_identity) of this import was claimed by another route meanwhile; nothing of the routes section was written");
      throw err;
    }
    const minted = plan
      .filter((p) => p.minted)
      .map((p) => ({ route_name: p.row.route_name, callback_secret: must(p.row.callback_secret, "a minted callback secret") }));
    return minted.length ? { applied: plan.length, callback_secrets: minted } : { applied: plan.length };
  },
});

export const routeSecretsSection = defineSection({
  name: "route-secrets",
  secret: true,
  description:
    "The callback signing secrets of api routes, by route, each sealed under SETTINGS_ENCRYPTION_KEY for its route: it opens only in a deployment holding that key.",
  store: "conversations",
  async exportRows(ctx) {
    const sealer = new BackupSealer(ctx);
    const rows: RouteSecretBackupRow[] = [];
    for (const r of await listRoutes(ctx.db))
      if (r.callback_secret) rows.push({ route_name: r.route_name, callback_secret: await sealer.seal(r.callback_secret, routeSecretAad(r.route_name)) });
    return rows;
  },
  async validate(rows, ctx) {
    refuseDuplicates("route-secrets", rows, (r) => r.route_name, "route_name");
    const opened = await openedRouteSecrets(ctx);
    const standalone: Array<{ route_name: string; callback_secret: string }> = [];
    const deployed = new Map((await listRoutes(ctx.db)).map((r) => [r.route_name, r]));
    for (const [i, row] of rows.entries()) {
      const partner = (ctx.rows.routes ?? []).find((r) => r.route_name === row.route_name);
      if (partner) {
        if (partner.callback_url === null) throw rowFault("route-secrets", i, "route_name", "this import's route has no callback_url");
        continue;
      }
      const route = deployed.get(row.route_name);
      if (!route?.callback_url) throw rowFault("route-secrets", i, "route_name", "names no api route with a callback_url in the deployment or this import");
      standalone.push({ route_name: row.route_name, callback_secret: must(opened.get(row.route_name), "the opened callback secret") });
    }
    return { count: rows.length, standalone };
  },
  async apply(plan, ctx) {
    await runBatch(
      ctx.db,
      plan.standalone.map(
        (s) => d1(ctx.db)`UPDATE routes SET callback_secret = ${s.callback_secret} WHERE route_name = ${s.route_name} AND callback_url IS NOT NULL`,
      ),
    );
    return { applied: plan.count };
  },
});

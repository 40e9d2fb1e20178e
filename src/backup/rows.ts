/**
 * The rows of a backup document, one zod schema per section
 * (docs/backup.md). These are the document's *shapes*: field names and types, unknown fields
 * refused. The rules a row must also meet (the doors' own schemas and checks, cross-references)
 * are each section's `validate` (src/backup/sections/*), which runs before anything is written.
 *
 * A row mirrors what its store keeps, reusing the store's or door's schema wherever one exists:
 * the access-control tables' raw rows (`src/access-control/tables.ts`), the declaration bodies of the tools
 * and agents doors, the target config and route shapes. Nothing secret is in a non-secret
 * section's row: literal header values, callback secrets, key hashes and secret settings have
 * sections of their own, and those carry each value sealed (`SecretValue`), never in the clear.
 */
import { z } from "zod";
import { ApiKeyRow, ApiKeyVersionRow, AuthScopeRow, PublicRouteRow, RoleRow, RoleVersionRow } from "../access-control/tables";
import { RouteView } from "../conversations/model/route";
import { TargetKind } from "../shared/kinds";
import { HookRow } from "../hooks/record";
import { CannedResponse } from "../inbox/canned-responses";
import { VerifierView } from "../hooks/verifier-store";
import { JsonObject, JsonValue } from "../platform/http/bounded-json";
import { TargetConversationConfig } from "../persons/target-configs";
import { agentDeclarationSchema } from "../targets/agents/declarations";
import { httpToolDeclarationSchema } from "../targets/tools/http-tools";

/** Most rows of one section, and most versions of one history (the body cap bounds them anyway). */
export const MAX_ROWS = 10_000;
export const MAX_VERSIONS = 1_000;

const Stamp = z.string().max(64);
/**
 * A secret value as an export writes it: sealed under the exporting deployment's
 * SETTINGS_ENCRYPTION_KEY for one place (src/backup/secret-values.ts), never in the clear.
 */
export const SealedSecret = z
  .object({
    sealed: z.object({ kid: z.string().max(64), iv: z.string().max(64), ct: z.string().max(2 * 1024 * 1024) }).strict(),
  })
  .strict();
export type SealedSecret = z.infer<typeof SealedSecret>;

/** Where a secret may stand in a document: sealed by an export, or plain (typed in for an import). */
export const SecretValue = z.union([z.string(), SealedSecret]);
export type SecretValue = z.infer<typeof SecretValue>;

/** Header names a declaration's row withheld because their values are literals (secrets). */
const WithheldHeaders = z.array(z.string().max(128)).max(32).default([]);

/** `keys` (secret): an `api_keys` row, hash included, with the key's policy history. */
export const KeyBackupRow = ApiKeyRow.extend({ versions: z.array(ApiKeyVersionRow).max(MAX_VERSIONS) });
export type KeyBackupRow = z.infer<typeof KeyBackupRow>;

/** `roles`: a `roles` row with its version history. */
export const RoleBackupRow = RoleRow.extend({ versions: z.array(RoleVersionRow).max(MAX_VERSIONS) });
export type RoleBackupRow = z.infer<typeof RoleBackupRow>;

/** `scopes`: one URL of a custom scope (the raw `auth_scopes` row). */
export const ScopeBackupRow = AuthScopeRow;
export type ScopeBackupRow = z.infer<typeof ScopeBackupRow>;

/** `public-routes`: one public pin (the raw `public_routes` row). */
export const PublicRouteBackupRow = PublicRouteRow;
export type PublicRouteBackupRow = z.infer<typeof PublicRouteBackupRow>;

/** `text-resources`: a stored text resource (a TemplatedText `id` source). */
export const TextResourceBackupRow = z.object({ id: z.string(), content: z.string(), created_at: Stamp, updated_at: Stamp }).strict();
export type TextResourceBackupRow = z.infer<typeof TextResourceBackupRow>;

/**
 * `tools`: a declared HTTP tool as the declaration door takes it (`POST /api/tools-config/entries`),
 * minus its literal header values, whose names are listed in `withheld_headers`.
 */
export const ToolBackupRow = z
  .object({ declaration: httpToolDeclarationSchema, withheld_headers: WithheldHeaders, created_at: Stamp, updated_at: Stamp })
  .strict();
export type ToolBackupRow = z.infer<typeof ToolBackupRow>;

/** `agents`: a declared agent as its door takes it (`POST /api/agents-config/entries`), literal header values withheld. */
export const AgentBackupRow = z
  .object({ declaration: agentDeclarationSchema, withheld_headers: WithheldHeaders, created_at: Stamp, updated_at: Stamp })
  .strict();
export type AgentBackupRow = z.infer<typeof AgentBackupRow>;

/** `target-secrets` (secret): the literal header values of one tool or http agent, each sealed for its header and URL origin. */
export const TargetSecretBackupRow = z.object({ kind: TargetKind, title: z.string(), headers: z.record(z.string(), SecretValue) }).strict();
export type TargetSecretBackupRow = z.infer<typeof TargetSecretBackupRow>;

/** One preset version: its body as stored (`presetBodySchema`'s fields), tags and time. */
export const PresetVersionBackupRow = z.object({ version: z.number().int(), body: JsonObject, tags: z.array(z.string()), created_at: Stamp }).strict();
export type PresetVersionBackupRow = z.infer<typeof PresetVersionBackupRow>;

/** `presets`: a preset's row with every version. */
export const PresetBackupRow = z
  .object({
    name: z.string(),
    current_version: z.number().int(),
    latest_version: z.number().int(),
    created_at: Stamp,
    updated_at: Stamp,
    versions: z.array(PresetVersionBackupRow).max(MAX_VERSIONS),
  })
  .strict();
export type PresetBackupRow = z.infer<typeof PresetBackupRow>;

/** `state-templates`: a state template document as the template door takes it. */
export const StateTemplateBackupRow = z.object({ name: z.string(), document: JsonObject, created_at: Stamp, updated_at: Stamp }).strict();
export type StateTemplateBackupRow = z.infer<typeof StateTemplateBackupRow>;

/** An attachment of a template to a state, as the attach door takes it (`PUT …/attachments/{template}`). */
export const StateAttachmentBackupRow = z
  .object({ template: z.string(), path: z.array(z.string()), parameters: JsonObject, declarations: JsonObject, options: JsonObject })
  .strict();
export type StateAttachmentBackupRow = z.infer<typeof StateAttachmentBackupRow>;

/** `states`: a state's declaration as the declare door takes it (`PUT /api/states/{name}`), with its attachments. */
export const StateBackupRow = z
  .object({
    name: z.string(),
    description: z.string(),
    schema: JsonValue,
    subject_kinds: z.array(z.string()),
    default_subject_kind: z.string(),
    retention_days: z.number().int().nullable(),
    attachments: z.array(StateAttachmentBackupRow).max(64),
  })
  .strict();
export type StateBackupRow = z.infer<typeof StateBackupRow>;

/** `target-configs`: a target conversation config, exactly the config door's body. */
export const TargetConfigBackupRow = TargetConversationConfig;
export type TargetConfigBackupRow = z.infer<typeof TargetConfigBackupRow>;

/**
 * `routes`: a stored route without its callback secret: the public view plus the compiled
 * programs the turns run (so an expression given by a text resource id restores as it runs).
 */
export const RouteBackupRow = RouteView.extend({
  payload_program: z.string().nullable(),
  reply_program: z.string().nullable(),
  // Backups made before routes had the switch restore with it off.
  answer_feedback: z.boolean().default(false),
}).strict();
export type RouteBackupRow = z.infer<typeof RouteBackupRow>;

/**
 * `route-hours`: a route's business hours (docs/inbox.md "Business hours"), the policy as the hours
 * door takes it (checked by that door's schema on import) and when and by whom it was written.
 */
export const RouteHoursBackupRow = z.object({ route_name: z.string(), hours: JsonObject, updated_at: Stamp, updated_by: z.string().nullable() }).strict();
export type RouteHoursBackupRow = z.infer<typeof RouteHoursBackupRow>;

/** `route-secrets` (secret): an api route's callback signing secret, sealed for that route. */
export const RouteSecretBackupRow = z.object({ route_name: z.string(), callback_secret: SecretValue }).strict();
export type RouteSecretBackupRow = z.infer<typeof RouteSecretBackupRow>;

/**
 * `hooks`: a hook as D1 keeps it (the registration as given, the bound key's fingerprint, and the
 * rendered programs its fires run), or a topic verifier binding as its door shows it, never with
 * a literal secret (`"<redacted>"`: the value is in `hook-secrets`; an `{"env"}` reference as
 * given). `type` tells the two apart, since a binding's `kind` is its verifier kind. Trigger
 * links are capabilities and never in a backup.
 */
export const HookBackupRow = z.discriminatedUnion("type", [
  HookRow.extend({ type: z.literal("hook") }).strict(),
  VerifierView.extend({ type: z.literal("verifier") }).strict(),
]);
export type HookBackupRow = z.infer<typeof HookBackupRow>;

/** `hook-secrets` (secret): a topic verifier's literal secret, sealed for that topic (sealed again at rest on import). */
export const HookSecretBackupRow = z.object({ topic: z.string(), secret: SecretValue }).strict();
export type HookSecretBackupRow = z.infer<typeof HookSecretBackupRow>;

/** `settings-overlay`: one non-secret setting of the runtime overlay, as the env text. */
export const SettingBackupRow = z.object({ name: z.string(), value: z.string() }).strict();
export type SettingBackupRow = z.infer<typeof SettingBackupRow>;

/** `settings-secrets` (secret): a secret overlay value, or one secret entry of a profile version, sealed for that place. */
export const SettingSecretBackupRow = z.discriminatedUnion("kind", [
  z.object({ kind: z.literal("overlay"), name: z.string(), value: SecretValue }).strict(),
  z.object({ kind: z.literal("profile"), profile: z.string(), version: z.number().int(), name: z.string(), value: SecretValue }).strict(),
]);
export type SettingSecretBackupRow = z.infer<typeof SettingSecretBackupRow>;

/** One profile version without its secret values (their names are in `secret_keys`). */
export const ProfileVersionBackupRow = z
  .object({ version: z.number().int(), description: z.string(), env: z.record(z.string(), z.string()), secret_keys: z.array(z.string()), created_at: Stamp })
  .strict();
export type ProfileVersionBackupRow = z.infer<typeof ProfileVersionBackupRow>;

/** `profiles`: a settings profile with every version. */
export const ProfileBackupRow = z.object({ name: z.string(), versions: z.array(ProfileVersionBackupRow).max(MAX_VERSIONS) }).strict();
export type ProfileBackupRow = z.infer<typeof ProfileBackupRow>;

/**
 * `tool-meta`: the tool metadata overlay (docs/tool-metadata.md), one row per folder and per tool
 * row, as its tables keep them.
 */
export const ToolMetaBackupRow = z.discriminatedUnion("kind", [
  z
    .object({ kind: z.literal("folder"), folder_id: z.string(), name: z.string(), parent_id: z.string().nullable(), created_at: Stamp, updated_at: Stamp })
    .strict(),
  z
    .object({
      kind: z.literal("tool"),
      name: z.string(),
      tags: z.array(z.string()),
      badges: z.array(z.string()),
      hidden: z.boolean().nullable(),
      folder_id: z.string().nullable(),
      updated_at: Stamp,
    })
    .strict(),
]);
export type ToolMetaBackupRow = z.infer<typeof ToolMetaBackupRow>;

/** `canned-responses`: a canned response of the inbox (docs/inbox.md), its row as D1 keeps it. */
export const CannedResponseBackupRow = CannedResponse;
export type CannedResponseBackupRow = z.infer<typeof CannedResponseBackupRow>;

/**
 * Every section's row schema, in the order an import applies them, so references resolve:
 * keys before what binds them, roles and scopes before keys are used, declarations before the
 * presets, configs and routes that name them, templates before the states that attach them,
 * hooks after the keys, tools, presets and states they name (beside the routes: both bind
 * execution keys), a route's hours after the routes, the overlay before the profiles. Tool metadata names tools only by name (a row
 * may outlive its tool), and canned responses name nothing, so they need nothing before them.
 */
export const SECTION_ROWS = {
  keys: KeyBackupRow,
  roles: RoleBackupRow,
  scopes: ScopeBackupRow,
  "public-routes": PublicRouteBackupRow,
  "text-resources": TextResourceBackupRow,
  tools: ToolBackupRow,
  agents: AgentBackupRow,
  "target-secrets": TargetSecretBackupRow,
  presets: PresetBackupRow,
  "state-templates": StateTemplateBackupRow,
  states: StateBackupRow,
  "target-configs": TargetConfigBackupRow,
  routes: RouteBackupRow,
  "route-secrets": RouteSecretBackupRow,
  "route-hours": RouteHoursBackupRow,
  hooks: HookBackupRow,
  "hook-secrets": HookSecretBackupRow,
  "settings-overlay": SettingBackupRow,
  "settings-secrets": SettingSecretBackupRow,
  profiles: ProfileBackupRow,
  "tool-meta": ToolMetaBackupRow,
  "canned-responses": CannedResponseBackupRow,
} as const;

export type SectionName = keyof typeof SECTION_ROWS;
export const SECTION_NAMES = Object.keys(SECTION_ROWS) as SectionName[];
export const SectionNameSchema = z.enum(SECTION_NAMES as [SectionName, ...SectionName[]]);

/** A section's row, as parsed from a document (defaults applied). */
export type RowOf<N extends SectionName> = z.output<(typeof SECTION_ROWS)[N]>;

/** The rows of the sections an import applies, by name. */
export type SectionRows = { [N in SectionName]?: Array<RowOf<N>> };

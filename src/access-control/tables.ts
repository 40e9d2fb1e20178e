/**
 * The D1 tables of access control (migrations/0001_access_control.sql and
 * 0012_access_control_extended.sql), with the zod schema of each raw row, for backup/restore and
 * anything else that copies them. `api_keys` rows carry `key_hash` (SHA-256 of the raw key: a
 * restore needs it, so a backup holding it must be guarded like the database). `auth_throttle`
 * (bootstrap back-off) is transient and left out.
 */
import { z } from "zod";
import { AuthScopeRow } from "./custom-scopes";
import { ApiKeyVersionRow } from "./key-versions";
import { PublicRouteRow } from "./public-routes";
import { RoleRow, RoleVersionRow } from "./roles";

export { ApiKeyVersionRow, AuthScopeRow, PublicRouteRow, RoleRow, RoleVersionRow };

/** A raw `api_keys` row. */
export const ApiKeyRow = z
  .object({
    user_id: z.string(),
    key_hash: z.string(),
    description: z.string(),
    scopes: z.string(),
    condition: z.string().nullable(),
    owner_user_id: z.string().nullable(),
    disabled: z.number().int(),
    key_fingerprint: z.string(),
    created_at: z.string(),
    updated_at: z.string(),
    role: z.string().nullable(),
    /** The key's lineage generation (src/access-control/identity.ts); a backup document from before it has none: 0. */
    generation: z.number().int().min(0).default(0),
  })
  .strict();
export type ApiKeyRow = z.infer<typeof ApiKeyRow>;

/** Table name → raw row schema. No foreign keys: the tables restore in any order. */
export const ACCESS_CONTROL_TABLES = {
  api_keys: ApiKeyRow,
  roles: RoleRow,
  role_versions: RoleVersionRow,
  auth_scopes: AuthScopeRow,
  public_routes: PublicRouteRow,
  api_key_versions: ApiKeyVersionRow,
} as const;

export type AccessControlTable = keyof typeof ACCESS_CONTROL_TABLES;

/**
 * A key as every area and the objects' contracts see it: the shapes of access control that cross the
 * area's edge. Never the raw key, never its hash; the D1 statements are src/access-control/key-store.ts.
 */
import type { ScopeUrl } from "./custom-scopes";
import type { RoleGrants } from "./roles";

/** A key's role as read live with the key: its grants and condition. */
export interface RoleBound {
  grants: RoleGrants;
  condition: string | null;
}

/** A stored key as the rest of the code sees it (never the raw key, never the hash). */
export interface KeyRecord {
  user_id: string;
  description: string;
  scopes: string[];
  condition: string | null;
  owner_user_id: string | null;
  disabled: boolean;
  key_fingerprint: string;
  created_at: string;
  updated_at: string;
  /** The role the key names, or null. */
  role: string | null;
  /**
   * The named role's live grants and condition, read in the key's own statement; null when the
   * key names no role, or names one that no longer exists (which denies everything: fail closed).
   */
  role_def: RoleBound | null;
  /** The URLs of the custom scopes among `scopes`, read in the key's own statement. */
  scope_urls: ScopeUrl[];
  /**
   * How many holders the user_id had before this key (0: the first). A key minted again over a
   * revoked user_id starts a new lineage (src/access-control/identity.ts); `created_at` is when it began.
   */
  generation: number;
}

/** A key with its owner's live record (null for an unowned key or a missing owner). */
export interface KeyWithOwner {
  key: KeyRecord;
  owner: KeyRecord | null;
}

/**
 * What a caller may mint (pure; `GET /api/auth/capabilities` and `me.mintable`,
 * docs/access-control.md). It applies the mint door's own rules: an owned key mints nothing; an
 * admin mints anything for any owner; any other key mints keys it owns, with scopes each covered by
 * its own (`scopeCovered`, the same check the mint door runs), and any existing role (a role only
 * narrows). Whether the caller may reach the mint door at all (`can_mint`) is decided by the caller
 * through the real authorizer and passed in.
 */
import { z } from "zod";
import type { Principal } from "./principal";
import { SCOPE_TAGS, scopeCovered } from "./scopes";

export const Capabilities = z.object({
  can_mint: z.boolean(),
  /** "any": the admin may mint for any owner (or none); "self": minted keys are owned by the caller. */
  owner: z.enum(["any", "self", "none"]),
  owner_user_id: z.string().nullable(),
  scopes: z.array(z.string()),
  custom_scopes: z.array(z.string()),
  tools: z.array(z.string()),
  agents: z.array(z.string()),
  roles: z.array(z.string()),
  condition: z.boolean(),
});
export type Capabilities = z.infer<typeof Capabilities>;

export interface Known {
  roles: readonly string[];
  scopeIds: readonly string[];
  tools: readonly string[];
  agents: readonly string[];
}

/** Every tag-grammar scope string but the run grants, in a stable order. */
export function grammarScopes(): string[] {
  return ["*", ...SCOPE_TAGS.flatMap((t) => [t, `${t}:read`, `${t}:write`])];
}

export function capabilities(p: Principal, canMint: boolean, known: Known): Capabilities {
  const none: Capabilities = {
    can_mint: false,
    owner: "none",
    owner_user_id: null,
    scopes: [],
    custom_scopes: [],
    tools: [],
    agents: [],
    roles: [],
    condition: false,
  };
  if (!canMint || p.restricted || p.anonymous) return none;
  const covered = (s: string) => p.admin || scopeCovered(p.key.scopes, s);
  return {
    can_mint: true,
    owner: p.admin ? "any" : "self",
    owner_user_id: p.admin ? null : p.key.user_id,
    scopes: grammarScopes().filter(covered),
    custom_scopes: known.scopeIds.filter(covered),
    tools: known.tools.filter((n) => covered(`tool:${n}`)),
    agents: known.agents.filter((n) => covered(`agent:${n}`)),
    roles: [...known.roles],
    condition: true,
  };
}

import type { Principal } from "../auth/principal";
import type { Env } from "../env";
import type { Settings } from "../settings/settings";

/** Hono environment shared by every router: bindings plus per-request variables. */
export type AppEnv = {
  Bindings: Env;
  Variables: {
    settings: Settings;
    principal: Principal | null;
    /** Results of a route spec's `prefetch` statements (see src/http/route.ts). */
    prefetched: D1Result[];
  };
};

import type { Env } from "../env";
import type { Settings } from "../settings/settings";

/**
 * Hono environment shared by every router: bindings plus per-request variables. The caller is not
 * one of them: the route pipeline hands it to authenticated handlers only (src/platform/http/route.ts), so
 * no handler reads a principal that its door's declaration does not guarantee.
 */
export type AppEnv = {
  Bindings: Env;
  Variables: {
    settings: Settings;
  };
};

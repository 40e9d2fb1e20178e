/**
 * The doors of the rest of access control (docs/access-control.md): roles, custom URL
 * scopes, public routes, key policy history and introspection. Each group is its own router,
 * mounted here; the key doors and `me` stay in src/access-control/routes/auth.ts.
 */
import { Hono } from "hono";
import type { AppEnv } from "../../platform/http/app-env";
import { accessControlIntrospectionRouter } from "./introspection";
import { accessControlKeysRouter } from "./keys";
import { accessControlPublicRoutesRouter } from "./public-routes";
import { accessControlRolesRouter } from "./roles";
import { accessControlScopesRouter } from "./scopes";

export const accessControlRouter = new Hono<AppEnv>();

for (const router of [
  accessControlRolesRouter,
  accessControlScopesRouter,
  accessControlPublicRoutesRouter,
  accessControlKeysRouter,
  accessControlIntrospectionRouter,
]) {
  accessControlRouter.route("/", router);
}

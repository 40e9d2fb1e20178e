/**
 * The doors of the rest of access control (docs/access-control.md): roles, custom URL
 * scopes, public routes, key policy history and introspection. Each group is its own router,
 * mounted here; the key doors and `me` stay in src/routers/auth.ts.
 */
import { Hono } from "hono";
import type { AppEnv } from "../http/app-env";
import { accessControlIntrospectionRouter } from "./access-control-introspection";
import { accessControlKeysRouter } from "./access-control-keys";
import { accessControlPublicRoutesRouter } from "./access-control-public-routes";
import { accessControlRolesRouter } from "./access-control-roles";
import { accessControlScopesRouter } from "./access-control-scopes";

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

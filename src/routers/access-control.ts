/** The doors of the rest of access control (issue 15): roles, custom URL scopes, public routes, key policy history, introspection. */
import { Hono } from "hono";
import type { AppEnv } from "../http/app-env";

export const accessControlRouter = new Hono<AppEnv>();

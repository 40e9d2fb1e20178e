/** The doors of runtime settings and profiles (issue 15). */
import { Hono } from "hono";
import type { AppEnv } from "../http/app-env";

export const configRouter = new Hono<AppEnv>();

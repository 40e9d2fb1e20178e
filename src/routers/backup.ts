/** The doors of backup export and import (issue 15). */
import { Hono } from "hono";
import type { AppEnv } from "../http/app-env";

export const backupRouter = new Hono<AppEnv>();

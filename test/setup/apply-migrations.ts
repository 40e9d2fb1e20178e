import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";

// Every test file starts from the real schema; applyD1Migrations skips what is applied.
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);

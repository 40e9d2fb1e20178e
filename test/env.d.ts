import type { D1Migration } from "cloudflare:test";
import type { Env } from "../src/env";

declare global {
  namespace Cloudflare {
    interface Env extends ProvidedEnv {}
  }
}
interface ProvidedEnv extends Env {
  TEST_MIGRATIONS: D1Migration[];
  /** Fuzz replay seed and runs per door (vitest.config.ts passes them from the shell; "" = default). */
  FUZZ_SEED: string;
  FUZZ_RUNS: string;
}

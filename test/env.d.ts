import type { D1Migration } from "cloudflare:test";
import type { TEST_CHANNELS, TEST_SECRET_REFERENCES } from "../vitest.config";

// The generated Env (worker-configuration.d.ts, `npm run types`) plus what only the workers tests
// bind (vitest.config.ts `miniflare.bindings`).
declare global {
  namespace Cloudflare {
    interface Env extends TestChannelVars {
      TEST_MIGRATIONS: D1Migration[];
      /** Fuzz replay seed and runs per door (vitest.config.ts passes them from the shell; "" = default). */
      FUZZ_SEED: string;
      FUZZ_RUNS: string;
    }
  }
}

type TestChannelVars = { [K in keyof typeof TEST_CHANNELS | keyof typeof TEST_SECRET_REFERENCES]: string };

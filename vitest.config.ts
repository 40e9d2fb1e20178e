import { randomBytes } from "node:crypto";
import path from "node:path";
import { defineConfig } from "vitest/config";
import "./test/setup/loopback-ws";
import { LongFirstSequencer } from "./test/setup/long-first";

// Loaded after test/setup/loopback-ws.ts has run: the pool brings miniflare, which takes `ws` as
// it finds it then (a static import would be hoisted above that file's code by the config bundle).
const { cloudflareTest, readD1Migrations } = await import("@cloudflare/vitest-pool-workers");

/** Test-only channel secrets: every channel is configured, and sends go to fake hosts that the
 * workerd tests answer through the network edge (test/helpers/network.ts). */
export const TEST_CHANNELS = {
  CHANNEL_TWILIO_ACCOUNT_SID: "ACtest",
  CHANNEL_TWILIO_AUTH_TOKEN: "twilio-test-token",
  CHANNEL_TWILIO_PUBLIC_URL: "https://bridge.test",
  CHANNEL_TWILIO_API_BASE: "https://twilio.fake",
  CHANNEL_WHATSAPP_APP_SECRET: "whatsapp-test-secret",
  CHANNEL_WHATSAPP_ACCESS_TOKEN: "whatsapp-test-access",
  CHANNEL_WHATSAPP_VERIFY_TOKEN: "whatsapp-test-verify",
  CHANNEL_WHATSAPP_API_BASE: "https://whatsapp.fake/v21.0",
  CHANNEL_TELEGRAM_BOT_TOKEN: "123456:telegram-test-token",
  CHANNEL_TELEGRAM_WEBHOOK_SECRET: "telegram-test-secret",
  CHANNEL_TELEGRAM_API_BASE: "https://telegram.fake",
  CHANNEL_SLACK_SIGNING_SECRET: "slack-test-signing",
  CHANNEL_SLACK_BOT_TOKEN: "xoxb-slack-test",
  CHANNEL_SLACK_BOT_USER_ID: "UBOTTEST",
  CHANNEL_SLACK_API_BASE: "https://slack.fake/api",
};

/** The fake hosts the workers tests declare tools, agents and MCP servers at with env references. */
const TEST_REFERENCE_HOSTS = [
  "https://tools.example",
  "https://tools.example.com",
  "https://t.example",
  "https://t.example.com",
  "https://t2.example",
  "https://x.example",
  "https://a.example",
  "https://api.example",
  "https://agent.example",
  "https://agent.example.com",
  "https://agents.example",
  "https://llm.example",
  "https://llm.example.com",
  "https://crm.example.com",
  "https://new.example.com",
  "https://old.example.com",
  "https://mcp.example.com",
  "https://tools.fake",
  "https://agents.fake",
];

/** The names those references use. */
const TEST_REFERENCE_NAMES = [
  "LLM_KEY",
  "TOOL_SECRET",
  "AGENT_KEY",
  "TOOL_SECRET_UNSET_IN_TESTS",
  "SECRET_T",
  "SECRET_MCP",
  "SECRET_MCP_TOKEN",
  "SECRET_FINE",
  "SECRET_SCOPED_TOKEN",
  "SECRET_LLM",
];

/** The env references the workers tests declare predate the `SECRET_*` scope (decisions §14);
 * listing them keeps those tests as they were. Each name is bound to the fake hosts the tests send
 * it to (SECRET_REFERENCE_ORIGINS, docs/security.md); a host outside the list receives none. Tests
 * of the scope and of the bindings themselves override these. */
export const TEST_SECRET_REFERENCES = {
  SECRET_REFERENCE_ALLOWLIST: "LLM_KEY,TOOL_SECRET,AGENT_KEY,TOOL_SECRET_UNSET_IN_TESTS",
  SECRET_REFERENCE_ORIGINS: JSON.stringify({
    ...Object.fromEntries(TEST_REFERENCE_NAMES.map((name) => [name, TEST_REFERENCE_HOSTS])),
    // The stored MCP values' own binding is what test/mcp/secret-env-origins.test.ts pins: the
    // deployment lets both of its hosts receive these names, and the value's binding decides.
    SECRET_MCP_BOUND: ["https://mcp.example.com", "https://collector.example"],
    SECRET_MCP_FIRST: ["https://mcp.example.com", "https://collector.example"],
  }),
};

/** The secrets wrangler.toml declares (`[secrets] required`), fresh for every run: nothing secret is
 * committed, and no test can depend on a value. Tests read them from `env`. */
export const TEST_SECRETS = {
  ACCESS_CONTROL_BOOTSTRAP_TOKEN: randomBytes(32).toString("base64url"),
  SETTINGS_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
  CONNECTORS_ENCRYPTION_KEY: randomBytes(32).toString("base64"),
};

// The pool reads wrangler.toml through wrangler, which looks for the declared secrets in .dev.vars,
// or (without that file) in the process env, and warns on every run when they are missing. The
// bindings below win either way; these copies only keep a fresh clone's `npm test` quiet. The
// `[secrets]` field's "experimental" notice is silenced for the same reason (docs/deploy.md).
for (const [name, value] of Object.entries(TEST_SECRETS)) process.env[name] ??= value;
process.env.WRANGLER_DISABLE_EXPERIMENTAL_WARNING ??= "1";

// Four projects: `workers` runs inside workerd against real D1 and Durable Objects;
// `e2e` runs in Node and drives a real `wrangler dev` over HTTP; `deploy` checks the deploy path in
// Node; `browser` drives the operator console in Chromium against a real `wrangler dev`.
export default defineConfig({
  test: {
    // Four slots on a 2-CPU machine: a slot's file often waits (an e2e server starting, a browser
    // page or a schedule's next minute, a runtime loading modules, a poll). With three, the slots
    // were full for the whole run while the cores stood idle about a quarter of it; a fourth
    // keeps both cores busy through those waits. No project sets `fileParallelism: false`: vitest
    // would move its files into a serial group run after all the others, one at a time.
    maxWorkers: 4,
    sequence: { sequencer: LongFirstSequencer },
    projects: [
      {
        plugins: [
          cloudflareTest(async () => {
            const migrations = await readD1Migrations(path.join(import.meta.dirname, "migrations"));
            return {
              main: "./src/index.ts",
              remoteBindings: false,
              wrangler: { configPath: "./wrangler.toml" },
              miniflare: {
                // FUZZ_SEED / FUZZ_RUNS replay or deepen the fuzz suite (test/hardening/fuzz.ts) from the shell.
                // The listing's batched D1 write lags by at most this (the per-message path writes no D1); tests that read
                // the listing wait for it (test/helpers/listing.ts), and 50 ms keeps them quick.
                bindings: {
                  TEST_MIGRATIONS: migrations,
                  ...TEST_SECRETS,
                  ...TEST_CHANNELS,
                  ...TEST_SECRET_REFERENCES,
                  CONVERSATIONS_INDEX_FLUSH_LAG_SECONDS: "0.05",
                  // One epoch object instead of 8 × 4: storage is emptied between test files, so each
                  // file would start every object of the deployed layout afresh (test/platform/epochs
                  // runs the deployed layout itself).
                  ACCESS_EPOCH_SHARDS: "1",
                  ACCESS_EPOCH_REPLICAS: "1",
                  FUZZ_SEED: process.env.FUZZ_SEED ?? "",
                  FUZZ_RUNS: process.env.FUZZ_RUNS ?? "",
                },
              },
            };
          }),
        ],
        test: {
          name: "workers",
          include: ["test/**/*.test.ts"],
          exclude: ["test/e2e/**", "test/browser/**", "test/deploy/**"],
          setupFiles: ["./test/setup/apply-migrations.ts"],
          isolate: false,
          // The slots share two cores with servers, a browser and the checks: a test that takes 2 s
          // alone can take several here. A hung test still fails, only later.
          testTimeout: 20_000,
          // A file's setup (the authorization matrix mints its keys and routes in one hook) takes
          // the same slowdown as its tests; a hung hook still fails, only later.
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.test.ts"],
          // The migrated template and the dev server factory first: the shared server (started on
          // first use) copies the one and runs in the other.
          globalSetup: ["./test/e2e/support/migrated-state.ts", "./test/e2e/support/dev-factory.ts", "./test/e2e/support/shared-server.ts"],
          environment: "node",
          testTimeout: 120_000,
          hookTimeout: 180_000,
          // Each file runs its own server on its own ports and persistence directory, or uses the one
          // shared server (test/e2e/support/shared-dev.ts), so files may run side by side in the slots.
          fileParallelism: true,
          // A slot's process runs file after file, loading the harness and its helpers once: the
          // files keep their state in their own module scope and leave the process as they found it.
          isolate: false,
        },
      },
      {
        // The deploy path in Node (docs/deploy.md): the local secrets `npm start` writes, the
        // deploy's preflight, and a `wrangler deploy --dry-run` checked against the platform's
        // limits. No network: the dry run and the startup profile run locally. It shares the slots
        // with the others: the startup profile it takes (about 150 ms of a 1 s limit) retries a
        // sample that a busy machine inflated.
        test: {
          name: "deploy",
          include: ["test/deploy/**/*.test.ts"],
          environment: "node",
          testTimeout: 180_000,
          hookTimeout: 180_000,
        },
      },
      {
        // The operator console in a real Chromium (Debian's, driven by playwright-core) against a
        // real `wrangler dev` (docs/console.md "Browser tests"), in a slot next to the others. The
        // files share one Chromium and, where they can, one server (test/browser/support/shared.ts).
        test: {
          name: "browser",
          include: ["test/browser/**/*.test.ts"],
          // The migrated template and the dev server factory first: the shared server (started on
          // first use) copies the one and runs in the other.
          globalSetup: ["./test/e2e/support/migrated-state.ts", "./test/e2e/support/dev-factory.ts", "./test/browser/support/shared-server.ts"],
          environment: "node",
          testTimeout: 120_000,
          hookTimeout: 240_000,
        },
      },
    ],
  },
});

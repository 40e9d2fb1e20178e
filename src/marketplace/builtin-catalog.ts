/**
 * The built-in catalog (`MARKETPLACE_REGISTRY_URL = "builtin:"`, the wrangler.toml default): a
 * small index embedded in this build, so a fresh `npm start` can search, install and upgrade with
 * no network. Its plugins are examples: presets over the built-in `echo` tool (which work as they
 * are), an HTTP tool and an http agent pointing at example.com (installable and readable; a call
 * reaches example.com, which answers no JSON, so running them is a tool error until re-pointed),
 * and versions written for a newer contract, to show how incompatible versions are reported.
 * It goes through the same validation as a fetched index (test/marketplace/pure.test.ts).
 */
import { INDEX_FORMAT } from "./index-format";

const V1 = { "bridge-declarations": [1] };
const V2_ONLY = { "bridge-declarations": [2] };

const helloWorld = {
  name: "hello-world",
  base_tool: "echo",
  description: "Answers hello, world (the echo tool with a fixed message).",
  fixed_kwargs: { message: "hello, world" },
};
const goodMorning = { name: "good-morning", base_tool: "echo", description: "Answers good morning.", fixed_kwargs: { message: "good morning" } };

const weatherLookup = {
  title: "weather-lookup",
  kind: "http",
  description: "Looks up the weather of a city (an example endpoint at example.com: re-point it before use).",
  url: "https://example.com/weather",
  input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  timeout_seconds: 10,
};

export const BUILTIN_INDEX: unknown = {
  format: INDEX_FORMAT,
  plugins: [
    {
      namespace: "examples",
      name: "greetings",
      description: "Greeting presets over the built-in echo tool.",
      categories: ["examples", "text"],
      kinds: ["preset"],
      versions: [
        { version: "1.0.0", contracts: V1, declarations: { presets: [helloWorld] } },
        { version: "1.1.0", contracts: V1, declarations: { presets: [helloWorld, goodMorning] } },
      ],
    },
    {
      namespace: "examples",
      name: "weather",
      description: "An HTTP weather tool and a preset for one city.",
      categories: ["examples", "data"],
      kinds: ["http_tool", "preset", "state_template"],
      advisories: [
        {
          id: "EXAMPLE-2026-001",
          severity: "low",
          summary: "0.9.0 declares no preset for the common case; 1.0.0 adds weather-berlin. (An example advisory.)",
          affected_versions: ["0.9.0"],
          fixed_in: "1.0.0",
        },
      ],
      versions: [
        { version: "0.9.0", contracts: V1, declarations: { http_tools: [weatherLookup] } },
        {
          version: "1.0.0",
          contracts: V1,
          declarations: {
            http_tools: [weatherLookup],
            presets: [{ name: "weather-berlin", base_tool: "weather-lookup", description: "The weather in Berlin.", fixed_kwargs: { city: "Berlin" } }],
          },
        },
        {
          // Written for a newer declaration contract: listed, never installed by this build.
          version: "2.0.0",
          contracts: V2_ONLY,
          declarations: { http_tools: [weatherLookup], state_templates: [{ name: "forecast-cache" }] },
        },
      ],
    },
    {
      namespace: "examples",
      name: "support-desk",
      description: "An http agent for a support desk (an example endpoint at example.com: re-point it before use).",
      categories: ["examples", "agents"],
      kinds: ["agent"],
      versions: [
        {
          version: "1.0.0",
          contracts: V1,
          declarations: {
            agents: [{ title: "support-desk", kind: "http", description: "Answers support questions.", config: { url: "https://example.com/support-agent" } }],
          },
        },
      ],
    },
    {
      namespace: "examples",
      name: "profile-memory",
      description: "A state template for customer profiles (needs a newer build: bridge-declarations 2).",
      categories: ["examples", "states"],
      kinds: ["state_template"],
      versions: [{ version: "1.0.0", contracts: V2_ONLY, declarations: { state_templates: [{ name: "profile" }] } }],
    },
  ],
};

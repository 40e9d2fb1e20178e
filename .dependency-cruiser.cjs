/**
 * The import rules `npm test` enforces (`npm run depcheck`). See docs/architecture.md.
 *
 * Layer map (arrows point the way imports may go):
 *
 *   entry      src/index.ts, src/app.ts and every area's doors (src/<area>/routes.ts or
 *      │       src/<area>/routes/**): may import anything in src/.
 *      ▼
 *   areas      every other module of src/ (access-control, conversations, channels, states, …, and
 *      │       any folder added later, so a new area is held to the rules without editing this
 *      │       file). Never imports the entry layer (nor does the platform below).
 *      ▼
 *   platform   src/platform/ (http, net, jq, settings, persistence, env.ts): imports only itself,
 *              never an area. One seam is named, not blanket-allowed: the route pipeline
 *              (src/platform/http/route.ts, src/platform/http/app-env.ts) authenticates and
 *              authorizes every route, so it needs src/access-control/principal.ts and scopes.ts.
 *
 *   conversations  two halves over one model: src/conversations/door/ (admission in the Worker)
 *                  and src/conversations/thread/ (the turn loop inside the thread object) import
 *                  src/conversations/model/ and never each other.
 *
 *   durable-objects/   the object classes, each a thin shell over one area (OBJECT_AREAS below):
 *                      a class imports its own area, the platform, model modules and contracts,
 *                      never another area's logic and never the entry layer. Their RPC contracts are declared in the areas (src/<area>/rpc.ts,
 *                      src/conversations/model/thread-rpc.ts) and the classes implement them, so
 *                      src/ reaches the objects through those contracts and never imports
 *                      durable-objects/ (type-only included). The one exception is src/index.ts,
 *                      which must export the classes for the runtime to bind them.
 *   test/              may import anything; nothing in src/ or durable-objects/ imports test/.
 *
 * Cycles are refused everywhere, type-only imports included (`tsPreCompilationDeps: true`): a
 * type-only circle still couples the two modules, and a JavaScript-only check misses it (a
 * thread-object → turn runner → checkpoints → thread-object circle can run through types alone).
 */

const ENTRY = "^src/(app\\.ts$|index\\.ts$|[^/]+/routes(\\.ts$|/))";
const INFRA = "^src/platform/";
const ROUTE_PIPELINE = "^src/platform/http/(route|app-env)\\.ts$";
const PIPELINE_AUTH = "^src/access-control/(principal|scopes)\\.ts$";
const DOOR_HALF = "^src/conversations/door/";

/**
 * Each object class and the area whose parts it is a shell over. A class imports its own area, the
 * platform, and the shapes other areas lend (model modules and contracts), nothing else: an object
 * that needs another area's logic gets it through a part of its own area.
 */
const OBJECT_AREAS = {
  "address-bucket": "conversations",
  "bucket-directory": "conversations",
  "thread-object": "conversations",
  "connector-connection": "connectors",
  "console-hub": "console",
  "index-shard": "shards",
  interaction: "interactions",
  "interaction-hub": "interactions",
  "marketplace-lock": "marketplace",
  "notification-feed": "notifications",
  "person-directory": "persons",
  schedule: "schedules",
  "state-store": "states",
  "tool-run": "tool-runs",
  "access-epoch": "platform",
};
const THREAD_HALF = "^src/conversations/thread/";

/**
 * The order between areas, bottom first. An area's modules (its doors aside) import only areas on a
 * lower tier, so an arrow never runs back up and no new knot can form; a new area must be placed
 * here before it can import or be imported. The rule reads values: a type named across the order
 * (a contract naming a shape of its caller) couples no code. docs/architecture.md draws the same
 * order.
 */
const AREA_ORDER = [
  ["shared"],
  ["access-control", "outbound", "storage"],
  ["channels", "connectors", "console", "extensions", "templates"],
  ["config", "notifications"],
  ["mcp", "shards"],
  ["observability", "persons"],
  ["interactions"],
  ["targets"],
  ["manifest", "marketplace", "states", "sub-mcp", "tool-meta"],
  ["conversations", "plugins", "tool-runs"],
  ["hooks", "inbox", "schedules", "web-chat"],
  ["backup", "system"],
];

/**
 * The up-arrows that remain, each with the reason it stays. A new up-arrow fails CI until it is
 * removed or named here; at most five pairs of areas may import each other.
 */
const UP_ARROWS = [
  {
    from: "^src/targets/checkpoints/kv\\.ts$",
    to: "^src/conversations/model/thread-rpc\\.ts$",
    why: "the kv checkpoint provider keeps an agent's memory in its thread's object, so another run reads it through the thread's contract",
  },
  {
    from: "^src/targets/tools/builtins\\.ts$",
    to: "^src/conversations/store\\.ts$",
    why: "get_pairing_code outside a turn must find the channel route it links, and the routes table is the conversations area's",
  },
  {
    from: "^src/interactions/resume-outside\\.ts$",
    to: "^src/targets/(agents/run|context)\\.ts$",
    why: "an answer given outside any thread resumes the llm run parked on it, and that run lives only in the interaction object",
  },
  {
    from: "^src/tool-runs/maintenance\\.ts$",
    to: "^src/hooks/trigger-links\\.ts$",
    why: "the prune_expired maintenance tool sweeps every area's expired rows, hooks' trigger links among them",
  },
];

const AREA_RULES = AREA_ORDER.flatMap((tier, i) => {
  const above = AREA_ORDER.slice(i).flat();
  return tier.map((area) => ({
    name: `area-order-${area}`,
    severity: "error",
    comment: `src/${area}/ sits on tier ${i} of AREA_ORDER: it imports only the platform and lower tiers (its doors excepted).`,
    from: { path: `^src/${area}/`, pathNot: ENTRY },
    to: {
      path: `^src/(${above.filter((a) => a !== area).join("|")})/`,
      dependencyTypesNot: ["type-only"],
    },
  }));
});

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...AREA_RULES.map((rule) => ({
      ...rule,
      from: { ...rule.from, pathNot: [ENTRY, ...UP_ARROWS.map((u) => u.from)] },
    })),
    ...UP_ARROWS.map((u, i) => ({
      name: `up-arrow-${i + 1}-only-its-target`,
      severity: "error",
      comment: `An allowed up-arrow (${u.why}) reaches only what it names, and the rest of the file keeps the order.`,
      from: { path: u.from },
      to: {
        path: `^src/(${AREA_ORDER.flat().join("|")})/`,
        pathNot: [
          u.to,
          `^src/(${AREA_ORDER.slice(0, AREA_ORDER.findIndex((t) => t.includes(u.from.match(/src\/([^/]+)\//)[1])) + 1)
            .flat()
            .join("|")})/`,
        ],
        dependencyTypesNot: ["type-only"],
      },
    })),
    {
      name: "area-in-the-order",
      severity: "error",
      comment: "Every folder of src/ is the platform or an area placed in AREA_ORDER (this file).",
      from: { path: "^src/[^/]+/", pathNot: `^src/(platform|${AREA_ORDER.flat().join("|")})/` },
      to: {},
    },
    {
      name: "turn-through-its-plugins",
      severity: "error",
      comment:
        "The turn loop and runner reach the areas a turn runs (targets, interactions, states, channels, access control) " +
        "through ThreadDeps.turn (src/conversations/thread/turn-plugins.ts wires them), never by importing their functions.",
      from: { path: "^src/conversations/thread/turn-(loop|runner)\\.ts$" },
      to: { path: "^src/(targets|interactions|states|channels|access-control)/", dependencyTypesNot: ["type-only"] },
    },
    {
      name: "shared-only-platform",
      severity: "error",
      comment: "The shared words (src/shared/) sit below every area: they import the platform and each other, types included.",
      from: { path: "^src/shared/" },
      to: { path: "^src/", pathNot: ["^src/(platform|shared)/"] },
    },
    {
      name: "no-cycles",
      severity: "error",
      comment: "Import cycles, type-only imports included, in src/, durable-objects/, test/ and scripts/.",
      from: {},
      to: { circular: true },
    },
    {
      name: "domain-not-to-entry",
      severity: "error",
      comment:
        "Areas and the platform never import an area's doors, the app or the Worker entry: the doors sit on top " +
        "and compose the areas. A shape both need (a schema, a type) belongs in the area's own modules.",
      from: { path: "^src/", pathNot: ENTRY },
      to: { path: ENTRY },
    },
    {
      name: "infra-only-infra",
      severity: "error",
      comment: "The platform (src/platform/) imports only the platform; the route pipeline has its own rule below.",
      from: { path: INFRA, pathNot: ROUTE_PIPELINE },
      to: { path: "^src/", pathNot: INFRA },
    },
    {
      name: "route-pipeline-only-auth-seam",
      severity: "error",
      comment:
        "The route pipeline may reach the domain only for authentication and authorization " +
        "(src/access-control/principal.ts, src/access-control/scopes.ts).",
      from: { path: ROUTE_PIPELINE },
      to: { path: "^src/", pathNot: [INFRA, PIPELINE_AUTH] },
    },
    {
      name: "door-half-not-to-thread-half",
      severity: "error",
      comment: "The door half of a conversation (admission in the Worker) shares only the model with the thread half.",
      from: { path: DOOR_HALF },
      to: { path: THREAD_HALF },
    },
    {
      name: "thread-half-not-to-door-half",
      severity: "error",
      comment: "The thread half (the turn loop inside the thread object) shares only the model with the door half.",
      from: { path: THREAD_HALF },
      to: { path: DOOR_HALF },
    },
    {
      name: "contracts-import-only-shapes",
      severity: "error",
      comment:
        "An object's contract (src/<area>/rpc.ts) carries wire shapes only: it imports the platform, its own area's " +
        "shapes, the model modules (any area's model/ or model.ts) and other contracts, never another area's stores or logic.",
      from: { path: "^src/([^/]+)/rpc\\.ts$" },
      to: { path: "^src/", pathNot: ["^src/(platform|shared|$1)/", "/model(/|\\.ts$)", "/rpc\\.ts$"] },
    },
    {
      name: "conversation-contracts-import-only-the-model",
      severity: "error",
      comment:
        "The thread's and the rate buckets' contracts import only the platform, the model modules and their own half " +
        "(the bucket's verdict): no store, no row type, no logic of either half.",
      from: { path: "^src/conversations/(model|door)/[a-z-]*rpc\\.ts$" },
      to: { path: "^src/", pathNot: ["^src/(platform|shared)/", "/model(/|\\.ts$)", "^src/conversations/door/token-bucket\\.ts$"] },
    },
    {
      name: "src-not-to-durable-objects",
      severity: "error",
      comment:
        "src/ reaches the objects through the areas' RPC contracts, never by importing " +
        "durable-objects/ (type-only included): that import is what let the circle form. " +
        "The Worker entry is the one exception: it must export the classes for the runtime.",
      from: { path: "^src/", pathNot: "^src/index\\.ts$" },
      to: { path: "^durable-objects/" },
    },
    ...Object.entries(OBJECT_AREAS).map(([file, area]) => ({
      name: `object-shell-${file}`,
      severity: "error",
      comment: `durable-objects/${file}.ts is a shell over src/${area}/: it imports that area, the platform, model modules and contracts only.`,
      from: { path: `^durable-objects/${file}\\.ts$` },
      to: { path: "^src/", pathNot: [`^src/(platform|shared|${area})/`, "/model(/|\\.ts$)", "/rpc\\.ts$"] },
    })),
    {
      name: "durable-objects-one-area-each",
      severity: "error",
      comment: "Every class in durable-objects/ names its area in OBJECT_AREAS (this file), so the rule above holds it.",
      from: { path: "^durable-objects/", pathNot: `^durable-objects/(${Object.keys(OBJECT_AREAS).join("|")})\\.ts$` },
      to: { path: "^src/" },
    },
    {
      name: "durable-objects-not-to-entry",
      severity: "error",
      comment: "The objects sit beside the domain: they never import a router, the app or the Worker entry.",
      from: { path: "^durable-objects/" },
      to: { path: ENTRY },
    },
    {
      name: "production-not-to-test",
      severity: "error",
      comment: "Test helpers and fakes never ship: src/ and durable-objects/ never import test/.",
      from: { path: "^(src|durable-objects)/" },
      to: { path: "^test/" },
    },
  ],
  options: {
    // Count type-only imports (`import type`, unused imports) as dependencies: see the header.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    doNotFollow: { path: "node_modules" },
    // Generated at install time (scripts/extract-jq-wasm.mjs) and imported only by src/platform/jq/engine.ts.
    exclude: { path: "^src/platform/jq/generated/" },
  },
};

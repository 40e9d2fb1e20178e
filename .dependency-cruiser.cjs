/**
 * The import rules `npm test` enforces (`npm run depcheck`). See docs/architecture.md.
 *
 * Layer map (arrows point the way imports may go):
 *
 *   entry      src/index.ts, src/app.ts, src/routers/**      may import anything in src/
 *      │
 *      ▼
 *   domain     every other module of src/: auth, bridge, channels, contracts, events, operator,
 *      │       targets, templating, and any folder added later, so a new area is held to the rule
 *      │       without editing this file. Never imports the entry layer (nor does infra below).
 *      ▼
 *   infra      src/http, src/net, src/store, src/jq, src/settings, src/platform, src/env.ts: import only each
 *              other, never a domain area. One seam is named, not blanket-allowed: the route
 *              pipeline (src/http/route.ts, src/http/app-env.ts) authenticates and authorizes
 *              every route, so it needs src/auth/principal.ts and src/auth/scopes.ts.
 *
 *   durable-objects/   the object classes: may import domain and infra, never the entry layer.
 *                      Their RPC contracts are declared in src/contracts/ and the classes
 *                      implement them, so src/ reaches the objects through those contracts and
 *                      never imports durable-objects/ (type-only included). The one exception is
 *                      src/index.ts, which must export the classes for the runtime to bind them.
 *   test/              may import anything; nothing in src/ or durable-objects/ imports test/.
 *
 * Cycles are refused everywhere, type-only imports included (`tsPreCompilationDeps: true`): a
 * type-only circle still couples the two modules, and a JavaScript-only check misses it (a
 * thread-object → turn runner → checkpoints → thread-object circle can run through types alone).
 */

const ENTRY = "^src/(routers/|app\\.ts$|index\\.ts$)";
const INFRA = "^src/((http|net|store|jq|settings)/|env\\.ts$)";
const ROUTE_PIPELINE = "^src/http/(route|app-env)\\.ts$";
const PIPELINE_AUTH = "^src/auth/(principal|scopes)\\.ts$";

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
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
        "Domain and infrastructure never import a router, the app or the Worker entry: routers sit on top " +
        "and compose the domain. A shape both need (a schema, a type) belongs in the domain.",
      from: { path: "^src/", pathNot: ENTRY },
      to: { path: ENTRY },
    },
    {
      name: "infra-only-infra",
      severity: "error",
      comment: "Infrastructure (http, net, store, jq, settings, platform, env.ts) imports only infrastructure; " + "the route pipeline has its own rule below.",
      from: { path: INFRA, pathNot: ROUTE_PIPELINE },
      to: { path: "^src/", pathNot: INFRA },
    },
    {
      name: "route-pipeline-only-auth-seam",
      severity: "error",
      comment: "The route pipeline may reach the domain only for authentication and authorization " + "(src/auth/principal.ts, src/auth/scopes.ts).",
      from: { path: ROUTE_PIPELINE },
      to: { path: "^src/", pathNot: [INFRA, PIPELINE_AUTH] },
    },
    {
      name: "src-not-to-durable-objects",
      severity: "error",
      comment:
        "src/ reaches the objects through the RPC contracts in src/contracts/, never by importing " +
        "durable-objects/ (type-only included): that import is what let the circle form. " +
        "The Worker entry is the one exception: it must export the classes for the runtime.",
      from: { path: "^src/", pathNot: "^src/index\\.ts$" },
      to: { path: "^durable-objects/" },
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
    // Generated at install time (scripts/extract-jq-wasm.mjs) and imported only by src/jq/engine.ts.
    exclude: { path: "^src/jq/generated/" },
  },
};

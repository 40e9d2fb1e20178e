/**
 * `GET /api/docs`: the interactive API reference (docs/console.md "API reference"),
 * Scalar's page (@scalar/hono-api-reference) over the live `GET /api/openapi.json`. Its browser
 * bundle is served from this origin (`/vendor/scalar-api-reference.js`, copied from
 * @scalar/api-reference by scripts/build-console.mjs), never from a CDN; its default fonts, telemetry
 * and developer tools are off, and it keeps no credential (`persistAuth: false`). The page carries
 * its own CSP: the one inline configuration script by hash (src/console/security-headers.ts).
 */
import { Scalar } from "@scalar/hono-api-reference";
import { Hono } from "hono";
import type { Context } from "hono";
import type { AppEnv } from "../../platform/http/app-env";
import { addPublicRoute } from "../../platform/http/route";
import { docsCsp, secured } from "../../console/security-headers";

export const apiDocsRouter = new Hono<AppEnv>();

/** Where the reference's bundle is served from (public/vendor, Workers static assets). */
export const REFERENCE_BUNDLE = "/vendor/scalar-api-reference.js";

/**
 * `agent.disabled`: the bundle's "ask AI" panel reaches Scalar's own servers (a registry behind
 * its proxy), which this page's CSP refuses anyway; off, it never tries. The bundle (1.44.18)
 * reads the key; the middleware's configuration type predates it, hence the spread.
 */
const bundleOnly = { agent: { disabled: true } };

const reference = Scalar<AppEnv>({
  ...bundleOnly,
  url: "/api/openapi.json",
  cdn: REFERENCE_BUNDLE,
  pageTitle: "Conversation bridge API reference",
  withDefaultFonts: false,
  telemetry: false,
  showDeveloperTools: "never",
  persistAuth: false,
  authentication: { preferredSecurityScheme: "apiKey" },
});

/** The page and its policy: the same for every request, so built once per isolate. */
let page: { html: string; csp: string } | null = null;

async function referencePage(c: Context<AppEnv>): Promise<{ html: string; csp: string }> {
  if (page) return page;
  const res = await reference(c, async () => undefined);
  if (!(res instanceof Response)) throw new Error("the API reference middleware answered nothing");
  const html = await res.text();
  page = { html, csp: await docsCsp(html) };
  return page;
}

addPublicRoute(
  apiDocsRouter,
  {
    method: "get",
    path: "/api/docs",
    summary: "This API's interactive reference (an HTML page over GET /api/openapi.json)",
    description:
      "Scalar's API reference, rendered in the browser from the live OpenAPI document. Its script is served from this origin (no CDN, no third-party origin); the page carries its own Content-Security-Policy. `/docs` redirects here.",
    area: "system",
    auth: { public: true },
    produces: "text/html",
  },
  async (c) => {
    const { html, csp } = await referencePage(c);
    return new Response(html, { status: 200, headers: secured(new Headers({ "content-type": "text/html; charset=utf-8" }), csp) });
  },
);

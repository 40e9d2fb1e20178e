/** What the manifest tests share: a safe declaration name, reading the manifest, replacing it (as the admin). */
import { expect } from "vitest";
import { admin, call, uniq } from "../helpers/http";

/** A unique name that fits the tool and server name patterns. */
export const name = (p: string) => uniq(p).replace(/-/g, "_").slice(0, 40);

export async function manifest() {
  const r = await call("GET", "/api/manifest", { key: await admin() });
  expect(r.status).toBe(200);
  return r.body.data;
}

export async function replace(doc: unknown) {
  return call("POST", "/api/manifest/replace", { key: await admin(), body: doc });
}

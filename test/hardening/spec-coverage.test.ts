/**
 * Spec coverage: every §4 operation is implemented. The operations the
 * interface spec names in §4 are listed in spec-operations.json, generated from the spec by
 * `node scripts/spec-operations.mjs` (which also has a `--check` mode). For each one:
 *   - the route table declares a door with that method and path (parameter names may differ:
 *     `{tool_name}` in the spec is `{name}` here where one router serves both forms), and
 *   - the Worker routes a request for it to a door: called as the admin with placeholder
 *     segments, it never gets a 405 or the app's own `{"error":"not found"}` 404 (no door matched). What the door then answers (400 for the empty body, 404 for the unknown
 *     placeholder name, 501 for an unbound store…) is the door's own business.
 */
import { beforeAll, describe, expect, it } from "vitest";
import listing from "./spec-operations.json";
import { bootstrapAdmin, callJson, doors, fillPath, label, pathParamNames } from "./doors";
import { must } from "../../src/platform/must";

interface Operation {
  method: string;
  path: string;
}
const OPERATIONS: Operation[] = listing.operations;

/** The path's shape: parameter names dropped, since they are the router's choice. */
const shapeOf = (path: string): string => path.replace(/\{[A-Za-z0-9_]+\}/g, "{}");

const DECLARED = new Map(doors().map((d) => [`${d.method.toUpperCase()} ${shapeOf(d.path)}`, d]));

let admin: string;
beforeAll(async () => {
  admin = await bootstrapAdmin();
});

describe("every operation the spec names in §4 is a door", () => {
  it("lists the spec's operations (the README quotes this count)", () => {
    expect(OPERATIONS.length).toBe(listing.count);
    expect(OPERATIONS.length).toBeGreaterThan(200);
  });

  it.each(OPERATIONS.map((op) => [`${op.method} ${op.path}`, op] as const))("%s is declared in the route table", (_, op) => {
    const door = DECLARED.get(`${op.method} ${shapeOf(op.path)}`);
    expect(door, `no door declares ${op.method} ${op.path}`).toBeDefined();
    expect(pathParamNames(must(door, "door").path).length).toBe(pathParamNames(op.path).length);
  });

  it.each(OPERATIONS.map((op) => [`${op.method} ${op.path}`, op] as const))("%s reaches its door", async (_, op) => {
    const door = must(DECLARED.get(`${op.method} ${shapeOf(op.path)}`), "the entry");
    const segments = Object.fromEntries(pathParamNames(door.path).map((n) => [n, "spec-probe"]));
    const answer = await callJson(op.method, fillPath(door.path, segments), admin);
    expect(answer.status, `${label(door)} answered ${answer.status} ${answer.text.slice(0, 200)}`).not.toBe(405);
    expect(answer.status >= 500 && answer.status !== 501 && answer.status !== 503, `${label(door)} answered ${answer.status}`).toBe(false);
    // The app's own miss is `{"error":"not found"}`. A public capability door (a callback ticket, a
    // trigger link) answers every miss with that same uniform 404 by design, so for those the
    // declared 404 stands in for the proof.
    const uniformMiss = "public" in door.auth && (door.errors ?? []).includes(404);
    if (answer.status === 404 && !uniformMiss) expect(answer.json).not.toEqual({ error: "not found" });
  });
});

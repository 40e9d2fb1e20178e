/**
 * Projections of the route table through the real authorizer (docs/access-control.md): which doors
 * a caller may pass (`me.routes`) and which scopes map each door (`GET /api/auth/routes`). The
 * table is passed in (the route registry of src/platform/http/route.ts), so this stays below the routers.
 */
import { z } from "zod";
import { type ScopeUrl, scopesMappingTemplate } from "./custom-scopes";
import { type ConditionMemo, type Principal, authorize } from "./principal";
import { type DoorDeclaration, pinRefusal } from "./public-routes";
import type { Action } from "./scopes";

export const RouteAccess = z.object({ path: z.string(), methods: z.array(z.string()) });
export type RouteAccess = z.infer<typeof RouteAccess>;

const pinKey = (door: DoorDeclaration) => `${door.method.toUpperCase()} ${door.path}`;

/** A tagged door's action: the declared one, else read for GET and write for the rest. */
function actionOf(method: string, auth: { action?: Action }): Action {
  return auth.action ?? (method.toLowerCase() === "get" ? "read" : "write");
}

/** Is the door pinned public right now (a pin on a door the policy refuses counts for nothing)? */
export function pinnedNow(door: DoorDeclaration, pins: ReadonlySet<string>): boolean {
  return pins.has(pinKey(door)) && pinRefusal(door) === null;
}

/**
 * Would the pipeline let `p` through `door`? Exactly the pipeline's decision (src/platform/http/route.ts →
 * `admit`): public doors pass, `authenticated` doors pass any key, a pinned door passes anyone,
 * and a tagged door runs `authorize` with the door's path template as the request path.
 */
export async function mayPass(p: Principal, door: DoorDeclaration, pins: ReadonlySet<string>, now: Date, memo: ConditionMemo): Promise<boolean> {
  if ("public" in door.auth) return true;
  if ("authenticated" in door.auth) return !p.anonymous;
  if (pinnedNow(door, pins)) return true;
  try {
    await authorize(
      p,
      { tag: door.auth.tag, action: actionOf(door.method, door.auth), admin: door.auth.admin },
      { method: door.method.toUpperCase(), path: door.path },
      now,
      memo,
    );
    return true;
  } catch {
    return false;
  }
}

/** The doors `p` may pass, grouped by path in table order (`me.routes`). */
export async function routesFor(p: Principal, doors: readonly DoorDeclaration[], pins: ReadonlySet<string>, now: Date): Promise<RouteAccess[]> {
  const memo: ConditionMemo = new Map();
  const byPath = new Map<string, string[]>();
  for (const door of doors) {
    if (!(await mayPass(p, door, pins, now, memo))) continue;
    const methods = byPath.get(door.path) ?? [];
    methods.push(door.method.toUpperCase());
    byPath.set(door.path, methods);
  }
  return [...byPath].map(([path, methods]) => ({ path, methods }));
}

export const RouteMapping = z.object({
  method: z.string(),
  path: z.string(),
  tag: z.string().nullable(),
  action: z.enum(["read", "write"]).nullable(),
  admin: z.boolean(),
  /** Declared public, or pinned public now. */
  public: z.boolean(),
  /** An admin may pin it (docs/access-control.md, "Public routes"). */
  pinnable: z.boolean(),
  /** Any valid key passes (no scope): e.g. `me`. */
  any_key: z.boolean(),
  /** The scope strings that open it: `*`, the tag forms, and custom scope ids whose URLs reach it. */
  scopes: z.array(z.string()),
});
export type RouteMapping = z.infer<typeof RouteMapping>;

/** Every door with what maps it (`GET /api/auth/routes`). */
export function routeMappings(doors: readonly DoorDeclaration[], pins: ReadonlySet<string>, urls: readonly ScopeUrl[]): RouteMapping[] {
  return doors.map((door): RouteMapping => {
    const method = door.method.toUpperCase();
    const declaredPublic = "public" in door.auth;
    const open = { public: declaredPublic || pinnedNow(door, pins), pinnable: pinRefusal(door) === null };
    if (!("tag" in door.auth)) return { method, path: door.path, tag: null, action: null, admin: false, ...open, any_key: !declaredPublic, scopes: [] };
    const action = actionOf(door.method, door.auth);
    const tag = door.auth.tag;
    if (door.auth.admin) return { method, path: door.path, tag, action, admin: true, ...open, any_key: false, scopes: ["*"] };
    const forms = ["*", tag, `${tag}:write`, ...(action === "read" ? [`${tag}:read`] : [])];
    return { method, path: door.path, tag, action, admin: false, ...open, any_key: false, scopes: [...forms, ...scopesMappingTemplate(urls, door.path)] };
  });
}

/**
 * Where the key lives: in memory, and in this tab's sessionStorage so a reload keeps the operator
 * signed in. Never a cookie (no script-readable cookie, and none the browser would send on its
 * own), never a URL, never a log line. Signing out clears both. docs/console.md "Security".
 */
const STORE = "console.api-key";
let key: string | null = null;

export interface Me {
  user_id: string;
  owner_user_id: string | null;
  admin: boolean;
  scopes: string[];
  role: string | null;
  routes: Array<{ path: string; methods: string[] }>;
}
let me: Me | null = null;

export function restoreKey(): string | null {
  try {
    key = sessionStorage.getItem(STORE);
  } catch {
    key = null;
  }
  return key;
}

export function currentKey(): string | null {
  return key;
}

export function setKey(k: string): void {
  key = k;
  try {
    sessionStorage.setItem(STORE, k);
  } catch {
    // Storage refused (private mode): the key stays in memory for this page only.
  }
}

export function signOut(): void {
  key = null;
  me = null;
  try {
    sessionStorage.removeItem(STORE);
  } catch {
    // nothing stored
  }
}

export function setMe(m: Me): void {
  me = m;
}

export function currentMe(): Me | null {
  return me;
}

/** A door as the route table names it: method and path template. */
export type Door = readonly [method: string, template: string];

/** Does `GET /api/auth/me` (the real authorizer, run on every door) say the key passes `door`? */
export function can(door: Door): boolean {
  return !!me?.routes.some((r) => r.path === door[1] && r.methods.includes(door[0]));
}

/**
 * For panels whose doors `me` may not list (interactions): an admin passes every door, so when
 * `me` does not list one for an admin the door is missing, and the panel asks anyway
 * to show the API's own answer.
 */
export function mayTry(door: Door): boolean {
  return can(door) || !!me?.admin;
}

import { admin, call, mintKey, uniq } from "./http";

/** Creates a route as admin; returns the create answer's data. */
export async function createRoute(body: Record<string, unknown>, name = uniq("r").toLowerCase(), key?: string) {
  const r = await call("POST", `/api/conversations/${name}`, { key: key ?? (await admin()), body });
  if (r.status !== 200) throw new Error(`route create failed: ${r.status} ${JSON.stringify(r.body)}`);
  return { name, ...r.body.data } as { name: string; created: boolean; route: any; callback_secret: string | null };
}

/** A key that may run the echo tool, for binding. */
export async function echoKey() {
  return mintKey({ scopes: ["tool:echo", "agent:echo"] });
}

/** An api route to the built-in echo tool. */
export async function echoRoute(extra: Record<string, unknown> = {}) {
  const k = await echoKey();
  const route = await createRoute({ door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id, ...extra });
  return { ...route, key: k };
}

export async function send(routeName: string, body: Record<string, unknown>, key?: string) {
  return call("POST", `/api/conversations/${routeName}/messages`, { key: key ?? (await admin()), body });
}

export async function readRecord(routeName: string, messageId: string, key?: string) {
  return call("GET", `/api/conversations/${routeName}/messages/${messageId}`, { key: key ?? (await admin()) });
}

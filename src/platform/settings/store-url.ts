/**
 * A `d1://BINDING` store setting, shared by every store-gated area (states, interactions,
 * connectors, marketplace): null when unset; an error (naming the variable, never its value) when
 * malformed or naming a binding that is not bound.
 */
export function envString(env: Record<string, unknown>, name: string): string | undefined {
  const v = env[name];
  if (v === undefined || v === null) return undefined;
  return typeof v === "string" ? v : JSON.stringify(v);
}

export function d1StoreUrl(env: Record<string, unknown>, name: string, errors: string[]): string | null {
  const url = envString(env, name)?.trim();
  if (!url) return null;
  if (!/^d1:\/\/[A-Za-z_][A-Za-z0-9_]*$/.test(url)) errors.push(`${name} must name a D1 binding as d1://BINDING`);
  else if (!(url.slice(5) in env)) errors.push(`${name} names a D1 binding that is not bound`);
  return url;
}

/** A whole number setting within [min, max]; the default when unset or blank. */
export function intSetting(env: Record<string, unknown>, name: string, def: number, min: number, max: number, errors: string[]): number {
  const raw = envString(env, name)?.trim();
  if (!raw) return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) {
    errors.push(`${name} must be a whole number from ${min} to ${max}`);
    return def;
  }
  return n;
}

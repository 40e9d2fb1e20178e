/**
 * The Worker's bindings and `[vars]`. The type is generated from wrangler.toml by `npm run types`
 * (`wrangler types`) into worker-configuration.d.ts, so a binding is declared in one place and the
 * Durable Object namespaces carry their classes. Secrets and other variables the settings read by
 * name are not listed there: settings code takes the env as a plain record.
 */
export type Env = Cloudflare.Env;

/**
 * An env whose variables are read by name: channel secrets, `{"env"}` references and the other
 * settings wrangler.toml does not declare (secrets, .dev.vars), which the generated `Env` cannot
 * list. The Worker's `Env`, or a plain record of variables (tests, scripts).
 */
export type EnvVars = Env | Readonly<Record<string, unknown>>;

/** One variable of `env` by name; undefined when unset. */
export function envVar(env: EnvVars, name: string): unknown {
  return Reflect.get(env, name);
}

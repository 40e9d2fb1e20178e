/**
 * The Node-side type check reaches src/platform/env.ts through the settings definitions (the
 * settings docs test, the bench); the Worker's generated `Cloudflare.Env` lists bindings whose types
 * exist only under workerd's types, so here it is an empty interface: settings code reads the env as
 * a plain record anyway.
 */
declare namespace Cloudflare {
  interface Env {}
}

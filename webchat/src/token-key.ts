/**
 * Where the widget keeps its bearer token in the host page's localStorage. The host page may embed
 * widgets of more than one service, and two services may both name a route `desk`: the key names
 * the service's origin as well as the identity, so a widget is only ever sent a token its own
 * service minted.
 */

/** The token's key for the service at `origin` (scheme, host and port) and `identity`. */
export function tokenKey(origin: string, identity: string): string {
  return `tai-web:${origin}/${identity}`;
}

/**
 * The key widgets used before the origin was part of it. Its token may be another service's, so
 * it is never sent: the widget removes it and mints a session of its own.
 */
export function legacyTokenKey(identity: string): string {
  return `tai-web:${identity}`;
}

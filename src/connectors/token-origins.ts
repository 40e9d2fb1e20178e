/**
 * Where a connection's access token may be sent: only to an origin its provider's descriptor lists
 * in `api_origins` (deployment configuration, `CONNECTORS_PROVIDERS`). A tool, agent or MCP server
 * header naming a connection is declared by an admin at a URL of its choosing; without this rule an
 * admin could declare one at its own host and receive any user's token. Checked at declaration
 * (400 naming the header) and again before each call (a failed call). Pure.
 */
import type { ProviderDescriptor } from "../platform/settings/connector-settings";
import { originAllowed } from "../platform/settings/origin-patterns";
import { findProvider } from "./providers";

/**
 * Why a connection of provider `providerId` may not lend its token to a declaration sending to
 * `url`, or null when it may. Names the rule and the setting, never the URL or an origin.
 */
export function lendingRefusal(providers: readonly ProviderDescriptor[], providerId: string, url: string): string | null {
  const provider = findProvider(providers, providerId);
  if (!provider) return "the connection's provider is not configured (CONNECTORS_PROVIDERS)";
  if (!provider.api_origins) return "the connection's provider lists no api_origins (CONNECTORS_PROVIDERS), so its connections are lent to no declaration";
  if (!originAllowed(provider.api_origins, url)) return "this URL's origin is not among the api_origins of the connection's provider (CONNECTORS_PROVIDERS)";
  return null;
}

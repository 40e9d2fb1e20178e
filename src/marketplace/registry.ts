/**
 * Reads the registry index (docs/marketplace.md "The registry"). The built-in catalog needs no
 * network; an https registry is fetched through the network edge on every call (no cache, so a
 * publish shows at once), after the outbound address guard, without following redirects, within
 * MARKETPLACE_REGISTRY_TIMEOUT_SECONDS and MARKETPLACE_REGISTRY_MAX_BYTES, then bounded (depth,
 * finite numbers) and validated with zod. Every failure is a 502 whose message names the kind of
 * failure, never the registry URL (it may carry a token).
 */
import { readStreamCapped } from "../platform/http/body";
import { checkJsonBounds } from "../platform/http/bounded-json";
import { describeIssues } from "../platform/http/validation";
import { checkOutboundUrl } from "../platform/net/address-guard";
import { edgeFetch } from "../platform/net/edge-fetch";
import type { Settings } from "../platform/settings/settings";
import { withTimeout } from "../platform/timeout";
import { BUILTIN_INDEX } from "./builtin-catalog";
import { RegistryIndex } from "./index-format";
import { registryInvalid, registryNotConfigured, registryUnavailable } from "./refusals";

type Fetched = { status: number; bytes: Uint8Array | null } | { transport: true };

/** Validates an index document (already parsed JSON), or throws the 502 `marketplace-registry-invalid`. */
export function validateIndex(value: unknown, maxBytes: number): RegistryIndex {
  const broken = checkJsonBounds(value, maxBytes);
  if (broken) throw registryInvalid(`the document ${broken}`);
  const parsed = RegistryIndex.safeParse(value);
  if (!parsed.success) throw registryInvalid(describeIssues(parsed.error, "index").replace(/^invalid index: /, ""));
  return parsed.data;
}

/** The configured registry's index; 501 without a registry, 502 when it cannot be read or is invalid. */
export async function loadIndex(settings: Settings, fetchFn: typeof fetch = edgeFetch): Promise<RegistryIndex> {
  const m = settings.marketplace;
  if (!m.registry) throw registryNotConfigured();
  if (m.registry.kind === "builtin") return validateIndex(BUILTIN_INDEX, m.registryMaxBytes);
  const url = m.registry.url;
  const verdict = checkOutboundUrl(url, settings.outbound);
  if (!verdict.ok) throw registryUnavailable(`refused by the outbound address guard: ${verdict.reason}`);
  const timed = await withTimeout<Fetched>(m.registryTimeoutSeconds * 1000, async (signal) => {
    let res: Response;
    try {
      res = await fetchFn(url, { method: "GET", headers: { accept: "application/json" }, redirect: "manual", signal });
    } catch {
      return { transport: true };
    }
    if (res.status < 200 || res.status > 299) {
      await res.body?.cancel();
      return { status: res.status, bytes: new Uint8Array() };
    }
    return { status: res.status, bytes: await readStreamCapped(res.body, m.registryMaxBytes) };
  });
  if (!timed.ok) throw registryUnavailable(`no answer within ${m.registryTimeoutSeconds}s`);
  const got = timed.value;
  if ("transport" in got) throw registryUnavailable("it could not be reached");
  if (got.status < 200 || got.status > 299) throw registryUnavailable(`it answered HTTP ${got.status}`);
  if (got.bytes === null) throw registryInvalid(`the document is larger than ${m.registryMaxBytes} bytes (MARKETPLACE_REGISTRY_MAX_BYTES)`);
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(got.bytes));
  } catch {
    throw registryInvalid("the document is not JSON");
  }
  return validateIndex(value, m.registryMaxBytes);
}

/**
 * Every backup section, in the order an import applies them (src/backup/rows.ts `SECTION_ROWS`
 * states why that order). The list and the rows' schemas are checked against each other below, so
 * a section cannot be declared in one and forgotten in the other.
 */
import { type SectionName, SECTION_NAMES } from "./rows";
import type { AnySection } from "./section";
import { cannedResponsesSection } from "./sections/canned-responses";
import { keysSection, publicRoutesSection, rolesSection, scopesSection } from "./sections/access-control";
import { routeSecretsSection, routesSection, targetConfigsSection } from "./sections/conversations";
import { routeHoursSection } from "./sections/route-hours";
import { hookSecretsSection, hooksSection } from "./sections/hooks";
import { presetsSection } from "./sections/presets";
import { profilesSection, settingsOverlaySection, settingsSecretsSection } from "./sections/settings";
import { stateTemplatesSection, statesSection } from "./sections/states";
import { agentsSection, targetSecretsSection, toolsSection } from "./sections/targets";
import { textResourcesSection } from "./sections/text-resources";
import { toolMetaSection } from "./sections/tool-meta";

const BY_NAME: { [N in SectionName]: AnySection & { name: N } } = {
  keys: keysSection,
  roles: rolesSection,
  scopes: scopesSection,
  "public-routes": publicRoutesSection,
  "text-resources": textResourcesSection,
  tools: toolsSection,
  agents: agentsSection,
  "target-secrets": targetSecretsSection,
  presets: presetsSection,
  "state-templates": stateTemplatesSection,
  states: statesSection,
  "target-configs": targetConfigsSection,
  routes: routesSection,
  "route-secrets": routeSecretsSection,
  "route-hours": routeHoursSection,
  hooks: hooksSection,
  "hook-secrets": hookSecretsSection,
  "settings-overlay": settingsOverlaySection,
  "settings-secrets": settingsSecretsSection,
  profiles: profilesSection,
  "tool-meta": toolMetaSection,
  "canned-responses": cannedResponsesSection,
};

/** The sections in apply order. */
export const SECTIONS: readonly AnySection[] = SECTION_NAMES.map((n) => BY_NAME[n]);

export function sectionNamed(name: SectionName): AnySection {
  return BY_NAME[name];
}

/** The states area's store switch (docs/states.md): its listing, templates and pending saves; each state's records live in one StateStore object. */
import { storeUrl } from "./define";

export const STATES_STORE_URL = storeUrl("STATES_STORE_URL", {
  area: "states",
  what: "The states area's store",
  unset: "every states door answers 501 states-not-configured, and a config or preset carrying a state_binding is refused with the same 501",
  gate: { code: "states", what: "states store" },
});

export const STATES_SETTINGS = [STATES_STORE_URL] as const;

/** How a StateStore refusal becomes a door's error (one place, shared by every states door). */
import type { StateRefusal } from "./rpc";
import { HttpError } from "../platform/http/errors";

export const stateNotFound = () => new HttpError(404, "state not found");

/** A refusal from the object, as the door's error. */
export function refusal(r: StateRefusal): HttpError {
  return new HttpError(r.status, r.error);
}

/** What every states door declares alike: its OpenAPI area, its scope tag and its store. */
export const STATES_DOOR = { area: "states", auth: { tag: "states" }, store: "states" } as const;

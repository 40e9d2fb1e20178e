/** Shapes of API answers that more than one view reads. */

/** A conversation route as `GET /api/conversations` lists it (the fields the console reads). */
export interface RouteView {
  route_name: string;
  door: "api" | "channel";
  channel: string | null;
  target_kind: string;
  target_name: string;
  initial_mode: "agent" | "manual";
}

/**
 * A notification to a web visitor (docs/notifications.md, channel `web`): there is no provider to
 * call, so the send appends to the visitor's transcript in their thread object, which pushes it to
 * any open page. The sending identity names the web route, the recipient the visitor; a visitor
 * with no live session on that route is refused, never created.
 */
import { threadStub } from "../conversations/door/stubs";
import { channelThreadId } from "../shared/thread-id";
import { VISITOR_ID } from "../conversations/model/web";
import { routeWithKeyByChannelIdentity } from "../conversations/route-cache";
import type { Env } from "../platform/env";

/** The transcript sink for a notification from web identity `identity` to visitor `visitor`. */
export function webNotificationSink(env: Env, identity: string, visitor: string): (text: string, part: unknown) => Promise<number | null> {
  return async (text, part) => {
    if (!VISITOR_ID.test(visitor)) return null;
    const { route } = await routeWithKeyByChannelIdentity(env, "web", identity);
    if (!route || route.door !== "channel") return null;
    return threadStub(env, channelThreadId(route.route_name, visitor)).webNotify(text, part);
  };
}

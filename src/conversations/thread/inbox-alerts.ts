/**
 * Sends the inbox's waiting alerts (docs/inbox.md): to the internal notification feed (the shared
 * one, and the policy's audience's own), where the console and any feed reader see it, and through
 * the policy's channel (Slack, Telegram, WhatsApp, SMS) when it names one. The thread records an
 * alert as sent before this runs (ThreadInbox.tick), so a restart never repeats it; a failed
 * channel send is logged and not retried, like any notification.
 */
import { recordNotification } from "../../notifications/sink";
import { deliverChannelSend, prepareChannelSend } from "../../notifications/channel-send";
import type { Env } from "../../platform/env";
import type { Settings } from "../../platform/settings/settings";
import { describeFailure } from "../../platform/http/errors";
import type { AlertTarget, InboxPolicy } from "../model/inbox";
import type { DueAlert } from "./inbox";

/**
 * A thread's reference in alerts: the first 12 hex digits of its id's SHA-256. A thread id carries
 * the customer's address (a phone number, a username), so an alert that leaves the deployment names
 * the thread by this instead; the feed's copy carries both, so an operator matches one to the other.
 */
export async function threadRef(threadId: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(threadId)));
  return [...digest.slice(0, 6)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * The alert's text: what waits, where, for how long. Never the customer's words. `threadId` only
 * for the internal feed (null on a channel: the id carries the customer's address).
 */
export function alertText(alert: DueAlert, ref: string, nowMs: number, threadId: string | null): string {
  const minutes = Math.max(1, Math.round((nowMs - alert.waiting_since) / 60_000));
  const where = alert.route_name ? ` on route ${alert.route_name}` : "";
  const head = alert.stage === "escalated" ? "Escalated: a customer still waits" : "A customer waits";
  const which = threadId === null ? `ref ${ref}` : `thread ${threadId}, ref ${ref}`;
  return `${head} for a human${where}: ${minutes} min without an answer (${which}).`;
}

/** Sends each due alert to its policy's target; never throws (an alert is best effort once recorded). */
export async function sendInboxAlerts(env: Env, settings: Settings, policy: InboxPolicy, threadId: string, alerts: DueAlert[], nowMs: number): Promise<void> {
  const ref = await threadRef(threadId);
  for (const alert of alerts) {
    const target: AlertTarget | null = alert.stage === "escalated" ? (policy.escalate_to ?? policy.alert) : policy.alert;
    const message = alertText(alert, ref, nowMs, threadId);
    try {
      await recordNotification(env, settings.notifications, {
        id: crypto.randomUUID(),
        created_at: new Date(nowMs).toISOString(),
        message,
        ...(target?.audience ? { audience: target.audience } : {}),
      });
    } catch (err) {
      logAlertFailure("feed", alert, threadId, err);
    }
    if (!target?.channel) continue;
    try {
      const send = prepareChannelSend(env, settings, target.channel, alertText(alert, ref, nowMs, null), null, target.recipient ?? undefined);
      // An alert goes to a team's channel, never to a web visitor's page.
      await deliverChannelSend(send, env, settings, () => async () => null);
    } catch (err) {
      logAlertFailure(target.channel, alert, threadId, err);
    }
  }
}

function logAlertFailure(sink: string, alert: DueAlert, threadId: string, err: unknown): void {
  // The message alone: a stack would only repeat the bundle's paths in every line.
  const reason = err instanceof Error ? err.message : describeFailure(err);
  console.error(JSON.stringify({ event: "inbox_alert_failed", sink, stage: alert.stage, thread_id: threadId, reason }));
}

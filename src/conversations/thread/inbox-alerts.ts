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

/** The alert's text: what waits, where, for how long. No customer text and no address: a channel alert may leave the deployment. */
export function alertText(alert: DueAlert, threadId: string, nowMs: number): string {
  const minutes = Math.max(1, Math.round((nowMs - alert.waiting_since) / 60_000));
  const where = alert.route_name ? ` on route ${alert.route_name}` : "";
  const head = alert.stage === "escalated" ? "Escalated: a customer still waits" : "A customer waits";
  return `${head} for a human${where}: ${minutes} min without an answer (thread ${threadId}).`;
}

/** Sends each due alert to its policy's target; never throws (an alert is best effort once recorded). */
export async function sendInboxAlerts(env: Env, settings: Settings, policy: InboxPolicy, threadId: string, alerts: DueAlert[], nowMs: number): Promise<void> {
  for (const alert of alerts) {
    const target: AlertTarget | null = alert.stage === "escalated" ? (policy.escalate_to ?? policy.alert) : policy.alert;
    const message = alertText(alert, threadId, nowMs);
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
      const send = prepareChannelSend(env, settings, target.channel, message, null, target.recipient ?? undefined);
      // An alert goes to a team's channel, never to a web visitor's page.
      await deliverChannelSend(send, env, settings, () => async () => null);
    } catch (err) {
      logAlertFailure(target.channel, alert, threadId, err);
    }
  }
}

function logAlertFailure(sink: string, alert: DueAlert, threadId: string, err: unknown): void {
  console.error(JSON.stringify({ event: "inbox_alert_failed", sink, stage: alert.stage, thread_id: threadId, reason: describeFailure(err) }));
}

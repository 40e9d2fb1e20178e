/**
 * What a route's `agent_out_of_hours` does (docs/inbox.md, "Business hours"): with `answer` the
 * agent answers out of hours and only a handoff says when a person is back; with `handoff_note` the
 * customer is also told beside the agent's answer, once per closed period. The next opening is
 * written in the person's locale when it is known, else in the route's, at a turn and at an
 * operator's switch alike.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { BusinessHours } from "../../src/conversations/business-hours";
import { DEFAULT_POLICY } from "../../src/conversations/model/inbox";
import type { ThreadDeps } from "../../src/conversations/thread/deps";
import { ThreadInbox } from "../../src/conversations/thread/inbox";
import { turnPlugins } from "../../src/conversations/thread/turn-plugins";
import { createRoute, send } from "../helpers/bridge";
import { admin, call, mintKey, uniq } from "../helpers/http";
import { fakeFetch } from "../helpers/network";
import { eventually, rawRows } from "../helpers/threads";
import { postTwilio } from "../helpers/webhooks";
import { address, channelRoute, declareTool, network, setMode } from "../operator/helpers";
import { settingsOf } from "../targets/helpers";

// 2026-01-05 is a Monday; Berlin is UTC+1 in winter, so the office opens at 08:00Z.
const office = BusinessHours.parse({
  time_zone: "Europe/Berlin",
  weekly: { mon: [["09:00", "17:30"]], tue: [["09:00", "17:30"]] },
  away_message: "Back {next_opening}.",
  agent_out_of_hours: "handoff_note",
});
const MONDAY_EARLY = Date.parse("2026-01-05T06:00:00Z");

/** A thread inbox over a fresh object's storage with a settable clock; what it says to the customer is collected. */
async function withInbox(hours: BusinessHours, fn: (inbox: ThreadInbox, clock: { ms: number }, said: string[]) => Promise<void>): Promise<void> {
  const stub = env.THREADS.get(env.THREADS.idFromName(uniq("hours-agent")));
  await runInDurableObject(stub, async (_o, state) => {
    const clock = { ms: MONDAY_EARLY };
    const settings = settingsOf();
    const deps: ThreadDeps = {
      storage: state.storage,
      env: () => env,
      settings: () => settings,
      clock: { now: () => clock.ms },
      fetch: fakeFetch(() => {
        throw new Error("the inbox must not reach the network here");
      }).fetch,
      turn: turnPlugins,
    };
    const said: string[] = [];
    const inbox = new ThreadInbox(deps, {
      policy: async () => ({ ...DEFAULT_POLICY, holding_message: "Someone will be with you shortly.", business_hours: hours }),
      defaultSlaMs: () => 60_000,
      emit: () => undefined,
      changed: () => undefined,
      messages: {
        holding: async (_route, text) => {
          said.push(text);
          return true;
        },
        closing: async () => false,
      },
    });
    await fn(inbox, clock, said);
  });
}

describe("agent_out_of_hours: handoff_note, in the thread's inbox", () => {
  it("tells the customer when a person is back beside the agent's answer, once per closed period", async () => {
    await withInbox(office, async (inbox, clock, said) => {
      await inbox.agentAnswering("r1", office, null);
      expect(said).toHaveLength(1);
      expect(said[0]).toMatch(/^Back Monday.*09:00/);
      // Still the same night: told already.
      clock.ms += 60 * 60_000;
      await inbox.agentAnswering("r1", office, null);
      expect(said.length).toBe(1);
      // Open: nothing to tell.
      clock.ms = Date.parse("2026-01-05T10:00:00Z");
      await inbox.agentAnswering("r1", office, null);
      expect(said.length).toBe(1);
      // Closed again after Monday's hours: a new closed period, told again, in the person's locale.
      clock.ms = Date.parse("2026-01-05T18:00:00Z");
      await inbox.agentAnswering("r1", office, "de-DE");
      expect(said[1]).toMatch(/^Back Dienstag.*09:00/);
    });
  });

  it("with answer, or with no hours, says nothing beside the agent's answer", async () => {
    const answer = BusinessHours.parse({ ...office, agent_out_of_hours: "answer" });
    await withInbox(answer, async (inbox, _clock, said) => {
      await inbox.agentAnswering("r1", answer, null);
      await inbox.agentAnswering("r1", null, null);
      await inbox.agentAnswering("r1", undefined, null);
      expect(said).toEqual([]);
    });
  });

  it("a handoff's away message is written in the person's locale and counts as this period's note", async () => {
    await withInbox(office, async (inbox, clock, said) => {
      await inbox.modeChanged("manual", "r1", "agent_handoff", null, "fr-FR");
      expect(said).toHaveLength(1);
      expect(said[0]).toMatch(/^Back lundi.*09:00/);
      await inbox.modeChanged("agent", "r1", "agent_handoff", null);
      clock.ms += 60_000;
      await inbox.agentAnswering("r1", office, "fr-FR");
      expect(said).toHaveLength(1);
    });
  });

  it("a person's locale Intl does not know falls back to the route's", async () => {
    const german = BusinessHours.parse({ ...office, locale: "de-DE" });
    await withInbox(german, async (inbox, _clock, said) => {
      await inbox.agentAnswering("r1", german, "not a locale!");
      expect(said[0]).toMatch(/^Back Montag.*09:00/);
    });
  });
});

const smsTo = (calls: Array<{ url: string; body: string }>, to: string) =>
  calls
    .filter((c) => new URL(c.url).host === "twilio.fake")
    .map((c) => new URLSearchParams(c.body))
    .filter((p) => p.get("To") === to)
    .map((p) => p.get("Body"));

async function sms(route: { identity: string }, from: string, text: string) {
  const res = await postTwilio({ MessageSid: `SM${crypto.randomUUID().replace(/-/g, "")}`, From: from, To: route.identity, Body: text, NumMedia: "0" });
  expect(res.status).toBeLessThan(300);
}

async function putHours(route: string, body: unknown) {
  const r = await call("PUT", `/api/conversations/${route}/hours`, { key: await admin(), body });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
}

describe("agent_out_of_hours on a channel route", () => {
  it("handoff_note: the agent answers and the customer is told once when a person is back; answer: only the agent", async () => {
    const net = network();
    const r = await channelRoute("twilio");
    // A week with no hours: closed now and always.
    await putHours(r.name, { time_zone: "UTC", weekly: {}, away_message: "We are closed. Back {next_opening}.", agent_out_of_hours: "handoff_note" });
    const them = address();
    await sms(r, them, "hello");
    await eventually(
      async () => smsTo(net.calls, them),
      (got) => got.length >= 2,
      250,
    );
    expect(smsTo(net.calls, them).sort()).toEqual(["We are closed. Back as soon as possible.", "hello"].sort());
    await sms(r, them, "again");
    await eventually(
      async () => smsTo(net.calls, them),
      (got) => got.includes("again"),
      250,
    );
    expect(smsTo(net.calls, them).filter((t) => t?.startsWith("We are closed"))).toHaveLength(1);

    await putHours(r.name, { time_zone: "UTC", weekly: {}, away_message: "We are closed. Back {next_opening}.", agent_out_of_hours: "answer" });
    const other = address();
    await sms(r, other, "hi there");
    await eventually(
      async () => smsTo(net.calls, other),
      (got) => got.includes("hi there"),
      250,
    );
    expect(smsTo(net.calls, other)).toEqual(["hi there"]);
  });
});

describe("the person's locale", () => {
  it("writes the next opening in the linked person's locale, in the note and at an operator's switch", async () => {
    const host = `hours-${crypto.randomUUID().slice(0, 8)}.example`;
    const title = host.split(".")[0];
    await declareTool(title, `https://${host}/run`);
    // The tool answers with the person it saw, which names the person to give a locale.
    network({ [host]: (kwargs) => String(kwargs.person_id) });
    const k = await mintKey({ scopes: [`tool:${title}`] });
    const route = await createRoute({ door: "api", target_kind: "tool", target_name: title, execution_key: k.user_id, payload_expr: "{person_id}" });
    const key = await admin();
    expect(
      (await call("PUT", `/api/conversation-configs/tool/${title}`, { key, body: { target_kind: "tool", target_name: title, multichannel: true } })).status,
    ).toBe(200);
    const ext = uniq("anna");
    const first = await send(route.name, { external_user_id: ext, text: "hi", wait_seconds: 10 });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const personId = first.body.data.answer as string;
    expect((await call("PUT", `/api/conversations/persons/${personId}/locale`, { key, body: { locale: "de-DE" } })).status).toBe(200);

    // Open only on the day after tomorrow (UTC): closed now, whatever the time.
    const opening = new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate() + 2, 9));
    const day = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"][opening.getUTCDay()];
    await putHours(route.name, {
      time_zone: "UTC",
      weekly: { [day]: [["09:00", "10:00"]] },
      away_message: "Zurück {next_opening}.",
      agent_out_of_hours: "handoff_note",
    });
    const again = await send(route.name, { external_user_id: ext, text: "noch da?", wait_seconds: 10 });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body.data.answer).toBe(personId);
    const weekday = new Intl.DateTimeFormat("de-DE", { timeZone: "UTC", weekday: "long" }).format(opening);
    const rows = await eventually(
      () => rawRows(again.body.data.thread_id),
      (rs) => rs.some((r) => JSON.parse(r.record).submitted_by === "inbox"),
      250,
    );
    const note = rows.map((r) => JSON.parse(r.record)).find((r) => r.submitted_by === "inbox");
    expect(note?.answer).toMatch(new RegExp(`^Zurück ${weekday}.*09:00`));

    // An operator's switch comes from outside a turn: the thread finds the person's locale in its messages.
    const threadId = again.body.data.thread_id as string;
    expect((await setMode(route.name, threadId, "manual")).status).toBe(200);
    const after = await eventually(
      () => rawRows(threadId),
      (rs) => rs.filter((r) => JSON.parse(r.record).submitted_by === "inbox").length >= 2,
      250,
    );
    const away = after.map((r) => JSON.parse(r.record)).filter((r) => r.submitted_by === "inbox")[1];
    expect(away?.answer).toMatch(new RegExp(`^Zurück ${weekday}.*09:00`));
  });
});

/// <reference types="vite/client" />
/**
 * The live-channel revocation suite (docs/security.md, "Every live channel dies with its
 * credential"), generated from the route table like the other hardening suites:
 *
 * 1. Every door that upgrades to a WebSocket or streams server-sent events declares `live` on its
 *    RouteSpec (src/platform/http/route.ts); a door whose `produces` or status says it streams
 *    without declaring it fails the suite, and so does a source file that builds a socket or an
 *    event stream without being accounted for below (so a new live door cannot hide behind a
 *    plain declaration).
 * 2. Every declared live door has a fixture, keyed by door (the suite fails for a declaration
 *    without one, and for a fixture whose door is not declared live).
 * 3. Each fixture opens its door with a credential and sees a push arrive; then, for each way its
 *    credential can be taken away (a key revoked, disabled, narrowed, its owner disabled; a web
 *    session ended or expired), it revokes it, triggers another push, and asserts that the push
 *    never arrives and the channel is closed.
 */
import { createExecutionContext, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { consoleHubStub } from "../../src/console/rpc";
import { threadStub } from "../../src/conversations/model/thread-rpc";
import { interactionHub } from "../../src/interactions/rpc";
import type { InteractionState } from "../../src/interactions/record";
import { createApp } from "../../src/app";
import { answerOnly, fakeNetwork } from "../helpers/network";
import { createRoute, echoKey, echoRoute } from "../helpers/bridge";
import { BASE, admin, call, dispatch as dispatchHttp, mintKey, uniq } from "../helpers/http";
import { type RouteSpec, doors, label } from "./doors";
import { must } from "../../src/platform/must";

const DOORS = doors();
const LIVE = DOORS.filter((d) => d.live);
const ORIGIN = new URL(BASE).origin;
const WAIT_MS = 10_000;

// ---------------------------------------------------------------------------------------------
// Detection: which doors and which source files make live channels.

/** A door that says, by what it answers, that it streams or upgrades. */
function looksLive(spec: RouteSpec): boolean {
  return spec.produces === "text/event-stream" || spec.produces === "application/websocket" || spec.status === 101;
}

/** Source files that build a socket or an event stream. */
const SOURCES = import.meta.glob(["../../src/**/*.ts", "../../durable-objects/*.ts"], { query: "?raw", import: "default", eager: true }) as Record<
  string,
  string
>;
const MAKES_LIVE = /new WebSocketPair\(|acceptWebSocket\(|["']text\/event-stream/;

/**
 * Every source file that builds a socket or a stream, with the live doors it serves, or why it
 * serves none. A new file that makes a live channel fails the suite until it is listed here, and
 * a listed door must declare `live`. (MCP holds no live channel: the sub-MCP door is stateless
 * JSON-RPC without sessions or a server-sent stream, GET and DELETE answer 405, and src/mcp/ is
 * the client of outside servers.)
 */
const LIVE_SOURCES: Record<string, { doors: string[] } | { none: string }> = {
  "durable-objects/console-hub.ts": { doors: ["GET /api/conversations/{route_name}/live"] },
  "src/conversations/thread/web-visitor.ts": { doors: ["GET /api/channels/web/stream"] },
  "durable-objects/thread-object.ts": { doors: ["GET /api/channels/web/stream"] },
  "src/interactions/stream.ts": { doors: ["GET /api/interactions/stream"] },
  "src/interactions/routes.ts": { doors: ["GET /api/interactions/stream"] },
  "src/targets/agents/sse.ts": { doors: ["POST /api/agents/{name}/runs", "POST /api/agents/authored/{name}/runs"] },
  "src/targets/routes/agents.ts": { doors: ["POST /api/agents/{name}/runs", "POST /api/agents/authored/{name}/runs"] },
  "src/outbound/stream.ts": {
    none: "the client of an outside endpoint's event stream (a model or http agent answering): it reads a stream and serves no door",
  },
};

const relative = (path: string) => path.replace(/^(\.\.\/)+/, "");

describe("every live door is declared and has a fixture", () => {
  it("prints the figures", () => {
    const cases = LIVE.reduce((n, d) => n + (FIXTURES[label(d)] ? Object.keys(FIXTURES[label(d)].revocations).length : 0), 0);
    console.log(`live-revocation: ${DOORS.length} doors, ${LIVE.length} live (${LIVE.map(label).join(", ")}), ${cases} revocation cases`);
    expect(LIVE.length).toBeGreaterThan(0);
  });

  it("a door that streams or upgrades declares `live`", () => {
    const undeclared = DOORS.filter((d) => looksLive(d) && !d.live).map(label);
    expect(undeclared).toEqual([]);
  });

  it("every source file that builds a socket or a stream is accounted for, and its doors declare `live`", () => {
    const files = Object.entries(SOURCES)
      .filter(([, text]) => MAKES_LIVE.test(text))
      .map(([path]) => relative(path))
      .sort();
    expect(files.length).toBeGreaterThan(0);
    expect(files.filter((f) => !(f in LIVE_SOURCES))).toEqual([]);
    const declared = new Set(LIVE.map(label));
    const served = Object.values(LIVE_SOURCES).flatMap((s) => ("doors" in s ? s.doors : []));
    expect(served.filter((d) => !declared.has(d))).toEqual([]);
    // A listed file that no longer makes a live channel is stale.
    expect(Object.keys(LIVE_SOURCES).filter((f) => !files.includes(f))).toEqual([]);
  });

  it("every declared live door has a fixture, and every fixture a declared live door", () => {
    expect(LIVE.map(label).filter((d) => !FIXTURES[d])).toEqual([]);
    const declared = new Set(LIVE.map(label));
    expect(Object.keys(FIXTURES).filter((d) => !declared.has(d))).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------
// Channels: what a client received, and whether the server closed it.

interface Channel {
  /** Everything received so far. */
  received(): string;
  /** Resolves once `marker` was received; fails if the channel closed or nothing came in time. */
  waitFor(marker: string): Promise<void>;
  /** Resolves once the server closed the channel; fails if it stayed open. */
  closed(): Promise<void>;
  /** Closes from the client's side (cleanup). */
  close(): void;
}

function channel(start: (onData: (text: string) => void, onEnd: () => void) => () => void): Channel {
  let text = "";
  let ended = false;
  const waiters = new Set<() => void>();
  const wake = () => {
    for (const w of [...waiters]) w();
  };
  const stop = start(
    (t) => {
      text += t;
      wake();
    },
    () => {
      ended = true;
      wake();
    },
  );
  const until = async (done: () => boolean, what: string) => {
    const deadline = Date.now() + WAIT_MS;
    while (!done()) {
      if (Date.now() > deadline) throw new Error(`${what}; received ${JSON.stringify(text.slice(-2000))}`);
      await new Promise<void>((r) => {
        const w = () => {
          waiters.delete(w);
          r();
        };
        waiters.add(w);
        setTimeout(w, 100);
      });
    }
  };
  return {
    received: () => text,
    waitFor: (marker) =>
      until(() => {
        if (text.includes(marker)) return true;
        if (ended) throw new Error(`the channel closed before ${marker} arrived; received ${JSON.stringify(text)}`);
        return false;
      }, `${marker} never arrived`),
    closed: () => until(() => ended, "the channel stayed open"),
    close: stop,
  };
}

function socketChannel(ws: WebSocket): Channel {
  return channel((onData, onEnd) => {
    ws.addEventListener("message", (e) => onData(`${String(e.data)}\n`));
    ws.addEventListener("close", () => onEnd());
    ws.accept();
    return () => {
      try {
        ws.close(1000, "done");
      } catch {
        /* already closed */
      }
    };
  });
}

function streamChannel(res: Response): Channel {
  const reader = must(res.body, "res.body").getReader();
  return channel((onData, onEnd) => {
    const decoder = new TextDecoder();
    void (async () => {
      try {
        for (;;) {
          const next = await reader.read();
          if (next.done) break;
          onData(decoder.decode(next.value, { stream: true }));
        }
      } catch {
        /* cancelled */
      }
      onEnd();
    })();
    return () => void reader.cancel().catch(() => undefined);
  });
}

// ---------------------------------------------------------------------------------------------
// Fixtures, keyed by door.

/** One opened channel: how to make it push a marker, and what its revocations need. */
interface Opened {
  channel: Channel;
  push(marker: string): Promise<void>;
  /** The key (and its owner) the channel was opened with, for the key revocations. */
  caller?: { user_id: string; owner_user_id?: string };
  /** The web visitor's thread and cookie, for the session revocations. */
  visitor?: { identity: string; threadId: string; cookie: string };
}

interface Fixture {
  /** Opens the door; `owned` asks for a caller key owned by another key (for the owner revocation). */
  open(owned: boolean): Promise<Opened>;
  /** Each way the credential is taken away: its name and what it does. */
  revocations: Record<string, Revocation>;
}

interface Revocation {
  owned?: boolean;
  revoke(o: Opened, narrowTo: string[]): Promise<void>;
}

/** What each key door's caller keeps when narrowed: a grant that no longer reaches the door. */
const NARROWED = ["tools:read"];

async function keyWrite(userId: string, body: Record<string, unknown>): Promise<void> {
  const r = await call("PUT", `/api/auth/api-keys/${userId}`, { key: await admin(), body });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
}

const KEY_REVOCATIONS: Record<string, Revocation> = {
  "key revoked": {
    async revoke(o) {
      const r = await call("DELETE", `/api/auth/api-keys/${must(o.caller, "o.caller").user_id}`, { key: await admin() });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    },
  },
  "key disabled": { revoke: (o) => keyWrite(must(o.caller, "o.caller").user_id, { disabled: true }) },
  "key narrowed": { revoke: (o, narrowTo) => keyWrite(must(o.caller, "o.caller").user_id, { scopes: narrowTo }) },
  "owner disabled": {
    owned: true,
    revoke: (o) => keyWrite(must(must(o.caller, "o.caller").owner_user_id, "o.caller.owner_user_id"), { disabled: true }),
  },
};

/** A caller key with `scopes`, owned by a fresh owner holding the same scopes when `owned`. */
async function callerKey(scopes: string[], owned: boolean) {
  if (!owned) return { ...(await mintKey({ scopes })), owner_user_id: undefined };
  const owner = await mintKey({ scopes: [...scopes, "auth:write"] });
  return { ...(await mintKey({ scopes, owner_user_id: owner.user_id })), owner_user_id: owner.user_id };
}

const consoleFixture: Fixture = {
  revocations: KEY_REVOCATIONS,
  async open(owned) {
    const route = (await echoRoute()).name;
    const k = await callerKey(["conversations:read"], owned);
    const t = await call("POST", `/api/conversations/${route}/live-tickets`, { key: k.key });
    expect(t.status, JSON.stringify(t.body)).toBe(201);
    const res = await dispatchHttp(`${BASE}/api/conversations/${route}/live?ticket=${t.body.data.ticket}`, { headers: { upgrade: "websocket" } });
    expect(res.status).toBe(101);
    const ch = socketChannel(must(res.webSocket, "res.webSocket"));
    await ch.waitFor('"ready"');
    return {
      channel: ch,
      caller: k,
      // A listing push as the route's IndexShards announce it; the marker rides as the thread id.
      push: async (marker) => {
        await consoleHubStub(env, route).notify([{ type: "thread", route_name: route, thread_id: marker, status: "queued", at: new Date().toISOString() }]);
      },
    };
  },
};

/** A full interaction state whose question is `marker`. */
function interactionState(marker: string): InteractionState {
  const now = new Date();
  return {
    interaction_id: crypto.randomUUID(),
    status: "pending",
    question: marker,
    options: null,
    schema: null,
    audience: null,
    origin: { kind: "thread", route_name: "r", thread_id: "bridge:r:a", message_id: "m1", door: "api", channel: null },
    target: { kind: "tool", name: "ask_user" },
    created_at: now.toISOString(),
    expires_at: new Date(now.getTime() + 60_000).toISOString(),
    ended_at: null,
    answer: null,
    cancel_reason: null,
    reply_message_id: null,
    result: null,
  } as InteractionState;
}

const interactionsFixture: Fixture = {
  // A restricted (owned) caller hears only what is addressed to it since its lineage began: the
  // owner case is the console's and the runs'; the key cases cover this door's check.
  revocations: {
    "key revoked": KEY_REVOCATIONS["key revoked"],
    "key disabled": KEY_REVOCATIONS["key disabled"],
    "key narrowed": KEY_REVOCATIONS["key narrowed"],
  },
  async open(owned) {
    const k = await callerKey(["interactions:read"], owned);
    // From the hub's newest id: a stream opened without one would take its start after this test's first push.
    const { last_id } = await interactionHub(env).since({ after: null, audience: null, waitMs: 0, limit: 1 });
    const res = await dispatchHttp(`${BASE}/api/interactions/stream?last_event_id=${last_id}`, { headers: { "x-api-key": k.key } });
    expect(res.status).toBe(200);
    const ch = streamChannel(res);
    await ch.waitFor(": connected");
    const push = async (marker: string) => {
      const state = interactionState(marker);
      await interactionHub(env).publish(
        [{ type: "interaction.created", interaction_id: state.interaction_id, audience: null, at: state.created_at, interaction: state }],
        1000,
      );
    };
    return { channel: ch, caller: k, push };
  },
};

/**
 * An llm agent whose model answers when the test lets it: each `push` releases one model answer,
 * a tool call (its frames are the push) while more are to come, and the final text otherwise.
 */
function agentFixture(authored: boolean): Fixture {
  return {
    revocations: KEY_REVOCATIONS,
    async open(owned) {
      const agent = uniq("live-agent");
      const made = await call("POST", "/api/agents-config/entries", {
        key: await admin(),
        body: { title: agent, kind: "llm", config: { base_url: "https://llm.example/v1", model: "m", api_key: { env: "LLM_KEY" }, tool_names: ["echo"] } },
      });
      expect(made.status, JSON.stringify(made.body)).toBe(200);
      let name = agent;
      if (authored) {
        name = uniq("live-authored");
        const p = await call("POST", "/api/presets", { key: await admin(), body: { name, base_tool: agent, description: "a live-revocation fixture" } });
        expect(p.status, JSON.stringify(p.body)).toBe(200);
      }
      const gates: Array<(marker: string) => void> = [];
      const answers: Promise<string>[] = [];
      const nextAnswer = () => {
        answers.push(new Promise<string>((r) => gates.push(r)));
      };
      nextAnswer();
      let calls = 0;
      fakeNetwork(
        answerOnly({
          "POST https://llm.example/v1/chat/completions": async () => {
            const marker = await answers[calls++];
            nextAnswer();
            // Every answer but the last asks for a tool: the run goes on, and its steps are the push.
            const message = marker.startsWith("last-")
              ? { role: "assistant", content: marker }
              : {
                  role: "assistant",
                  content: null,
                  tool_calls: [{ id: `c${calls}`, type: "function", function: { name: "echo", arguments: JSON.stringify({ message: marker }) } }],
                };
            return Response.json({ choices: [{ message }] });
          },
        }),
      );
      const k = await callerKey(["agents:read", `agent:${name}`, `agent:${agent}`, "tool:echo"], owned);
      const path = authored ? `/api/agents/authored/${name}/runs` : `/api/agents/${name}/runs`;
      // Through the app with the agent's model key in its env, as the agent-run tests call it.
      const res = await createApp().fetch(
        new Request(`${BASE}${path}`, {
          method: "POST",
          headers: { "x-api-key": k.key, "content-type": "application/json" },
          body: JSON.stringify({ user_message: "go" }),
        }),
        { ...env, LLM_KEY: "sk-live-llm-key" },
        createExecutionContext(),
      );
      expect(res.status).toBe(200);
      const ch = streamChannel(res);
      let pushes = 0;
      return {
        channel: ch,
        caller: k,
        // The first push is a tool step; the one after the revoke is the run's last answer.
        push: async (marker) => {
          pushes += 1;
          gates[pushes - 1](pushes === 1 ? marker : `last-${marker}`);
        },
      };
    },
  };
}

async function webVisitor() {
  const k = await echoKey();
  const identity = uniq("live-desk").replace(/[^A-Za-z0-9_-]/g, "-");
  const r = await createRoute({ door: "channel", channel: "web", our_identity: identity, target_kind: "tool", target_name: "echo", execution_key: k.user_id });
  const page = await dispatchHttp(`${BASE}/api/channels/web/chat/${identity}`, { headers: { "sec-fetch-mode": "navigate" } });
  await page.text();
  const cookie = (page.headers.get("set-cookie") ?? "").split(";")[0];
  expect(cookie).toContain("=");
  const visitor = cookie.split("=")[1].split(".")[0];
  return { identity, cookie, threadId: `bridge:${r.name}:${visitor}` };
}

const webFixture: Fixture = {
  revocations: {
    "session rotated": {
      async revoke(o) {
        const r = await call("POST", "/api/channels/web/session/rotate", {
          body: { identity: must(o.visitor, "o.visitor").identity },
          headers: { origin: ORIGIN, cookie: must(o.visitor, "o.visitor").cookie },
        });
        expect(r.status, JSON.stringify(r.body)).toBe(200);
      },
    },
    "session expired": {
      async revoke(o) {
        await runInDurableObject(
          threadStub(env, must(o.visitor, "o.visitor").threadId) as unknown as DurableObjectStub,
          async (_obj, state: DurableObjectState) => {
            state.storage.sql.exec("UPDATE web_session SET expires_at = ?", Date.now() - 1);
          },
        );
      },
    },
    "session replaced": {
      async revoke(o) {
        await runInDurableObject(
          threadStub(env, must(o.visitor, "o.visitor").threadId) as unknown as DurableObjectStub,
          async (_obj, state: DurableObjectState) => {
            state.storage.sql.exec("UPDATE web_session SET secret_hash = ?", "0".repeat(64));
          },
        );
      },
    },
  },
  async open() {
    const v = await webVisitor();
    // The first message confirms the pending session, as a page's first message does.
    const first = await call("POST", "/api/channels/web/messages", {
      body: { identity: v.identity, text: "hello" },
      headers: { origin: ORIGIN, cookie: v.cookie },
    });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const res = await dispatchHttp(`${BASE}/api/channels/web/stream?identity=${v.identity}`, {
      headers: { upgrade: "websocket", origin: ORIGIN, cookie: v.cookie },
    });
    expect(res.status).toBe(101);
    const ch = socketChannel(must(res.webSocket, "res.webSocket"));
    await ch.waitFor('"ready"');
    return {
      channel: ch,
      visitor: v,
      // An entry written to the visitor's transcript, as delivery writes an answer.
      push: async (marker) => {
        await threadStub(env, v.threadId).webAppend("operator", marker, null, null, Date.now() + 3_600_000);
      },
    };
  },
};

const FIXTURES: Record<string, Fixture> = {
  "GET /api/conversations/{route_name}/live": consoleFixture,
  "GET /api/channels/web/stream": webFixture,
  "GET /api/interactions/stream": interactionsFixture,
  "POST /api/agents/{name}/runs": agentFixture(false),
  "POST /api/agents/authored/{name}/runs": agentFixture(true),
};

/** The scopes a narrowed caller keeps, per door: enough to exist, not enough for the door. */
const NARROW_TO: Record<string, string[]> = {
  "POST /api/agents/{name}/runs": ["agents:read"],
  "POST /api/agents/authored/{name}/runs": ["agents:read"],
};

beforeEach(() => {
  fakeNetwork(answerOnly({}));
});

const opened: Channel[] = [];
afterAll(() => {
  for (const ch of opened) ch.close();
});

describe.each(LIVE.map((d) => [label(d)]))("%s dies with its credential", (door) => {
  const fixture = FIXTURES[door];
  it.each(Object.keys(fixture?.revocations ?? {}))(
    "%s: the next push never arrives and the channel closes",
    async (how) => {
      const revocation = fixture.revocations[how];
      const o = await fixture.open(revocation.owned === true);
      opened.push(o.channel);
      const before = uniq("before-push");
      await o.push(before);
      await o.channel.waitFor(before);
      await revocation.revoke(o, NARROW_TO[door] ?? NARROWED);
      const after = uniq("after-push");
      await o.push(after);
      await o.channel.closed();
      expect(o.channel.received()).not.toContain(after);
    },
    30_000,
  );
});

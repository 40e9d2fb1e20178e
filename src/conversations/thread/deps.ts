/**
 * What the thread's parts run with. The object hands each part only the members it needs; a test
 * can hand a part its own storage, settings, clock and network, and its own turn plugins.
 *
 * The other areas a turn runs (agents and tools, questions, states, channels, access) plug into the
 * turn through `TurnPlugins` instead of being imported by the turn loop and runner: what the turn
 * uses of each area is named here once, the wiring lives in one module
 * (src/conversations/thread/turn-plugins.ts), and a test can hand a part other plugins.
 */
import type { CounterDelta, FailedRow, RunRow } from "../../shards/rpc";
import type { authorizeTurn } from "../../access-control/pass-role";
import type { storedByRefusal } from "../../access-control/stored-by";
import type { adapterFor } from "../../channels/registry";
import type { canPark, createInteraction } from "../../interactions/create";
import type { questionAnswer } from "../../interactions/question";
import type { interactionStub } from "../../interactions/rpc";
import type { mergeBindings } from "../../states/binding-merge";
import type { bindingRefs } from "../../states/binding-refs";
import type { heldSubjects, queueSave } from "../../states/pending-saves";
import type { BindingError, applyStateUpdates, prepareStates } from "../../states/turn-binding";
import type { agentKeepsMemory, appendAgentMemory, resumeAgent, runAgent } from "../../targets/agents/run";
import type { createTargetContext } from "../../targets/context";
import type { dispatchTool } from "../../targets/dispatch";
import type { resolveTool } from "../../targets/tools/registry";
import type { Env } from "../../platform/env";
import type { Clock } from "../../platform/clock";
import { setJqBudget } from "../../platform/jq/engine";
import { isolateSettings } from "../../config/isolate-settings";
import { objectEnvNow } from "../../config/object-settings";
import type { Settings } from "../../platform/settings/settings";

/** The dependencies of a thread's parts. */
export interface ThreadDeps {
  /** The object's own SQLite-backed storage. */
  storage: DurableObjectStorage;
  /** The Worker env, read on each use (bindings and settings follow the object's env). */
  env: () => Env;
  /** The validated settings; throws on an invalid configuration, as every door does. */
  settings: () => Settings;
  /** The clock the parts read time from (the shell injects the system clock). */
  clock: Clock;
  /** The network edge every outbound request goes through (src/platform/net/edge-fetch.ts). */
  fetch: typeof fetch;
  /** What the turn loop and runner use of the other areas (the shell hands in `turnPlugins`). */
  turn: TurnPlugins;
}

/** The other areas' functions a turn calls, by area; each is typed as the real one it stands for. */
export interface TurnPlugins {
  /** The turn's target context: the run's env, settings, network, thread and conversation. */
  targets: { context: typeof createTargetContext };
  /** An agent target's run, its resume after ask_user, and its memory in manual mode. */
  agents: {
    run: typeof runAgent;
    resume: typeof resumeAgent;
    keepsMemory: typeof agentKeepsMemory;
    appendMemory: typeof appendAgentMemory;
  };
  /** A tool target: resolved once per turn (a preset may carry a state binding), then dispatched. */
  tools: { resolve: typeof resolveTool; dispatch: typeof dispatchTool };
  /** ask_user: whether a turn may park, the stored interaction, its question as the answer, its object. */
  questions: {
    canPark: typeof canPark;
    create: typeof createInteraction;
    answerOf: typeof questionAnswer;
    stub: typeof interactionStub;
  };
  /**
   * A tool target's state binding: merged, read before and written after the dispatch, with the
   * writes that could not land queued. `BindingError` is what `prepare` and `apply` throw for a
   * binding the turn answers with the error outcome.
   */
  states: {
    merge: typeof mergeBindings;
    refs: typeof bindingRefs;
    prepare: typeof prepareStates;
    apply: typeof applyStateUpdates;
    heldSubjects: typeof heldSubjects;
    queueSave: typeof queueSave;
    BindingError: typeof BindingError;
  };
  /** The channel adapter a parked question is shown through. */
  channels: { adapterFor: typeof adapterFor };
  /** Whether the route's key may run the tool now, and whether a stored binding's writer may reach what it names. */
  access: { authorizeTurn: typeof authorizeTurn; storedByRefusal: typeof storedByRefusal };
}

/** Re-arms the object's one alarm (ThreadAlarm.arm): the only way a part sets the alarm. */
export interface AlarmArm {
  arm(): Promise<void>;
  /** The agent memory was written here: its expiry is read again at the next arm. */
  memoryChanged?(): void;
}

/**
 * Notes a record transition for the admin listings (IndexOutbox.note): synchronous, in the
 * transition's own transaction; the push to the listing shard follows in the background.
 */
export interface IndexWriter {
  note(change?: IndexNote): void;
  /** Resolves once no push is in flight (and nothing noted is left unpushed, barring a failed push). */
  drained(): Promise<void>;
}

/** What a transition adds besides refreshing the thread's listing row. */
export interface IndexNote {
  /** A turn settled (or a preset record was accepted): the unit the shards' flush batch counts. */
  settled?: boolean;
  /** A record that just failed, for the admin failed listing. */
  failed?: FailedRow;
  /** Records just pruned: their message directory entries go. */
  dropped?: string[];
  /** A turn's run trace just kept: its summary row, for D1 `runs`. */
  run?: RunRow;
  /** Run traces just pruned with their records: their summary rows go. */
  runsDropped?: string[];
  /** Metrics counters (delivery attempts and failed attempts). */
  counters?: CounterDelta[];
}

/**
 * The settings for `env` with the runtime overlay on top (this isolate's cache, re-checked in the
 * background at most every SETTINGS_REFRESH_SECONDS; docs/runtime-settings.md), or a thrown
 * "invalid configuration". Synchronous: no D1 statement per turn. Also applies the jq budget, since
 * a thread object's isolate runs jq programs (payload and reply expressions) of its own.
 */
export function threadSettings(env: object): Settings {
  const r = isolateSettings.peek(env).result;
  if (!r.ok) throw new Error(`invalid configuration: ${r.errors.join("; ")}`);
  setJqBudget(r.settings.jq);
  return r.settings;
}

/**
 * Waits until this isolate holds the overlay (a no-op when it already does). For an object's
 * constructor, inside blockConcurrencyWhile: without it, an object that is the first user of a
 * fresh isolate runs the few milliseconds until the background load lands on the env alone.
 */
export async function warmThreadSettings(env: object): Promise<void> {
  try {
    await isolateSettings.ensure(env);
  } catch (err) {
    // D1 unreachable: never fail the object's start over it; `threadSettings` retries in the background.
    console.error(
      "thread settings: loading the settings overlay failed; running on the env until it loads",
      err instanceof Error ? err.message : "unknown error",
    );
  }
}

/** `env` with the runtime overlay on top: what a thread's channel sends read (`CHANNEL_*`). */
export function threadEnv(env: Env): Env {
  return objectEnvNow(env);
}

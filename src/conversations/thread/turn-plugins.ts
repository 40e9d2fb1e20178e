/**
 * The turn's plugins as the object runs them: the real functions of each area, wired once. This is
 * the one thread module that imports them for the turn; the turn loop and runner reach them
 * through their deps (src/conversations/thread/deps.ts, `TurnPlugins`).
 */
import { authorizeTurn } from "../../access-control/pass-role";
import { storedByRefusal } from "../../access-control/stored-by";
import { adapterFor } from "../../channels/registry";
import { canPark, createInteraction } from "../../interactions/create";
import { questionAnswer } from "../../interactions/question";
import { interactionStub } from "../../interactions/rpc";
import { mergeBindings } from "../../states/binding-merge";
import { bindingRefs } from "../../states/binding-refs";
import { heldSubjects, queueSave } from "../../states/pending-saves";
import { BindingError, applyStateUpdates, prepareStates } from "../../states/turn-binding";
import { agentKeepsMemory, appendAgentMemory, resumeAgent, runAgent } from "../../targets/agents/run";
import { createTargetContext } from "../../targets/context";
import { dispatchTool } from "../../targets/dispatch";
import { resolveTool } from "../../targets/tools/registry";
import type { TurnPlugins } from "./deps";

export const turnPlugins: TurnPlugins = {
  targets: { context: createTargetContext },
  agents: { run: runAgent, resume: resumeAgent, keepsMemory: agentKeepsMemory, appendMemory: appendAgentMemory },
  tools: { resolve: resolveTool, dispatch: dispatchTool },
  questions: { canPark, create: createInteraction, answerOf: questionAnswer, stub: interactionStub },
  states: {
    merge: mergeBindings,
    refs: bindingRefs,
    prepare: prepareStates,
    apply: applyStateUpdates,
    heldSubjects,
    queueSave,
    BindingError,
  },
  channels: { adapterFor },
  access: { authorizeTurn, storedByRefusal },
};

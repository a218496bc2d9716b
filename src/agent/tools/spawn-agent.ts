/**
 * `spawn_agent` (CONTRACT.md §13): the model hands a piece of work to a child agent. Only its
 * arguments and spec live here; the runtime runs the child (runtime/turn/agents.ts), because a child
 * needs the turn (its model, tools, approvals and cancellation), which no ordinary tool reaches.
 */
import { Type } from 'typebox';
import type { ToolSpec } from '../providers/types.ts';
import { argumentsParser, modelSchema, NON_BLANK } from './arguments.ts';

export const SPAWN_AGENT = 'spawn_agent';
const MAX_AGENT_LABEL_CHARS = 64;

const SpawnAgentArguments = Type.Object(
  {
    label: Type.String({ minLength: 1, maxLength: MAX_AGENT_LABEL_CHARS, pattern: NON_BLANK, description: 'a short name for the agent, shown to the user' }),
    prompt: Type.String({ minLength: 1, pattern: NON_BLANK, description: 'everything the agent needs to know: it sees this prompt and nothing of your conversation' }),
  },
  { additionalProperties: false },
);

export const spawnAgentSpec: ToolSpec = {
  name: SPAWN_AGENT,
  kind: 'function',
  description:
    'Starts a child agent with the same tools that works on the prompt alone and answers with its final text, ' +
    'which becomes this call\'s output. Several calls in one step run at the same time. Use it for independent ' +
    'pieces of work; agents nest at most 3 levels deep and a turn starts at most 100.',
  parameters: modelSchema(SpawnAgentArguments),
};

/** The call's arguments, or a ToolError whose message names the argument and what it must be. */
export const parseSpawnAgent = argumentsParser(SpawnAgentArguments);

import { InMemoryTaskMessageQueue, type CreateTaskRequestHandlerExtra, type TaskRequestHandlerExtra } from '@modelcontextprotocol/sdk/experimental/tasks';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestOptions } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult, CreateTaskResult, Task } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { AgentdClient, HumanRequest, Session, Turn } from '../../client/index.ts';
import { SessionStreams } from './session-streams.ts';
import { toolError, toolResult } from './tool-results.ts';
import { followTurn, outcomeOf, type AskHuman } from './turn-follower.ts';
import { TurnTasks } from './turn-tasks.ts';

const TurnOutcomeShape = {
  sessionId: z.string(),
  turnId: z.string(),
  status: z.string().describe('completed, failed or cancelled; waiting: a human request waits (answer it with answer_request); queued or running'),
  text: z.string().nullable().describe("the turn's final answer"),
  error: z.string().nullable(),
  changes: z.array(z.object({ path: z.string(), kind: z.string(), bytes: z.number() })).describe('files the turn created, modified or deleted'),
  request: z.object({ requestId: z.string(), kind: z.string(), prompt: z.string(), options: z.array(z.string()) }).nullable(),
};

/**
 * agentd's tools for another agent (CONTRACT.md §22): start a turn and get its answer, answer the
 * questions it asks, look at or cancel a turn, list sessions. Each acts through `client` (the
 * caller's own token), so a tenant reaches only its sessions; agentd's refusals are tool errors
 * (`isError`) that say what was wrong.
 */
export function agentdMcpServer(client: AgentdClient, version: string): McpServer {
  const tasks = new TurnTasks(client);
  const server = new McpServer({ name: 'agentd', version }, { capabilities: { tools: {}, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } }, taskStore: tasks, taskMessageQueue: new InMemoryTaskMessageQueue() });
  const streams = new SessionStreams(client);
  server.server.onclose = () => streams.close();
  const ask: AskHuman = async (request) => {
    if (!server.server.getClientCapabilities()?.elicitation) return null;
    return elicit(server, request);
  };
  /**
   * A call that runs a turn (start_turn, answer_request), task-capable: task-augmented, it answers
   * the task (the turn) at once, and an elicitation-capable client gets the turn's questions through
   * tasks/result; plain, it follows the turn as before and settles the task the SDK waits on.
   */
  const turnCall = async (extra: CreateTaskRequestHandlerExtra, begin: () => Promise<{ sessionId: string; start: () => Promise<Turn | string> }>): Promise<CreateTaskResult> => {
    let task = null as Task | null;
    try {
      const { sessionId, start } = await begin();
      const outcome = await followTurn(client, streams, sessionId, async () => {
        const started = await start();
        const turnId = typeof started === 'string' ? started : started.id;
        task = await extra.taskStore.createTask({ context: { turnId } });
        if (task.taskId !== turnId) return started;
        if (server.server.getClientCapabilities()?.elicitation) {
          const askRelated: AskHuman = (request) => elicit(server, request, { relatedTask: { taskId: turnId } });
          void followTurn(client, streams, sessionId, async () => turnId, askRelated).catch(() => undefined);
        }
        return null;
      }, ask, progressOf(extra));
      return { task: outcome ? tasks.settle(task!.taskId, await toolResult(async () => outcome)) : task! };
    } catch (error) {
      return { task: tasks.settle((task ?? (await extra.taskStore.createTask({}))).taskId, toolError(error)) };
    }
  };
  const progressOf = (extra: { _meta?: { progressToken?: string | number }; sendNotification: (notification: never) => Promise<void> }) => {
    const token = extra._meta?.progressToken;
    let step = 0;
    return (status: string) => {
      if (token !== undefined) void extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: ++step, message: status } } as never).catch(() => undefined);
    };
  };

  server.experimental.tasks.registerToolTask(
    'start_turn',
    {
      title: 'Start a turn',
      description: 'Gives agentd (a coding agent with approvals and a sandbox) a prompt in a session, new unless sessionId is given, and returns its answer and the files it changed once the turn ends, or status waiting with the question it asks a human.',
      inputSchema: {
        prompt: z.string().min(1).describe('what to do'),
        sessionId: z.string().optional().describe('continue this session; absent: a new one'),
        cwd: z.string().optional().describe("a new session's directory, inside agentd's workspace roots"),
        model: z.string().optional().describe("a new session's model (a catalog id)"),
      },
      outputSchema: TurnOutcomeShape,
      execution: { taskSupport: 'optional' },
    },
    taskHandler((args, extra) =>
      turnCall(extra, async () => {
        const sessionId = args.sessionId ?? (await client.createSession({ body: { ...(args.cwd ? { cwd: args.cwd } : {}), ...(args.model ? { model: args.model } : {}) } })).id;
        return { sessionId, start: () => client.submitTurn(sessionId, args.prompt) };
      }),
    ),
  );
  server.experimental.tasks.registerToolTask(
    'answer_request',
    {
      title: 'Answer a request',
      description: "Answers the human request a turn waits on with one of its options (text: the words of custom, request_changes or deny's reason), then returns where the turn stands as start_turn does.",
      inputSchema: { requestId: z.string(), option: z.string().min(1), text: z.string().optional() },
      outputSchema: TurnOutcomeShape,
      execution: { taskSupport: 'optional' },
    },
    taskHandler((args, extra) =>
      turnCall(extra, async () => {
        const resolved = await client.resolveRequest({ path: { id: args.requestId }, body: { decision: args.option, ...(args.text !== undefined ? { value: args.text } : {}) } });
        return { sessionId: resolved.sessionId, start: async () => resolved.turnId };
      }),
    ),
  );
  server.registerTool(
    'get_turn',
    { title: 'Get a turn', description: 'Where a turn stands now, without waiting: its status, and its answer and changes once it ended.', inputSchema: { turnId: z.string() }, outputSchema: TurnOutcomeShape, annotations: { readOnlyHint: true } },
    (args) => toolResult(() => outcomeOf(client, args.turnId, null)),
  );
  server.registerTool(
    'cancel_turn',
    { title: 'Cancel a turn', description: 'Cancels a queued, running or waiting turn and returns its final state.', inputSchema: { turnId: z.string() }, outputSchema: TurnOutcomeShape },
    (args) =>
      toolResult(async () => {
        await client.cancelTurn({ path: { id: args.turnId } });
        return outcomeOf(client, args.turnId, null);
      }),
  );
  server.registerTool(
    'list_sessions',
    {
      title: 'List sessions',
      description: "agentd's sessions, newest activity first (at most 100).",
      inputSchema: {},
      outputSchema: { sessions: z.array(z.object({ sessionId: z.string(), title: z.string(), cwd: z.string(), model: z.string(), updatedAt: z.string() })) },
      annotations: { readOnlyHint: true },
    },
    () =>
      toolResult(async () => {
        const page = await client.listSessions({ query: { limit: 100 } });
        return { sessions: page.data.map((session: Session) => ({ sessionId: session.id, title: session.title, cwd: session.cwd, model: session.model, updatedAt: session.updatedAt })) };
      }),
  );
  return server;
}

/** The human request as an elicitation form: pick one of its options, and words where they are wanted. */
async function elicit(server: McpServer, request: HumanRequest, options?: RequestOptions): Promise<{ decision: string; value?: string } | null> {
  const result = await server.server.elicitInput({
    message: request.prompt,
    requestedSchema: {
      type: 'object',
      properties: {
        option: { type: 'string', title: 'Answer', enum: request.options },
        text: { type: 'string', title: 'Words', description: 'with custom or request_changes: your words; with deny: the reason the agent is told' },
      },
      required: ['option'],
    },
  }, options);
  if (result.action !== 'accept' || typeof result.content?.option !== 'string') return null;
  const text = result.content.text;
  return { decision: result.content.option, ...(typeof text === 'string' && text !== '' ? { value: text } : {}) };
}

/** A task-capable tool's handler: its calls create tasks; tasks/get and tasks/result go to the task store. */
function taskHandler<Args>(createTask: (args: Args, extra: CreateTaskRequestHandlerExtra) => Promise<CreateTaskResult>) {
  return {
    createTask,
    getTask: (_args: Args, extra: TaskRequestHandlerExtra) => extra.taskStore.getTask(extra.taskId),
    getTaskResult: async (_args: Args, extra: TaskRequestHandlerExtra) => (await extra.taskStore.getTaskResult(extra.taskId)) as CallToolResult,
  };
}

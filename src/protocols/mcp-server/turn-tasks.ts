import { randomUUID } from 'node:crypto';
import type { CreateTaskOptions, TaskStore } from '@modelcontextprotocol/sdk/experimental/tasks';
import type { CallToolResult, Request, RequestId, Result, Task } from '@modelcontextprotocol/sdk/types.js';
import { AgentdError, type AgentdClient, type Turn } from '../../client/index.ts';
import { toolResult } from './tool-results.ts';
import { outcomeOf } from './turn-follower.ts';

/** What a task's status poll is told to wait (tasks/get by the client, tasks/result inside the SDK). */
const POLL_INTERVAL_MS = 500;
/** Results known when their call was made, kept at once per MCP session; past this the oldest go. */
const MAX_SETTLED = 1_000;

const STATUS_OF: Record<Turn['status'], Task['status']> = {
  queued: 'working',
  running: 'working',
  waiting_for_input: 'input_required',
  completed: 'completed',
  failed: 'failed',
  cancelled: 'cancelled',
};

interface Settled {
  task: Task;
  result: CallToolResult | null;
  /** a plain call's: handed to the SDK once, then forgotten */
  once: boolean;
}

/**
 * MCP Tasks (the SDK's experimental API) over agentd's turns. A task-augmented call of a turn tool
 * is the turn: the task id is the turn id, its status the turn's (waiting on a human: input_required),
 * tasks/result the tool result the plain call would give once the turn ended, tasks/cancel cancels
 * the turn. Nothing about those tasks is kept here: each question goes to agentd's API with the
 * caller's token, so a tenant finds only its own turns, and a task outlives the MCP session.
 *
 * The SDK's McpServer runs even a plain call of a task-capable tool through a task it waits on; such
 * a call, and a call refused before any turn exists, get a task of this MCP session alone, settled
 * with the result the tool already has (`settle`).
 */
export class TurnTasks implements TaskStore {
  private readonly settled = new Map<string, Settled>();

  constructor(private readonly client: AgentdClient) {}

  /** `context.turnId`: the call's turn; absent, or the call not task-augmented: a task to settle. */
  async createTask(options: CreateTaskOptions, _requestId: RequestId, request: Request): Promise<Task> {
    const turnId = options.context?.turnId;
    const augmented = request.params?.task !== undefined;
    if (typeof turnId === 'string' && augmented) return taskOf(await this.client.getTurn({ path: { id: turnId } }));
    const now = new Date().toISOString();
    const task: Task = { taskId: randomUUID(), status: 'working', ttl: null, createdAt: now, lastUpdatedAt: now, pollInterval: POLL_INTERVAL_MS };
    this.keep(task.taskId, { task, result: null, once: !augmented });
    return task;
  }

  /** Ends a task of `createTask`'s second kind with the result its call has (a turn's task stays the turn's). */
  settle(taskId: string, result: CallToolResult): Task {
    const entry = this.settled.get(taskId);
    if (!entry) throw new Error(`task ${taskId} is a turn's: its result is the turn's`);
    entry.task = { ...entry.task, status: result.isError ? 'failed' : 'completed', lastUpdatedAt: new Date().toISOString() };
    entry.result = result;
    return entry.task;
  }

  async getTask(taskId: string): Promise<Task | null> {
    const settled = this.settled.get(taskId);
    if (settled) return settled.task;
    const turn = await this.turnOrNull(taskId);
    if (!turn) return null;
    const task = taskOf(turn);
    if (task.status !== 'input_required') return task;
    const [request] = (await this.client.listRequests({ query: { turnId: taskId } })).data;
    return request ? { ...task, statusMessage: `${request.kind} ${request.id} waits for one of ${request.options.join(', ')} (answer_request, or the elicitation tasks/result delivers)` } : task;
  }

  async getTaskResult(taskId: string): Promise<Result> {
    const settled = this.settled.get(taskId);
    if (settled?.result) {
      if (settled.once) this.settled.delete(taskId);
      return settled.result;
    }
    return toolResult(() => outcomeOf(this.client, taskId, null));
  }

  async storeTaskResult(taskId: string, _status: 'completed' | 'failed', result: Result): Promise<void> {
    if (this.settled.has(taskId)) this.settle(taskId, result as CallToolResult);
  }

  /** A turn's status is the turn's own: only cancelling it is asked of agentd. */
  async updateTaskStatus(taskId: string, status: Task['status']): Promise<void> {
    if (status === 'cancelled' && !this.settled.has(taskId)) await this.client.cancelTurn({ path: { id: taskId } });
  }

  /** The caller's retained turns, newest first (agentd keeps at most 200 in a listing). */
  async listTasks(cursor?: string): Promise<{ tasks: Task[]; nextCursor?: string }> {
    if (cursor !== undefined) return { tasks: [] };
    return { tasks: (await this.client.listTurns({ query: {} })).data.map(taskOf) };
  }

  private async turnOrNull(turnId: string): Promise<Turn | null> {
    try {
      return await this.client.getTurn({ path: { id: turnId } });
    } catch (error) {
      if (error instanceof AgentdError && (error.status === 404 || error.status === 400)) return null;
      throw error;
    }
  }

  private keep(taskId: string, entry: Settled): void {
    this.settled.set(taskId, entry);
    if (this.settled.size > MAX_SETTLED) this.settled.delete(this.settled.keys().next().value!);
  }
}

function taskOf(turn: Turn): Task {
  return {
    taskId: turn.id,
    status: STATUS_OF[turn.status],
    ttl: null,
    createdAt: turn.createdAt,
    lastUpdatedAt: turn.finishedAt ?? turn.startedAt ?? turn.createdAt,
    pollInterval: POLL_INTERVAL_MS,
    ...(turn.error ? { statusMessage: turn.error } : {}),
  };
}

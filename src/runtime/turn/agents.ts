import { AgentLoopFailure, runAgentLoop, type AgentLoopResult, type ToolCall, type ToolCallResult } from '../../agent/loop.ts';
import type { RetryPolicy } from '../../agent/model-step.ts';
import type { AgentRun } from '../../agent/telemetry.ts';
import type { Completion, ProviderAdapter } from '../../agent/providers/types.ts';
import { parseSpawnAgent, SPAWN_AGENT, spawnAgentSpec } from '../../agent/tools/spawn-agent.ts';
import { ToolError } from '../../agent/tools/types.ts';
import type { CatalogModel } from '../../config/models-file.ts';
import { boundEventText } from '../../domain/event-text.ts';
import { uuidv7 } from '../../domain/ids.ts';
import type { SessionRecord } from '../../domain/session.ts';
import type { EventHub } from '../event-hub.ts';
import type { TurnToolPort } from './tool-port.ts';
import type { AgentParent, ChildAgent, TurnAgents } from './turn-agents.ts';
import { streamEventListener, toolCallPayload, withItemId } from './turn-events.ts';
import { describeFailure } from './turn-outcome.ts';
import type { TurnTools } from './tool-port.ts';

export interface AgentSupervisorDeps {
  hub: EventHub;
  session: SessionRecord;
  turnId: string;
  model: CatalogModel;
  adapter: ProviderAdapter;
  agents: TurnAgents;
  /** the tools of one agent, built like the main agent's, behind that agent's port */
  toolsFor(port: TurnToolPort): Promise<TurnTools>;
  /** a port of the turn carrying the agent's id (its approvals are the turn's human requests) */
  portFor(agentId: string): TurnToolPort;
  instructions(planMode: boolean): string;
  signal: AbortSignal;
  maxSteps: number;
  retry: RetryPolicy;
  /** the turn's budget, asked before each model request of every agent */
  beforeRequest?: () => Promise<Completion | null>;
}

/**
 * Runs the child agents of one turn (CONTRACT.md §13). Each child is an agent loop of its own,
 * inside the turn: on the session's model, with its tools built like the main agent's (the same
 * policy, approvals and executor, through a port with its agent id), the turn's abort signal, and
 * the prompt as its whole context. Its final text is the spawn_agent call's output.
 */
export class AgentSupervisor {
  constructor(private readonly deps: AgentSupervisorDeps) {}

  /** spawn_agent calls of one step run side by side (the loop bounds how many at a time). */
  readonly runsConcurrently = (call: ToolCall): boolean => call.name === SPAWN_AGENT;

  /** An agent's tools with spawn_agent added; `self` is null for the main agent. */
  withSpawnAgent(tools: TurnTools, self: AgentParent): TurnTools {
    return {
      specs: () => [...tools.specs(), spawnAgentSpec],
      planMode: () => tools.planMode(),
      execute: (call) => (call.name === SPAWN_AGENT ? this.spawn(call, self) : tools.execute(call)),
    };
  }

  private async spawn(call: ToolCall, parent: AgentParent): Promise<ToolCallResult> {
    const { hub, session, turnId, agents } = this.deps;
    hub.emit('tool.updated', session.id, turnId, toolCallPayload(call.callId, call.name, call.kind, call.input, call.itemId));
    const finish = (output: string): ToolCallResult => {
      const bounded = boundEventText(output);
      hub.emit('tool.finished', session.id, turnId, { callId: call.callId, kind: call.kind, output: bounded.text, async: false, truncated: bounded.truncated, imageCount: 0, ...withItemId(call.itemId) });
      return { output, truncated: false };
    };
    let args: { label: string; prompt: string };
    try {
      args = parseSpawnAgent(call.input);
    } catch (error) {
      if (error instanceof ToolError) return finish(`Invalid call to ${SPAWN_AGENT}: ${error.message}`);
      throw error;
    }
    const child = agents.admit(uuidv7(), parent, args.label, session.model);
    if (typeof child === 'string') return finish(child);
    hub.emit('agent.started', session.id, turnId, { agentId: child.id, parentId: child.parentId, label: child.label, model: child.model });
    return finish(await this.run(child, args.prompt));
  }

  /** The child's loop to its end; a cancel of the turn is rethrown, any other failure is the parent's output. */
  private async run(child: ChildAgent, prompt: string): Promise<string> {
    const { hub, session, turnId, agents, model, signal } = this.deps;
    const startedMs = performance.now();
    const ended = (status: 'completed' | 'failed' | 'cancelled', run: Omit<AgentRun, 'durationMs'>) => {
      agents.finish(child, status, { ...run, durationMs: performance.now() - startedMs });
      hub.emit('agent.finished', session.id, turnId, { agentId: child.id, status });
    };
    let result: AgentLoopResult;
    try {
      const tools = this.withSpawnAgent(await this.deps.toolsFor(this.askingAs(child)), child);
      result = await runAgentLoop({
        adapter: this.deps.adapter,
        transportModel: model.transportModel,
        effort: session.effort === 'none' ? null : session.effort,
        maxOutputTokens: model.maxOutputTokens ?? undefined,
        instructions: () => this.deps.instructions(tools.planMode()),
        context: [],
        userItem: { type: 'message', role: 'user', content: [{ type: 'input_text', text: prompt }] },
        tools: () => tools.specs(),
        executeTool: (call) => this.recorded(child, call, tools),
        listener: {
          ...streamEventListener(hub, session.id, turnId),
          textDelta: (text) => {
            const bounded = boundEventText(text);
            hub.emit('agent.output', session.id, turnId, { agentId: child.id, output: bounded.text, truncated: bounded.truncated });
          },
          reasoningDelta: () => {},
        },
        signal,
        maxSteps: this.deps.maxSteps,
        retry: this.deps.retry,
        runsConcurrently: this.runsConcurrently,
        beforeRequest: this.deps.beforeRequest,
        stepCompleted: (text, calls) => agents.addStep(child, 'completed', calls > 0 ? `model step (${calls} tool call${calls === 1 ? '' : 's'})` : 'model step', text),
      });
    } catch (error) {
      const progress = error instanceof AgentLoopFailure ? error.progress : null;
      const run = { reportedModel: progress?.reportedModel ?? null, usage: progress?.usage ?? null, apiDurationMs: progress?.apiDurationMs ?? 0, stopReason: progress?.stopReason ?? null, providerTurns: progress?.completedSteps ?? 0 };
      if (signal.aborted) {
        ended('cancelled', run);
        throw error;
      }
      const reason = describeFailure(error instanceof AgentLoopFailure ? error.cause : error);
      agents.addStep(child, 'failed', 'agent failed', reason);
      ended('failed', run);
      return `The agent "${child.path}" failed: ${reason}`;
    }
    ended('completed', { reportedModel: result.reportedModel, usage: result.usage, apiDurationMs: result.apiDurationMs, stopReason: result.stopReason, providerTurns: result.steps });
    return result.assistantText ?? `The agent "${child.path}" finished without an answer.`;
  }

  /** The child's port: its human requests are the turn's, and each says which agent asks. */
  private askingAs(child: ChildAgent): TurnToolPort {
    const port = this.deps.portFor(child.id);
    return { ...port, askHuman: (kind, prompt, options) => port.askHuman(kind, `Agent "${child.path}" asks:\n${prompt}`, options) };
  }

  /** A child's tool call as a step of its view: running, then completed with its output, or failed. */
  private async recorded(child: ChildAgent, call: ToolCall, tools: TurnTools): Promise<ToolCallResult> {
    const step = this.deps.agents.addStep(child, 'running', call.name, call.input);
    try {
      const result = await tools.execute(call);
      this.deps.agents.settleStep(step, 'completed', result.output);
      return result;
    } catch (error) {
      this.deps.agents.settleStep(step, 'failed', this.deps.signal.aborted ? 'cancelled' : describeFailure(error));
      throw error;
    }
  }
}

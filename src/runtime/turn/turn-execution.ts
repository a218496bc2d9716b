/**
 * The agent loop of a started turn, assembled: its model (metered, instrumented, confirmed by the
 * turn's claim), its tools and child agents, its instructions, its budget, its context, its change
 * receipt and its attachment files; then the loop runs (or the `/compact` or `/clear` command the
 * turn is) and how it ended is answered, nothing of it stored (turn-ends.ts stores it).
 */
import type { Logger } from 'pino';
import { TurnReceipt } from './turn-receipt.ts';
import type { WorkspaceWatches } from '../../workspace/workspace-watches.ts';
import { nowIso } from '../../domain/ids.ts';
import { userCommandOf } from '../../agent/user-command.ts';
import { runAgentLoop, type ToolCall, type ToolCallResult } from '../../agent/loop.ts';
import { DEFAULT_RETRY } from '../../agent/model-step.ts';
import { codingInstructions } from '../../agent/instructions.ts';
import type { ProviderAdapter } from '../../agent/providers/types.ts';
import { findModel } from '../../config/catalog.ts';
import type { CatalogModel } from '../../config/models-file.ts';
import { updateSessionFields } from '../../store/sessions.ts';
import { costOf } from '../../agent/telemetry.ts';
import { BUDGET_OPTIONS, meteredAdapter, TurnBudget } from './turn-budget.ts';
import type { TurnText } from '../../domain/turn.ts';
import { userMessageItem, writeTurnFiles } from '../../workspace/attachments.ts';
import type { WorkspaceCommands } from '../../workspace/workspace-commands.ts';
import type { ActiveTurn } from './active-turns.ts';
import type { ModelContextCache } from '../context/model-context-cache.ts';
import type { Boundary } from '../boundary.ts';
import { prepareTurnContext } from '../context/compaction.ts';
import { readProjectInstructions, withProjectInstructions } from '../context/project-instructions.ts';
import { ExecutorError, type ToolExecutor } from '../../exec/executor.ts';
import type { WorkspaceView } from '../../exec/boundary-tools.ts';
import type { EventHub } from '../event-hub.ts';
import type { TurnToolPort, TurnToolsFactory } from './tool-port.ts';
import { streamEventListener } from './turn-events.ts';
import type { TurnOutcome } from './turn-outcome.ts';
import type { RuntimeTelemetry } from '../../telemetry/runtime-telemetry.ts';
import { instrumentedAdapter } from '../../telemetry/model-requests.ts';
import type { ResumePlan, TurnClaim } from './turn-claim.ts';

export const MAX_AGENT_STEPS = 50;

/** What the model is told of a call that may have run on an instance that then died (CONTRACT.md §18). */
const INTERRUPTED_TOOL_OUTPUT =
  'interrupted: the agentd instance running this call stopped before its result was recorded. The call was not run again; its outcome is unknown (it may or may not have taken effect). Check before repeating it.';

export interface TurnExecutionDeps {
  boundary: Boundary;
  hub: EventHub;
  /** the boundary's model contexts: read at a turn's start */
  contexts: ModelContextCache;
  /** where attachment clean-up runs: where the boundary's tools run */
  commands: WorkspaceCommands;
  adapterFor(model: CatalogModel): Promise<ProviderAdapter>;
  toolsFor: TurnToolsFactory;
  logger: Logger;
  telemetry: RuntimeTelemetry;
  /** the session directories watched for change receipts */
  watches: WorkspaceWatches;
  /** the port through which one agent's tools ask a human (TurnRunner.portFor) */
  portFor(turn: ActiveTurn, agentId: string | null): TurnToolPort;
  /** the turn changed its session as a PATCH would: `session.updated` says so */
  announceSession(sessionId: string): Promise<void>;
}

export class TurnExecution {
  constructor(private readonly deps: TurnExecutionDeps) {}

  /** The agent loop of a started turn (or the `/compact` or `/clear` command it is). */
  async execute(turn: ActiveTurn, claim: TurnClaim, text: TurnText, resume?: ResumePlan): Promise<TurnOutcome> {
    const { boundary, hub } = this.deps;
    const { session, record } = turn;
    const startedMs = performance.now();
    const model = findModel(boundary.catalog, session.model);
    if (!model) throw new Error(`the session's model "${session.model}" is no longer in the catalog`);
    const files = await writeTurnFiles(session.cwd, record.id, turn.attachments.files, this.deps.commands);
    const receipt = new TurnReceipt(this.deps.watches, session.cwd);
    const earlier = resume?.steps.findLast((step) => step.receipt !== undefined)?.receipt;
    if (earlier !== undefined) receipt.continueFrom(earlier);
    turn.receipt = receipt;
    try {
      // The model sees the workspace as the tools do: guest paths in a sandbox.
      const userItem = userMessageItem(text.input, turn.attachments, files.paths.map(boundary.tools.modelPath));
      const budget = this.budgetOf(turn, model, resume);
      const adapter = claim.confirming(meteredAdapter(instrumentedAdapter(await this.deps.adapterFor(model), model, this.deps.telemetry), (usage) => budget.spend(usage)));
      const beforeRequest = () => budget.beforeRequest();
      const view = boundary.tools.viewOf(session.cwd);
      // read again each turn, so an edit of AGENTS.md reaches the next turn; never stored in history
      const project = boundary.projectInstructions ? await this.projectInstructions(boundary.tools.executor, view, record.id) : null;
      const instructionsFor = (planMode: boolean) => withProjectInstructions(codingInstructions({ cwd: view.cwd, planMode }), project);
      const retry = { ...DEFAULT_RETRY, stallTimeoutMs: boundary.limits.modelStallTimeoutMs };
      const toolsOf = async (port: TurnToolPort) => claim.confirmingTools(await this.deps.toolsFor({ boundary, hub, session, port, receipt }));
      const { AgentSupervisor } = await agentsModule();
      const agents = new AgentSupervisor({
        hub, session, turnId: record.id, model, adapter, agents: turn.agents, signal: turn.abort.signal, maxSteps: MAX_AGENT_STEPS, retry,
        toolsFor: toolsOf,
        portFor: (agentId) => this.deps.portFor(turn, agentId),
        instructions: instructionsFor,
        beforeRequest,
      });
      const tools = agents.withSpawnAgent(await toolsOf(this.deps.portFor(turn, null)), null);
      hub.emit('agent.turn.started', session.id, record.id, {});
      const instructions = () => instructionsFor(tools.planMode());
      // `/compact` and `/clear` end here; a context too large for the window is compacted first.
      const prepared = await prepareTurnContext({ db: boundary.db, contexts: this.deps.contexts, hub, adapter, retry }, turn, { model, instructions: instructions(), userItem, tools: tools.specs() });
      const result =
        prepared.command?.result ??
        (await runAgentLoop({
          adapter,
          transportModel: model.transportModel,
          effort: session.effort === 'none' ? null : session.effort,
          maxOutputTokens: model.maxOutputTokens ?? undefined,
          instructions,
          context: prepared.context,
          userItem,
          tools: () => tools.specs(),
          executeTool: (call) => (resume?.interrupted.has(call.callId) ? interruptedCall(call) : tools.execute(call)),
          listener: streamEventListener(hub, session.id, record.id),
          signal: turn.abort.signal,
          maxSteps: MAX_AGENT_STEPS,
          retry,
          runsConcurrently: agents.runsConcurrently,
          resumeFrom: resume?.steps,
          persist: claim.journal(resume?.steps.length ?? 0),
          steering: turn.steering,
          beforeRequest,
          outputSchema: turn.outputSchema ?? undefined,
          userCommand: userCommandOf(text) ?? undefined,
        }));
      return { kind: 'completed', result, model, durationMs: performance.now() - startedMs, effect: prepared.command?.effect ?? 'append' };
    } finally {
      await receipt.release();
      await files.cleanup().catch(() => {});
    }
  }

  /**
   * The project's AGENTS.md for this turn. A sandbox that cannot answer (not started, crashed)
   * leaves the turn without them rather than failing it: the turn goes on, and its tool calls
   * report the sandbox's failure as they would without instructions.
   */
  private async projectInstructions(executor: ToolExecutor, view: WorkspaceView, turnId: string): Promise<string | null> {
    try {
      return await readProjectInstructions(executor, view);
    } catch (error) {
      const reason = error instanceof ExecutorError ? error.reason : 'unknown';
      this.deps.logger.warn({ turnId, reason }, 'could not read the project instructions; the turn goes on without them');
      return null;
    }
  }

  /**
   * What the turn may spend: its budget requests are the main agent's, whichever agent reached the
   * limit. A resumed turn has spent what its recorded responses spent (the session's
   * counters take them only at the turn's end), so it asks as its former owner would have, with
   * the same prompt: a budget request the former owner published is adopted, not asked again.
   */
  private budgetOf(turn: ActiveTurn, model: CatalogModel, resume?: ResumePlan): TurnBudget {
    const { session } = turn;
    const { boundary } = this.deps;
    const budget = new TurnBudget(session, (usage) => costOf(model, usage), {
      ask: (prompt, check) => this.deps.portFor(turn, null).askHuman('budget', prompt, BUDGET_OPTIONS, check),
      raised: async (budget) => {
        await updateSessionFields(boundary.db, boundary.id, session.id, { budget, updatedAt: nowIso() });
        await this.deps.announceSession(session.id);
      },
    });
    for (const step of resume?.steps ?? []) if (step.modelStep?.usage) budget.spend(step.modelStep.usage);
    return budget;
  }
}

function interruptedCall(_call: ToolCall): Promise<ToolCallResult> {
  return Promise.resolve({ output: INTERRUPTED_TOOL_OUTPUT, truncated: false });
}

let loadingAgents: Promise<typeof import('./agents.ts')> | null = null;

/**
 * Child agents (spawn_agent) load with the first turn, like the tools themselves. The module's
 * promise is kept: an `import()` of a loaded module still walks the ESM loader on every turn.
 */
function agentsModule(): Promise<typeof import('./agents.ts')> {
  loadingAgents ??= import('./agents.ts');
  return loadingAgents;
}

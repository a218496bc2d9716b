import { MAX_WATCHED_ENTRIES, TurnReceipt } from './turn-receipt.ts';
import { WorkspaceWatches } from '../../workspace/workspace-watches.ts';
import { PROCESS_WATCH_BUDGET, WatchBudget } from '../../workspace/watch-budget.ts';
import { DEFAULT_STORE_BYTES } from '../../workspace/content-store.ts';
import { revertBytesKept, storeTurnRevert } from '../../store/turn-reverts.ts';
import type { Logger } from 'pino';
import { nowIso } from '../../domain/ids.ts';
import { applyTurnTransition, canApply, type TurnStep, type TurnTransition } from '../../domain/turn-lifecycle.ts';
import { runAgentLoop, type RecordedStep, type ToolCall, type ToolCallResult } from '../../agent/loop.ts';
import { DEFAULT_RETRY } from '../../agent/model-step.ts';
import { codingInstructions } from '../../agent/instructions.ts';
import type { ProviderAdapter } from '../../agent/providers/types.ts';
import { findModel } from '../../config/catalog.ts';
import type { CatalogModel } from '../../config/models-file.ts';
import { finalizeTurn } from '../../store/finalize.ts';
import { storeTerminalTurn, storeTurnEnd } from '../../store/eventual-turn-write.ts';
import { readTurnText, updateTurn } from '../../store/turns.ts';
import { StaleTurnWrite } from '../../store/turn-fence.ts';
import type { OutboxWrite } from '../../store/webhook-outbox.ts';
import type { BoundaryWebhooks } from '../webhooks/webhook-outbox.ts';
import { findSession, updateSessionFields } from '../../store/sessions.ts';
import { costOf } from '../../agent/telemetry.ts';
import { BUDGET_OPTIONS, meteredAdapter, TurnBudget } from './turn-budget.ts';
import { toSessionDto } from '../../api/dto.ts';
import { type TurnRecord, type TurnText } from '../../domain/turn.ts';
import { userMessageItem, writeTurnFiles } from '../../workspace/attachments.ts';
import type { WorkspaceCommands } from '../../workspace/workspace-commands.ts';
import type { ActiveTurn, ActiveTurns } from './active-turns.ts';
import type { ModelContextCache } from '../context/model-context-cache.ts';
import type { Boundary } from '../boundary.ts';
import { prepareTurnContext } from '../context/compaction.ts';
import { readProjectInstructions, withProjectInstructions } from '../context/project-instructions.ts';
import { ExecutorError, type ToolExecutor } from '../../exec/executor.ts';
import type { WorkspaceView } from '../../exec/boundary-tools.ts';
import type { EventHub } from '../event-hub.ts';
import type { RequestBroker } from './requests.ts';
import type { Job, Scheduler } from './scheduler.ts';
import { UNTITLED } from '../session/sessions.ts';
import type { RepositorySetups } from '../session/setup.ts';
import { createToolPort, type TurnToolPort, type TurnTools, type TurnToolsFactory } from './tool-port.ts';
import { fencedAdapter, fencedTools } from './lease-fence.ts';
import { streamEventListener } from './turn-events.ts';
import { agentFinishedPayload, endingOf, failureKind, failureOutcome, TurnCancelled, withReceipt, withUnshownSteers, type TurnOutcome } from './turn-outcome.ts';
import { DEFAULT_BOUNDARY_ID } from '../boundary.ts';
import { TurnHandedOver, type TurnLeases } from './turn-leases.ts';
import { appendTurnStep } from '../../store/turn-steps.ts';
import { NO_TELEMETRY, type RuntimeTelemetry } from '../../telemetry/runtime-telemetry.ts';
import { instrumentedAdapter } from '../../telemetry/model-requests.ts';
import { spanNames, turnAttributes, type TraceParent } from '../../telemetry/tracing.ts';

export const MAX_AGENT_STEPS = 50;
export const HISTORY_NOT_STORED = 'internal_error: the history of this turn could not be stored';

export interface TurnRunnerDeps {
  boundary: Boundary;
  hub: EventHub;
  active: ActiveTurns;
  /** the boundary's model contexts: read at a turn's start, extended by its end */
  contexts: ModelContextCache;
  /** shared by every boundary of the process: it holds the global running and queued limits */
  scheduler: Scheduler;
  requests: RequestBroker;
  setups: RepositorySetups;
  /** where attachment clean-up runs: where the boundary's tools run */
  commands: WorkspaceCommands;
  adapterFor(model: CatalogModel): Promise<ProviderAdapter>;
  toolsFor: TurnToolsFactory;
  logger: Logger;
  /** metrics and traces of turns; nothing is recorded without it */
  telemetry?: RuntimeTelemetry;
  /** --cluster: the leases on this instance's turns, let go as each ends */
  leases?: TurnLeases | null;
  /** --webhook-url: each turn's end is announced in the transaction that stores it */
  webhooks?: BoundaryWebhooks | null;
  /** the session directories watched for change receipts; the runner's own when not given */
  watches?: WorkspaceWatches;
}

/**
 * How a turn taken over from another instance goes on (turn-resume.ts): after the steps its former
 * owners recorded, with the calls whose result was not recorded given to the model as interrupted.
 */
export interface ResumePlan {
  steps: RecordedStep[];
  /** calls of the newest recorded response that may have run: not run again */
  interrupted: ReadonlySet<string>;
}

/** What the model is told of a call that may have run on an instance that then died (CONTRACT.md §18). */
const INTERRUPTED_TOOL_OUTPUT =
  'interrupted: the agentd instance running this call stopped before its result was recorded. The call was not run again; its outcome is unknown (it may or may not have taken effect). Check before repeating it.';

interface SchedulerSlot {
  job: Job;
  /** the scheduler admitted the turn: it holds a running slot until it ends */
  admitted: boolean;
  /** for agentd_turn_duration_seconds: from the stored `queued` row to the terminal state */
  enqueuedMs: number;
  /** the span of the request that submitted the turn: the turn's span is its child */
  traceParent: TraceParent | undefined;
  /** a turn taken over from another instance: where it goes on from */
  resume?: ResumePlan;
  /** it waited in this instance's queue: with --cluster an older turn queued elsewhere goes first (startOlderFirst) */
  waited?: boolean;
}

/** --cluster: takes an older turn queued on another instance than `turn` and makes it ready to run here, or null. */
export type OlderQueuedTurn = (turn: ActiveTurn) => Promise<{ turn: ActiveTurn; plan: ResumePlan } | null>;

/**
 * Owns every turn of a boundary from the moment it is durably queued to its terminal write: it
 * queues it with the scheduler, runs it when admitted, cancels it, and is the only writer of its
 * status, each change a transition of domain/turn-lifecycle.ts whose event it publishes.
 */
export class TurnRunner {
  private readonly slots = new Map<ActiveTurn, SchedulerSlot>();
  /** --cluster: each turn's chain of stored states short of the end (storeShown) */
  private readonly rowWrites = new WeakMap<ActiveTurn, Promise<void>>();
  private readonly telemetry: RuntimeTelemetry;
  /** the tenant label of turn and token metrics: none in single-user mode */
  private readonly tenant: string | undefined;

  private readonly watches: WorkspaceWatches;
  private olderQueued: OlderQueuedTurn | null = null;

  constructor(private readonly deps: TurnRunnerDeps) {
    const keptContentBytes = deps.boundary.limits.revertHistory > 0 ? DEFAULT_STORE_BYTES : 0;
    const budget = new WatchBudget(deps.boundary.limits.maxWatchesPerTenant, PROCESS_WATCH_BUDGET);
    this.watches = deps.watches ?? new WorkspaceWatches({ maxEntries: MAX_WATCHED_ENTRIES, keptContentBytes, budget });
    this.telemetry = deps.telemetry ?? NO_TELEMETRY;
    this.tenant = deps.boundary.id === DEFAULT_BOUNDARY_ID ? undefined : deps.boundary.id;
  }

  /**
   * A turn whose `queued` row is stored: published, then admitted or, when a queue is full, failed.
   * The answer is the record to show its submitter: queued, or failed.
   */
  async enqueue(turn: ActiveTurn, traceParent?: TraceParent, clusterQueueFull = false): Promise<TurnRecord> {
    const slot: SchedulerSlot = { job: { tenantId: this.deps.boundary.id, start: () => this.start(turn, slot) }, admitted: false, enqueuedMs: performance.now(), traceParent };
    this.slots.set(turn, slot);
    this.deps.hub.emit('turn.queued', turn.session.id, turn.record.id, {});
    // --cluster: the boundary's queue counted in the database was full (TurnLeases.admit)
    const tenantQueue = this.deps.boundary.id !== DEFAULT_BOUNDARY_ID;
    const admission = clusterQueueFull ? (tenantQueue ? 'tenant_queue_full' : 'queue_full') : this.deps.scheduler.enqueue(slot.job);
    if (admission === 'queued' && !slot.admitted) slot.waited = true;
    // An admitted turn changes its record only after an await of its own: this is still `queued`.
    if (admission === 'queued') return { ...turn.record };
    const error = admission === 'queue_full' ? 'turn_queue_full: the server queue is full' : 'tenant_turn_queue_full: the tenant queue is full';
    await this.endWithoutRunning(turn, { kind: 'fail', at: nowIso(), error });
    return { ...turn.record };
  }

  /**
   * A turn this instance took over (its `attempt` raised, its lease held here): `turn.resumed` is
   * published and it waits for a running slot like any turn, then goes on from `plan`. A turn
   * that was still queued starts as usual.
   */
  resume(turn: ActiveTurn, plan: ResumePlan): void {
    const slot = this.resumedSlot(turn, plan);
    const admission = this.deps.scheduler.enqueue(slot.job);
    if (admission === 'queued') return;
    const error = admission === 'queue_full' ? 'turn_queue_full: the server queue is full' : 'tenant_turn_queue_full: the tenant queue is full';
    void this.endWithoutRunning(turn, { kind: 'fail', at: nowIso(), error }).catch((failure: unknown) => this.deps.logger.error({ err: failure, turnId: turn.record.id }, 'could not end a resumed turn'));
  }

  private resumedSlot(turn: ActiveTurn, plan: ResumePlan): SchedulerSlot {
    const slot: SchedulerSlot = { job: { tenantId: this.deps.boundary.id, start: () => this.start(turn, slot) }, admitted: false, enqueuedMs: performance.now(), traceParent: undefined, resume: plan };
    this.slots.set(turn, slot);
    this.deps.hub.emit('turn.resumed', turn.session.id, turn.record.id, { attempt: turn.record.attempt, interruptedTools: [...plan.interrupted] });
    return slot;
  }

  /** --cluster: how a turn that waited here finds an older one queued on another instance (startOlderFirst). */
  startOlderFirstWith(olderQueued: OlderQueuedTurn): void {
    this.olderQueued = olderQueued;
  }

  /** Resolves once the turn is cancelled (or ended otherwise first) and durable. */
  async cancel(turn: ActiveTurn): Promise<void> {
    const slot = this.slots.get(turn);
    if (slot && !slot.admitted && this.deps.scheduler.remove(slot.job)) {
      await this.endWithoutRunning(turn, { kind: 'cancel', at: nowIso(), error: null });
      return;
    }
    turn.abort.abort(new TurnCancelled());
    await turn.finished;
  }

  /** The port through which one agent's tools ask a human; child agents get their own agent id. */
  portFor(turn: ActiveTurn, agentId: string | null): TurnToolPort {
    return createToolPort({
      sessionId: turn.session.id,
      turnId: turn.record.id,
      agentId,
      signal: turn.abort.signal,
      requests: this.deps.requests,
      report: {
        waiting: () => this.report(turn, { kind: 'wait' }),
        resumed: () => (this.deps.requests.hasPending(turn.record.id) ? Promise.resolve() : this.report(turn, { kind: 'resume' })),
      },
    });
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

  private start(turn: ActiveTurn, slot: SchedulerSlot): void {
    slot.admitted = true;
    if (slot.waited && this.olderQueued) return void this.startOlderFirst(turn, slot);
    this.traced(turn, slot).catch((error: unknown) => this.deps.logger.error({ err: error, turnId: turn.record.id }, 'turn runner failed'));
  }

  /**
   * --cluster, first come first served across instances: the slot a turn that waited here was
   * given goes to an older turn queued on another instance, if there is one (taken under a new
   * attempt), and this turn waits again at the head of the queue. A turn cancelled or stopped
   * meanwhile runs as usual (its run ends it at once), and the older one queues here as a turn taken over.
   */
  private async startOlderFirst(turn: ActiveTurn, slot: SchedulerSlot): Promise<void> {
    const older = await this.olderQueued!(turn).catch((error: unknown) => {
      this.deps.logger.warn({ err: error, turnId: turn.record.id }, 'could not look for an older turn queued on another instance');
      return null;
    });
    if (older && !turn.abort.signal.aborted) {
      slot.admitted = false;
      this.deps.scheduler.handOff(slot.job, this.resumedSlot(older.turn, older.plan).job);
      return;
    }
    if (older) this.resume(older.turn, older.plan);
    this.traced(turn, slot).catch((error: unknown) => this.deps.logger.error({ err: error, turnId: turn.record.id }, 'turn runner failed'));
  }

  /** The run inside the turn's span, from admission to the terminal state: model and tool spans are its children. */
  private traced(turn: ActiveTurn, slot: SchedulerSlot): Promise<void> {
    const { tracing } = this.telemetry;
    if (!tracing.enabled) return this.run(turn, slot.resume);
    const attributes = turnAttributes(turn.session.id, turn.record.id, this.tenant);
    return tracing.withSpan(
      spanNames.turn,
      attributes,
      async (span) => {
        await this.run(turn, slot.resume);
        span.setAttributes({ 'agentd.turn.status': turn.record.status });
      },
      { parent: slot.traceParent },
    );
  }

  private async run(turn: ActiveTurn, resume?: ResumePlan): Promise<void> {
    const { signal } = turn.abort;
    // The turn stays `queued` (no turn.started) until the session's repository setup has finished,
    // although it already holds a running slot of the scheduler.
    try {
      await this.deps.setups.ready(turn.session, signal);
    } catch (error) {
      await this.finish(turn, failureOutcome(error, signal), await this.wholeText(turn));
      return;
    }
    let text: TurnText | null = null;
    let outcome: TurnOutcome;
    const startedMs = performance.now();
    try {
      // a resumed turn that had started goes on as it was: running, or waiting for its answer
      if (turn.record.status === 'queued') {
        this.advance(turn, { kind: 'start', at: nowIso() });
        // --cluster: another instance may have taken the queued turn; only a stored `running` makes it ours to run
        if (this.deps.leases) await this.rowWrites.get(turn);
        signal.throwIfAborted();
      }
      text = await this.wholeText(turn);
      outcome = await this.execute(turn, text, resume);
    } catch (error) {
      outcome = failureOutcome(error, signal, performance.now() - startedMs);
      if (outcome.kind === 'failed') this.deps.logger.warn({ turnId: turn.record.id, failure: failureKind(outcome.error) }, 'turn failed');
    }
    await this.finish(turn, outcome, text ?? (await this.wholeText(turn)));
  }

  /** The agent loop of a started turn (or the `/compact` or `/clear` command it is). */
  private async execute(turn: ActiveTurn, text: TurnText, resume?: ResumePlan): Promise<TurnOutcome> {
    const { boundary, hub } = this.deps;
    const { session, record } = turn;
    const startedMs = performance.now();
    const model = findModel(boundary.catalog, session.model);
    if (!model) throw new Error(`the session's model "${session.model}" is no longer in the catalog`);
    const files = await writeTurnFiles(session.cwd, record.id, turn.attachments.files, this.deps.commands);
    const receipt = new TurnReceipt(this.watches, session.cwd);
    const earlier = resume?.steps.findLast((step) => step.receipt !== undefined)?.receipt;
    if (earlier !== undefined) receipt.continueFrom(earlier);
    turn.receipt = receipt;
    try {
      // The model sees the workspace as the tools do: guest paths in a sandbox.
      const userItem = userMessageItem(text.input, turn.attachments, files.paths.map(boundary.tools.modelPath));
      const budget = this.budgetOf(turn, model, resume);
      const leases = this.deps.leases;
      const confirm = leases ? () => leases.confirm(record.id) : null;
      const metered = meteredAdapter(instrumentedAdapter(await this.deps.adapterFor(model), model, this.telemetry), (usage) => budget.spend(usage));
      const adapter = confirm ? fencedAdapter(metered, confirm) : metered;
      const fenced = async (made: Promise<TurnTools>) => (confirm ? fencedTools(await made, confirm) : made);
      const beforeRequest = () => budget.beforeRequest();
      const view = boundary.tools.viewOf(session.cwd);
      // read again each turn, so an edit of AGENTS.md reaches the next turn; never stored in history
      const project = boundary.projectInstructions ? await this.projectInstructions(boundary.tools.executor, view, record.id) : null;
      const instructionsFor = (planMode: boolean) => withProjectInstructions(codingInstructions({ cwd: view.cwd, planMode }), project);
      const retry = { ...DEFAULT_RETRY, stallTimeoutMs: boundary.limits.modelStallTimeoutMs };
      const { AgentSupervisor } = await agentsModule();
      const agents = new AgentSupervisor({
        hub, session, turnId: record.id, model, adapter, agents: turn.agents, signal: turn.abort.signal, maxSteps: MAX_AGENT_STEPS, retry,
        toolsFor: (port) => fenced(this.deps.toolsFor({ boundary, hub, session, port, receipt })),
        portFor: (agentId) => this.portFor(turn, agentId),
        instructions: instructionsFor,
        beforeRequest,
      });
      const tools = agents.withSpawnAgent(await fenced(this.deps.toolsFor({ boundary, hub, session, port: this.portFor(turn, null), receipt })), null);
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
          persist: this.deps.leases ? this.journal(turn, resume?.steps.length ?? 0) : undefined,
          steering: turn.steering,
          beforeRequest,
          outputSchema: turn.outputSchema ?? undefined,
        }));
      return { kind: 'completed', result, model, durationMs: performance.now() - startedMs, effect: prepared.command?.effect ?? 'append' };
    } finally {
      await receipt.release();
      await files.cleanup().catch(() => {});
    }
  }

  /** Lets go of the watched session directories (the boundary is closing). */
  close(): void {
    this.watches.close();
  }

  /**
   * --cluster: each step of the turn is stored as it is made, under the turn's fencing number, so
   * another instance can resume the turn from it (CONTRACT.md §18). A refused write means another
   * instance took the turn over: the run stops.
   */
  private journal(turn: ActiveTurn, recorded: number): (step: RecordedStep) => Promise<void> {
    let seq = recorded;
    return async (step) => {
      try {
        const receipt = step.modelStep === null ? turn.receipt?.snapshot() : undefined;
        await appendTurnStep(this.deps.boundary.db, turn.record.id, turn.record.attempt, { seq, ...step, ...(receipt === undefined ? {} : { receipt }) });
        seq++;
      } catch (error) {
        if (error instanceof StaleTurnWrite) turn.abort.abort(error);
        throw error;
      }
    };
  }

  /**
   * What the turn may spend: its budget requests are the main agent's, whichever agent reached the
   * limit. A resumed turn has spent what its recorded responses spent (the session's
   * counters take them only at the turn's end), so it asks as its former owner would have, with
   * the same prompt: a budget request the former owner published is adopted, not asked again.
   */
  private budgetOf(turn: ActiveTurn, model: CatalogModel, resume?: ResumePlan): TurnBudget {
    const { session } = turn;
    const budget = new TurnBudget(session, (usage) => costOf(model, usage), {
      ask: (prompt, check) => this.portFor(turn, null).askHuman('budget', prompt, BUDGET_OPTIONS, check),
      raised: async (budget) => {
        await updateSessionFields(this.deps.boundary.db, this.deps.boundary.id, session.id, { budget, updatedAt: nowIso() });
        await this.announceSession(session.id);
      },
    });
    for (const step of resume?.steps ?? []) if (step.modelStep?.usage) budget.spend(step.modelStep.usage);
    return budget;
  }

  /** The turn's whole text: the in-memory record holds it unless it was bounded, then the row does. */
  private async wholeText(turn: ActiveTurn): Promise<TurnText> {
    const { record } = turn;
    const bounded = { input: record.input, userText: record.userText };
    if (!record.inputTruncated) return bounded;
    return (await readTurnText(this.deps.boundary.db, record.id).catch(() => null)) ?? bounded;
  }

  /** running ↔ waiting_for_input; a turn already there, or already ending, stays as it is. */
  private async report(turn: ActiveTurn, transition: { kind: 'wait' | 'resume' }): Promise<void> {
    if (!canApply(turn.record.status, transition.kind)) return;
    this.advance(turn, transition);
    // --cluster: a tool approved goes on only once the row says running again, so that whoever
    // takes the turn over knows from a row still waiting that the tool never started
    if (transition.kind === 'resume') await this.rowWrites.get(turn);
  }

  /**
   * A transition short of the end (start, wait, resume): the live record changes and its event is
   * published. Without --cluster the row keeps `queued` until the terminal write, which carries
   * startedAt: nothing in this process reads an active turn's row for its status (GET, list and
   * idempotency answer it from memory, TurnService), and start-up recovery fails queued, running
   * and waiting rows alike as `interrupted` (CONTRACT.md §5). With --cluster other instances read
   * the row, so it is stored too (storeShown).
   */
  private advance(turn: ActiveTurn, transition: TurnTransition<NonNullable<TurnRecord['output']>>): void {
    const step = applyTurnTransition(turn.record, transition);
    turn.record = step.record;
    if (step.event) this.deps.hub.emit(step.event.type, turn.session.id, step.record.id, step.event.data);
    if (this.deps.leases) this.storeShown(turn, step.record);
  }

  /**
   * --cluster: other instances answer the turn from its row, so each state short of the end is
   * stored too, in order, under the turn's fencing number; the terminal write waits for them
   * (rowWritten). A refused write means another instance took the turn over: the run stops.
   */
  private storeShown(turn: ActiveTurn, record: TurnRecord): void {
    const previous = this.rowWrites.get(turn) ?? Promise.resolve();
    const write = previous.then(() =>
      updateTurn(this.deps.boundary.db, record).catch((error: unknown) => {
        if (error instanceof StaleTurnWrite) turn.abort.abort(error);
        else this.deps.logger.warn({ err: error, turnId: record.id }, 'could not store the turn\'s status; its end is stored all the same');
      }),
    );
    this.rowWrites.set(turn, write);
  }

  /** The states stored by storeShown have landed (or failed): the terminal write may follow. */
  private async rowWritten(turn: ActiveTurn): Promise<void> {
    await this.rowWrites.get(turn);
    this.rowWrites.delete(turn);
  }

  /**
   * Ends an executed turn in one transaction: its history entry, its terminal state and the
   * session's usage, title and updatedAt. When that cannot be stored, the turn fails saying so and
   * keeps its output (the bounded answer), stored with the failure when that much can be.
   */
  private async finish(turn: ActiveTurn, outcome: TurnOutcome, text: TurnText): Promise<void> {
    if (turn.abort.signal.reason instanceof TurnHandedOver) return this.letGoOf(turn, 'turn handed over to another instance');
    const { boundary, hub, logger } = this.deps;
    const { session } = turn;
    const at = nowIso();
    outcome = withUnshownSteers(outcome, turn.steering.close());
    const ending = withReceipt(endingOf(outcome, turn.record.id, text, at, findModel(boundary.catalog, session.model) ?? null, turn.agents.childRuns()), turn.receipt);
    let step = applyTurnTransition(turn.record, ending.transition);
    if (outcome.kind === 'completed' && step.record.output) {
      hub.emit('agent.turn.finished', session.id, step.record.id, agentFinishedPayload(outcome.result, step.record.output));
      if ('result' in step.record.output) hub.emit('turn.result', session.id, step.record.id, { result: step.record.output.result });
    }
    const derivedTitle = !session.titleIsManual && session.title === UNTITLED ? deriveTitle(text.input) : null;
    await this.rowWritten(turn);
    let retitled = false;
    try {
      const changes = { sessionId: session.id, updatedAt: at, derivedTitle, spending: ending.spending };
      const record = step.record;
      const outbox = this.announcementOf(turn, step);
      await this.deps.contexts.append(session.id, ending.history, (index) => finalizeTurn(boundary.db, record, ending.history, changes, { index, outbox }));
      if (outbox) this.deps.webhooks!.committed();
      if (derivedTitle !== null) retitled = true;
    } catch (error) {
      if (error instanceof StaleTurnWrite) return this.standDown(turn, error);
      logger.error({ err: error, turnId: step.record.id }, 'could not store the turn\'s history');
      step = applyTurnTransition(turn.record, { kind: 'fail', at, error: HISTORY_NOT_STORED, output: step.record.output });
      try {
        await storeTerminalTurn(boundary.db, step.record, logger, this.announcementOf(turn, step));
        this.deps.webhooks?.committed();
      } catch (stale) {
        if (stale instanceof StaleTurnWrite) return this.standDown(turn, stale);
        throw stale;
      }
    }
    if (ending.history.usage) this.telemetry.metrics.tokensUsed(ending.history.usage, this.tenant);
    if (retitled) await this.announceSession(session.id);
    await this.keepRevert(turn);
    this.settle(turn, step);
  }

  /**
   * Keeps what reverting the turn takes (--revert-history), before its end is announced, so a
   * client may revert it on `turn.completed`. A turn whose revert cannot be kept can still end:
   * reverting it answers revert_unavailable. A turn that ran no writing call keeps nothing (its
   * revert changes nothing): most turns pay no write for this.
   */
  private async keepRevert(turn: ActiveTurn): Promise<void> {
    const { boundary, logger } = this.deps;
    const keep = boundary.limits.revertHistory;
    if (!turn.receipt?.watchedAnyCall || keep === 0) return;
    const key = { boundaryId: boundary.id, sessionId: turn.session.id, turnId: turn.record.id, createdAt: turn.record.createdAt };
    try {
      // With a disk quota the bytes also take their room on the tenant's file system.
      const space = boundary.revertSpace;
      const bytes = space ? Math.min(boundary.limits.revertBytesPerTenant, await space.room()) : boundary.limits.revertBytesPerTenant;
      await storeTurnRevert(boundary.db, key, turn.receipt.revertPlan(), { turnsPerSession: keep, bytes });
      await space?.hold(await revertBytesKept(boundary.db, boundary.id));
    } catch (error) {
      logger.warn({ err: error, turnId: turn.record.id }, 'could not keep what reverting the turn takes');
    }
  }

  /** Ends a turn that never ran (a full queue, a cancel while queued): only its row changes. */
  private async endWithoutRunning(turn: ActiveTurn, transition: TurnTransition<NonNullable<TurnRecord['output']>>): Promise<void> {
    turn.steering.close();
    if (turn.abort.signal.reason instanceof TurnHandedOver) return this.letGoOf(turn, 'turn handed over to another instance');
    const step = applyTurnTransition(turn.record, transition);
    await this.rowWritten(turn);
    try {
      const outbox = this.announcementOf(turn, step);
      await storeTurnEnd(this.deps.boundary.db, step.record, outbox);
      if (outbox) this.deps.webhooks!.committed();
    } catch (error) {
      if (error instanceof StaleTurnWrite) return this.standDown(turn, error);
      this.settle(turn, step);
      throw error;
    }
    this.settle(turn, step);
  }

  /** --webhook-url: the deliveries announcing this terminal step, for the transaction that stores it. */
  private announcementOf(turn: ActiveTurn, step: TurnStep<TurnRecord>): OutboxWrite | undefined {
    const type = step.event?.type;
    if (!this.deps.webhooks || (type !== 'turn.completed' && type !== 'turn.failed' && type !== 'turn.cancelled')) return undefined;
    return this.deps.webhooks.write({ type, at: step.record.finishedAt ?? nowIso(), sessionId: turn.session.id, turnId: step.record.id, data: step.event!.data });
  }

  /**
   * The turn changed the session as a PATCH would (its first turn named it, a budget request raised
   * its budget): `session.updated` says so.
   */
  private async announceSession(sessionId: string): Promise<void> {
    const { boundary, hub } = this.deps;
    const renamed = await findSession(boundary.db, boundary.id, sessionId).catch((error: unknown) => {
      this.deps.logger.warn({ err: error, sessionId }, 'could not read the renamed session to announce it');
      return null;
    });
    if (renamed) hub.emit('session.updated', sessionId, null, { session: toSessionDto(renamed) });
  }

  /**
   * Another instance took the turn over (its write was refused): this one lets go of it without
   * writing or publishing anything more. Its run has ended, or ends now.
   */
  private standDown(turn: ActiveTurn, error: StaleTurnWrite): void {
    turn.abort.abort(error);
    this.letGoOf(turn, 'turn taken over by another instance: standing down');
  }

  /**
   * SIGTERM on an instance of a live cluster (CONTRACT.md §18): the turn stops here without an end
   * (its model request aborted, its tools' process trees ended, its requests kept for the next
   * owner), so that another instance resumes it once this one has released its lease.
   */
  async handOver(turn: ActiveTurn): Promise<void> {
    const slot = this.slots.get(turn);
    turn.abort.abort(new TurnHandedOver());
    if (slot && !slot.admitted && this.deps.scheduler.remove(slot.job)) this.letGoOf(turn, 'turn handed over to another instance');
    await turn.finished;
  }

  /**
   * The turn's lease went to another instance (a takeover, or a queued turn another instance
   * started): its run stops; a turn still waiting for a slot here leaves the queue at once.
   */
  lose(turn: ActiveTurn, reason: Error): void {
    const slot = this.slots.get(turn);
    turn.abort.abort(reason);
    if (slot && !slot.admitted && this.deps.scheduler.remove(slot.job)) this.letGoOf(turn, 'turn taken by another instance while queued here');
  }

  /** This instance lets go of the turn without writing or publishing anything more of it. */
  private letGoOf(turn: ActiveTurn, why: string): void {
    this.deps.logger.warn({ turnId: turn.record.id, attempt: turn.record.attempt }, why);
    const slot = this.slots.get(turn);
    this.slots.delete(turn);
    this.deps.leases?.release(turn.record.id);
    this.deps.requests.letGo(turn.record.id, turn.abort.signal.reason instanceof Error ? turn.abort.signal.reason : new Error(why));
    this.deps.active.letGo(turn);
    if (slot?.admitted) this.deps.scheduler.finished(slot.job);
  }

  /**
   * The terminal state is durable (or could not be made so): only now does the live record turn
   * terminal, so nobody sees a terminal status while the session still counts as busy.
   */
  private settle(turn: ActiveTurn, step: TurnStep<TurnRecord>): void {
    turn.record = step.record;
    if (step.event) this.deps.hub.emit(step.event.type, turn.session.id, step.record.id, step.event.data);
    const slot = this.slots.get(turn);
    this.slots.delete(turn);
    if (slot) this.telemetry.metrics.turnFinished(step.record.status, (performance.now() - slot.enqueuedMs) / 1000, this.tenant);
    this.deps.leases?.release(step.record.id);
    this.deps.requests.forgetAdopted(step.record.id);
    this.deps.active.release(turn);
    if (slot?.admitted) this.deps.scheduler.finished(slot.job);
  }
}

function interruptedCall(_call: ToolCall): Promise<ToolCallResult> {
  return Promise.resolve({ output: INTERRUPTED_TOOL_OUTPUT, truncated: false });
}

function deriveTitle(input: string): string | null {
  const firstLine = input.trim().split('\n')[0]?.trim() ?? '';
  if (!firstLine) return null;
  return firstLine.length > 80 ? `${firstLine.slice(0, 79)}…` : firstLine;
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

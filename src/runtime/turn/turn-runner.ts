import type { Logger } from 'pino';
import { MAX_WATCHED_ENTRIES } from './turn-receipt.ts';
import { WorkspaceWatches } from '../../workspace/workspace-watches.ts';
import { PROCESS_WATCH_BUDGET, WatchBudget } from '../../workspace/watch-budget.ts';
import { DEFAULT_STORE_BYTES } from '../../workspace/content-store.ts';
import { nowIso } from '../../domain/ids.ts';
import { applyTurnTransition, canApply, type TurnTransition } from '../../domain/turn-lifecycle.ts';
import type { ProviderAdapter } from '../../agent/providers/types.ts';
import type { CatalogModel } from '../../config/models-file.ts';
import { readTurnText } from '../../store/turns.ts';
import type { BoundaryWebhooks } from '../webhooks/webhook-outbox.ts';
import type { TurnRecord, TurnText } from '../../domain/turn.ts';
import type { WorkspaceCommands } from '../../workspace/workspace-commands.ts';
import type { ActiveTurn, ActiveTurns } from './active-turns.ts';
import type { ModelContextCache } from '../context/model-context-cache.ts';
import type { Boundary } from '../boundary.ts';
import type { EventHub } from '../event-hub.ts';
import type { RequestBroker } from './requests.ts';
import type { Scheduler } from './scheduler.ts';
import type { RepositorySetups } from '../session/setup.ts';
import { createToolPort, type TurnToolPort, type TurnToolsFactory } from './tool-port.ts';
import { failureKind, failureOutcome, TurnCancelled, type TurnOutcome } from './turn-outcome.ts';
import { metricsTenantOf } from '../boundary.ts';
import { NO_TELEMETRY, type RuntimeTelemetry } from '../../telemetry/runtime-telemetry.ts';
import { spanNames, turnAttributes, type TraceParent } from '../../telemetry/tracing.ts';
import type { ClaimedAdmission, ResumedTurn, TurnClaim, TurnClaims } from './turn-claim.ts';
import { TurnClaimLost } from './claim-lost.ts';
import { TurnQueue, type QueueSlot } from './turn-queue.ts';
import { TurnExecution } from './turn-execution.ts';
import { TurnEnds } from './turn-ends.ts';
import { pacedTurnWork } from './turn-pacer.ts';

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
  /** how the boundary claims its turns (alone, or under a cluster's leases): chosen where it opens */
  claims: TurnClaims;
  /** --webhook-url: each turn's end is announced in the transaction that stores it */
  webhooks?: BoundaryWebhooks | null;
  /** the session directories watched for change receipts; the runner's own when not given */
  watches?: WorkspaceWatches;
}

/**
 * Owns every turn of a boundary from the moment it is durably queued to its terminal write: it
 * queues it (turn-queue.ts), runs it when admitted (turn-execution.ts assembles its agent loop),
 * cancels it, lets go of it once its claim is lost, and is the only writer of its status, each
 * change a transition of domain/turn-lifecycle.ts whose event it publishes; the end of each turn
 * is turn-ends.ts's.
 */
export class TurnRunner {
  private readonly telemetry: RuntimeTelemetry;
  /** the tenant label of turn and token metrics: none in single-user mode */
  private readonly tenant: string | undefined;
  private readonly watches: WorkspaceWatches;
  private readonly queue: TurnQueue;
  private readonly execution: TurnExecution;
  private readonly ends: TurnEnds;

  constructor(private readonly deps: TurnRunnerDeps) {
    const keptContentBytes = deps.boundary.limits.revertHistory > 0 ? DEFAULT_STORE_BYTES : 0;
    const budget = new WatchBudget(deps.boundary.limits.maxWatchesPerTenant, PROCESS_WATCH_BUDGET);
    const watches = (this.watches = deps.watches ?? new WorkspaceWatches({ maxEntries: MAX_WATCHED_ENTRIES, keptContentBytes, budget }));
    const telemetry = (this.telemetry = deps.telemetry ?? NO_TELEMETRY);
    const tenant = (this.tenant = metricsTenantOf(deps.boundary.id));
    const { boundary, hub, active, contexts, scheduler, requests, commands, adapterFor, toolsFor, logger } = deps;
    this.queue = new TurnQueue({
      boundaryId: boundary.id, scheduler, logger, olderQueued: deps.claims.olderQueued,
      run: (turn, slot) => this.traced(turn, slot),
      joined: (resumed) => this.join(resumed),
      resume: (resumed) => this.resume(resumed),
    });
    this.ends = new TurnEnds({ boundary, hub, active, contexts, requests, queue: this.queue, logger, telemetry, tenant, webhooks: deps.webhooks ?? null });
    this.execution = new TurnExecution({
      boundary, hub, contexts, commands, adapterFor, toolsFor, logger, telemetry, watches,
      portFor: (turn, agentId) => this.portFor(turn, agentId),
      announceSession: (sessionId) => this.ends.announceSession(sessionId),
    });
  }

  /**
   * A turn whose `queued` row is stored, under its claim: published, then admitted or, when a
   * queue is full, failed. The answer is the record to show its submitter: queued, or failed.
   */
  async enqueue(turn: ActiveTurn, admission: Pick<ClaimedAdmission, 'claim' | 'queueFull'>, traceParent?: TraceParent): Promise<TurnRecord> {
    const { claim } = admission;
    this.hold(turn, claim);
    this.deps.hub.emit('turn.queued', turn.session.id, turn.record.id, {});
    const queued = this.queue.enqueue(turn, claim, traceParent, admission.queueFull);
    // An admitted turn changes its record only after an await of its own: this is still `queued`.
    if (queued === 'queued') return { ...turn.record };
    await this.ends.endUnrun(turn, claim, { kind: 'fail', at: nowIso(), error: queueFullError(queued) });
    return { ...turn.record };
  }

  /**
   * A turn this instance took over (its `attempt` raised, its lease held here): `turn.resumed` is
   * published and it waits for a running slot like any turn, then goes on from its plan. A turn
   * that was still queued starts as usual.
   */
  resume(resumed: ResumedTurn): void {
    this.join(resumed);
    const queued = this.queue.enqueueResumed(resumed);
    if (queued === 'queued') return;
    const { turn, claim } = resumed;
    void this.ends.endUnrun(turn, claim, { kind: 'fail', at: nowIso(), error: queueFullError(queued) }).catch((failure: unknown) => this.deps.logger.error({ err: failure, turnId: turn.record.id }, 'could not end a resumed turn'));
  }

  /** A turn taken over joins this process: its claim held here, `turn.resumed` published. */
  private join({ turn, claim, plan }: ResumedTurn): void {
    this.hold(turn, claim);
    this.deps.hub.emit('turn.resumed', turn.session.id, turn.record.id, { attempt: turn.record.attempt, interruptedTools: [...plan.interrupted] });
  }

  /** The runner holds the turn's claim: it hears of the claim's loss, and of a cancel through another instance. */
  private hold(turn: ActiveTurn, claim: TurnClaim): void {
    claim.heldBy({
      lost: (lost) => this.letGo(turn, lost),
      cancelRequested: () => void this.cancel(turn).catch(() => undefined),
    });
  }

  /** Resolves once the turn is cancelled (or ended otherwise first) and durable. */
  async cancel(turn: ActiveTurn): Promise<void> {
    const claim = this.queue.claimOf(turn);
    if (claim && this.queue.remove(turn)) {
      await this.ends.endUnrun(turn, claim, { kind: 'cancel', at: nowIso(), error: null });
      return;
    }
    turn.abort.abort(new TurnCancelled());
    await turn.finished;
  }

  /**
   * The turn is no longer this instance's (its lease lost, a write of it refused by the fence, or
   * handed over as the instance stops): its run stops, and once it has (at once for a turn still
   * waiting for a slot here) it is let go without anything more of it written or published. A
   * turn handed over does not even try to store its end; otherwise the fence decides.
   */
  letGo(turn: ActiveTurn, lost: TurnClaimLost): void {
    const claim = this.queue.claimOf(turn);
    turn.abort.abort(lost);
    if (claim && this.queue.remove(turn)) this.ends.letGo(turn, claim, lost.endsElsewhere ? lost.letGoLine : 'turn taken by another instance while queued here');
  }

  /** The port through which one agent's tools ask a human; child agents get their own agent id. */
  portFor(turn: ActiveTurn, agentId: string | null): TurnToolPort {
    const claim = this.queue.claimOf(turn);
    return createToolPort({
      sessionId: turn.session.id,
      turnId: turn.record.id,
      agentId,
      signal: turn.abort.signal,
      requests: this.deps.requests,
      whileRunning: (work) => (claim ? claim.whileRunning(work) : work()),
      report: {
        waiting: () => this.report(turn, { kind: 'wait' }),
        resumed: () => (this.deps.requests.hasPending(turn.record.id) ? Promise.resolve() : this.report(turn, { kind: 'resume' })),
      },
    });
  }

  /** The run inside the turn's span, from admission to the terminal state: model and tool spans are its children. */
  private traced(turn: ActiveTurn, slot: QueueSlot): Promise<void> {
    const { tracing } = this.telemetry;
    if (!tracing.enabled) return this.run(turn, slot);
    const attributes = turnAttributes(turn.session.id, turn.record.id, this.tenant);
    return tracing.withSpan(
      spanNames.turn,
      attributes,
      async (span) => {
        await this.run(turn, slot);
        span.setAttributes({ 'agentd.turn.status': turn.record.status });
      },
      { parent: slot.traceParent },
    );
  }

  private async run(turn: ActiveTurn, { claim, resume }: QueueSlot): Promise<void> {
    const { signal } = turn.abort;
    // The turn stays `queued` (no turn.started) until the session's repository setup has finished,
    // although it already holds a running slot of the scheduler.
    try {
      await this.deps.setups.ready(turn.session, signal);
    } catch (error) {
      await this.ends.finish(turn, claim, failureOutcome(error, signal), await this.wholeText(turn));
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
        await claim.shown();
        signal.throwIfAborted();
      }
      text = await this.wholeText(turn);
      outcome = await this.execution.execute(turn, claim, text, resume);
    } catch (error) {
      outcome = failureOutcome(error, signal, performance.now() - startedMs);
      // a turn whose claim was lost did not fail: the loss is logged where it is met (turn-ends.ts)
      const lost = signal.aborted && signal.reason instanceof TurnClaimLost;
      if (outcome.kind === 'failed' && !lost) this.deps.logger.warn({ turnId: turn.record.id, failure: failureKind(outcome.error) }, 'turn failed');
    }
    // a burst of ends would hold every live stream's deltas behind it (turn-pacer.ts)
    await pacedTurnWork();
    await this.ends.finish(turn, claim, outcome, text ?? (await this.wholeText(turn)));
  }

  /** Lets go of the watched session directories (the boundary is closing). */
  close(): void {
    this.watches.close();
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
    if (transition.kind === 'resume') await this.queue.claimOf(turn)?.shown();
  }

  /**
   * A transition short of the end (start, wait, resume): the live record changes, its event is
   * published, and the claim shows it (TurnClaim.show). Alone on its database the row keeps
   * `queued` until the terminal write, which carries startedAt: nothing in this process reads an
   * active turn's row for its status (GET, list and idempotency answer it from memory,
   * TurnService), and start-up recovery fails queued, running and waiting rows alike as
   * `interrupted` (CONTRACT.md §5). With --cluster other instances read the row, so the claim
   * stores each state, in order, under the fence; the terminal write waits for them.
   */
  private advance(turn: ActiveTurn, transition: TurnTransition<NonNullable<TurnRecord['output']>>): void {
    const step = applyTurnTransition(turn.record, transition);
    turn.record = step.record;
    if (step.event) this.deps.hub.emit(step.event.type, turn.session.id, step.record.id, step.event.data);
    this.queue.claimOf(turn)?.show(step.record);
  }
}

function queueFullError(refused: 'queue_full' | 'tenant_queue_full'): string {
  return refused === 'queue_full' ? 'turn_queue_full: the server queue is full' : 'tenant_turn_queue_full: the tenant queue is full';
}

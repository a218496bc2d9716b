/**
 * The end of a turn this process holds: its terminal write (with its history entry, the session's
 * usage and title, and its webhook deliveries, in one transaction), what reverting it takes, and
 * then, only once it is durable, its terminal event and the freeing of its session and running
 * slot (settle). Or, when the turn is no longer this process's (its claim lost: taken over, handed
 * over), letting go of it without writing or publishing anything more of it (letGo).
 */
import type { Logger } from 'pino';
import { nowIso } from '../../domain/ids.ts';
import { applyTurnTransition, type TurnStep, type TurnTransition } from '../../domain/turn-lifecycle.ts';
import { findModel } from '../../config/catalog.ts';
import { finalizeTurn } from '../../store/finalize.ts';
import { storeTerminalTurn, storeTurnEnd } from '../../store/eventual-turn-write.ts';
import type { OutboxWrite } from '../../store/webhook-outbox.ts';
import { findSession } from '../../store/sessions.ts';
import { revertBytesKept, storeTurnRevert } from '../../store/turn-reverts.ts';
import type { BoundaryWebhooks } from '../webhooks/webhook-outbox.ts';
import { toSessionDto } from '../../api/dto.ts';
import type { TurnRecord, TurnText } from '../../domain/turn.ts';
import type { ActiveTurn, ActiveTurns } from './active-turns.ts';
import type { ModelContextCache } from '../context/model-context-cache.ts';
import type { Boundary } from '../boundary.ts';
import type { EventHub } from '../event-hub.ts';
import type { RequestBroker } from './requests.ts';
import { UNTITLED } from '../session/sessions.ts';
import { agentFinishedPayload, endingOf, withReceipt, withUnshownSteers, type TurnOutcome } from './turn-outcome.ts';
import type { RuntimeTelemetry } from '../../telemetry/runtime-telemetry.ts';
import type { TurnClaim } from './turn-claim.ts';
import { TurnClaimLost } from './claim-lost.ts';
import type { TurnQueue } from './turn-queue.ts';

export const HISTORY_NOT_STORED = 'internal_error: the history of this turn could not be stored';

const STANDING_DOWN = 'turn taken over by another instance: standing down';

export interface TurnEndsDeps {
  boundary: Boundary;
  hub: EventHub;
  active: ActiveTurns;
  /** the boundary's model contexts: extended by a turn's end */
  contexts: ModelContextCache;
  requests: RequestBroker;
  queue: TurnQueue;
  logger: Logger;
  telemetry: RuntimeTelemetry;
  /** the tenant label of turn and token metrics: none in single-user mode */
  tenant: string | undefined;
  /** --webhook-url: each turn's end is announced in the transaction that stores it */
  webhooks: BoundaryWebhooks | null;
}

export class TurnEnds {
  constructor(private readonly deps: TurnEndsDeps) {}

  /**
   * Ends an executed turn in one transaction: its history entry, its terminal state and the
   * session's usage, title and updatedAt. When that cannot be stored, the turn fails saying so and
   * keeps its output (the bounded answer), stored with the failure when that much can be.
   */
  async finish(turn: ActiveTurn, claim: TurnClaim, outcome: TurnOutcome, text: TurnText): Promise<void> {
    const elsewhere = endingElsewhere(turn);
    if (elsewhere) return this.letGo(turn, claim, elsewhere.letGoLine);
    const { boundary, hub, logger, webhooks } = this.deps;
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
    await claim.shown();
    let retitled = false;
    try {
      const changes = { sessionId: session.id, updatedAt: at, derivedTitle, spending: ending.spending };
      const record = step.record;
      const outbox = this.announcementOf(turn, step);
      await this.deps.contexts.append(session.id, ending.history, (index) => claim.write(() => finalizeTurn(boundary.db, record, ending.history, changes, { index, outbox })));
      if (outbox) webhooks!.committed();
      if (derivedTitle !== null) retitled = true;
    } catch (error) {
      if (error instanceof TurnClaimLost) return this.letGo(turn, claim, STANDING_DOWN, error);
      logger.error({ err: error, turnId: step.record.id }, 'could not store the turn\'s history');
      step = applyTurnTransition(turn.record, { kind: 'fail', at, error: HISTORY_NOT_STORED, output: step.record.output });
      try {
        await claim.write(() => storeTerminalTurn(boundary.db, step.record, logger, this.announcementOf(turn, step)));
        webhooks?.committed();
      } catch (stale) {
        if (stale instanceof TurnClaimLost) return this.letGo(turn, claim, STANDING_DOWN, stale);
        throw stale;
      }
    }
    if (ending.history.usage) this.deps.telemetry.metrics.tokensUsed(ending.history.usage, this.deps.tenant);
    if (retitled) await this.announceSession(session.id);
    await this.keepRevert(turn);
    this.settle(turn, claim, step);
  }

  /** Ends a turn that never ran (a full queue, a cancel while queued): only its row changes. */
  async endUnrun(turn: ActiveTurn, claim: TurnClaim, transition: TurnTransition<NonNullable<TurnRecord['output']>>): Promise<void> {
    turn.steering.close();
    const elsewhere = endingElsewhere(turn);
    if (elsewhere) return this.letGo(turn, claim, elsewhere.letGoLine);
    const step = applyTurnTransition(turn.record, transition);
    await claim.shown();
    try {
      const outbox = this.announcementOf(turn, step);
      await claim.write(() => storeTurnEnd(this.deps.boundary.db, step.record, outbox));
      if (outbox) this.deps.webhooks!.committed();
    } catch (error) {
      if (error instanceof TurnClaimLost) return this.letGo(turn, claim, STANDING_DOWN, error);
      this.settle(turn, claim, step);
      throw error;
    }
    this.settle(turn, claim, step);
  }

  /**
   * This process lets go of a turn that is no longer its own, without writing or publishing
   * anything more of it: its run has ended, or ends now (`lost` aborts it), its requests stay for
   * the next owner, and its session and running slot are freed here.
   */
  letGo(turn: ActiveTurn, claim: TurnClaim, why: string, lost?: TurnClaimLost): void {
    if (lost) turn.abort.abort(lost);
    this.deps.logger.warn({ turnId: turn.record.id, attempt: turn.record.attempt }, why);
    const { free } = this.deps.queue.leave(turn);
    claim.release();
    const reason: unknown = turn.abort.signal.reason;
    this.deps.requests.letGo(turn.record.id, reason instanceof Error ? reason : new Error(why));
    this.deps.active.letGo(turn);
    free();
  }

  /**
   * The turn changed the session as a PATCH would (its first turn named it, a budget request raised
   * its budget): `session.updated` says so.
   */
  async announceSession(sessionId: string): Promise<void> {
    const { boundary, hub } = this.deps;
    const renamed = await findSession(boundary.db, boundary.id, sessionId).catch((error: unknown) => {
      this.deps.logger.warn({ err: error, sessionId }, 'could not read the renamed session to announce it');
      return null;
    });
    if (renamed) hub.emit('session.updated', sessionId, null, { session: toSessionDto(renamed) });
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

  /** --webhook-url: the deliveries announcing this terminal step, for the transaction that stores it. */
  private announcementOf(turn: ActiveTurn, step: TurnStep<TurnRecord>): OutboxWrite | undefined {
    const type = step.event?.type;
    if (!this.deps.webhooks || (type !== 'turn.completed' && type !== 'turn.failed' && type !== 'turn.cancelled')) return undefined;
    return this.deps.webhooks.write({ type, at: step.record.finishedAt ?? nowIso(), sessionId: turn.session.id, turnId: step.record.id, data: step.event!.data });
  }

  /**
   * The terminal state is durable (or could not be made so): only now does the live record turn
   * terminal, so nobody sees a terminal status while the session still counts as busy.
   */
  private settle(turn: ActiveTurn, claim: TurnClaim, step: TurnStep<TurnRecord>): void {
    turn.record = step.record;
    if (step.event) this.deps.hub.emit(step.event.type, turn.session.id, step.record.id, step.event.data);
    const { slot, free } = this.deps.queue.leave(turn);
    if (slot) this.deps.telemetry.metrics.turnFinished(step.record.status, (performance.now() - slot.enqueuedMs) / 1000, this.deps.tenant);
    claim.release();
    this.deps.requests.forgetAdopted(step.record.id);
    this.deps.active.release(turn);
    free();
  }
}

/** Handed over (SIGTERM in a live cluster), or let go for want of the database: the turn's end is its next owner's. */
function endingElsewhere(turn: ActiveTurn): TurnClaimLost | null {
  const reason: unknown = turn.abort.signal.reason;
  return reason instanceof TurnClaimLost && reason.endsElsewhere ? reason : null;
}

function deriveTitle(input: string): string | null {
  const firstLine = input.trim().split('\n')[0]?.trim() ?? '';
  if (!firstLine) return null;
  return firstLine.length > 80 ? `${firstLine.slice(0, 79)}…` : firstLine;
}

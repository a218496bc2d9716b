/**
 * A boundary's turns between their admission and their end, as the process's scheduler sees them
 * (scheduler.ts): each waits for a running slot, starts when given one, and frees it when it ends
 * or is let go. With --cluster a turn that waited here gives its slot to an older turn queued on
 * another instance first (startOlderFirst).
 */
import type { Logger } from 'pino';
import type { TraceParent } from '../../telemetry/tracing.ts';
import { DEFAULT_BOUNDARY_ID } from '../boundary.ts';
import type { ActiveTurn } from './active-turns.ts';
import type { EnqueueResult, Job, Scheduler } from './scheduler.ts';
import type { OlderQueuedTurn, ResumedTurn, ResumePlan, TurnClaim } from './turn-claim.ts';
import { pacedTurnWork } from './turn-pacer.ts';

export interface QueueSlot {
  readonly job: Job;
  /** the turn's claim: this process's ownership of it */
  readonly claim: TurnClaim;
  /** the scheduler admitted the turn: it holds a running slot until it ends */
  admitted: boolean;
  /** for agentd_turn_duration_seconds: from the stored `queued` row to the terminal state */
  readonly enqueuedMs: number;
  /** the span of the request that submitted the turn: the turn's span is its child */
  readonly traceParent: TraceParent | undefined;
  /** a turn taken over from another instance: where it goes on from */
  readonly resume?: ResumePlan;
  /** it waited in this instance's queue: with --cluster an older turn queued elsewhere goes first (startOlderFirst) */
  waited?: boolean;
}

export interface TurnQueueDeps {
  boundaryId: string;
  /** shared by every boundary of the process: it holds the global running and queued limits */
  scheduler: Scheduler;
  logger: Logger;
  /** --cluster: how a turn that waited here finds an older one queued on another instance */
  olderQueued: OlderQueuedTurn | null;
  /** runs a turn given a running slot, to its end */
  run(turn: ActiveTurn, slot: QueueSlot): Promise<void>;
  /** a turn taken over joins this process (its claim held, `turn.resumed` published) */
  joined(resumed: ResumedTurn): void;
  /** a turn taken over that is to wait for a slot like any other (TurnRunner.resume) */
  resume(resumed: ResumedTurn): void;
}

export class TurnQueue {
  private readonly slots = new Map<ActiveTurn, QueueSlot>();

  constructor(private readonly deps: TurnQueueDeps) {}

  /**
   * A turn whose `queued` row is stored waits for a running slot; `queueFull` (a full queue
   * counted in the database, --cluster) refuses it as the scheduler would. It has a slot either
   * way, to end through.
   */
  enqueue(turn: ActiveTurn, claim: TurnClaim, traceParent: TraceParent | undefined, queueFull: boolean): EnqueueResult {
    const slot = this.slotOf(turn, claim, traceParent);
    // the boundary's queue as counted in the database was full (TurnLeases.admit)
    if (queueFull) return this.deps.boundaryId === DEFAULT_BOUNDARY_ID ? 'queue_full' : 'tenant_queue_full';
    const admission = this.deps.scheduler.enqueue(slot.job);
    if (admission === 'queued' && !slot.admitted) slot.waited = true;
    return admission;
  }

  /** A turn taken over waits for a running slot like any other, then goes on from its plan. */
  enqueueResumed(resumed: ResumedTurn): EnqueueResult {
    return this.deps.scheduler.enqueue(this.slotOf(resumed.turn, resumed.claim, undefined, resumed.plan).job);
  }

  claimOf(turn: ActiveTurn): TurnClaim | undefined {
    return this.slots.get(turn)?.claim;
  }

  /** The turn leaves the queue if it was still waiting in it: true when it was. */
  remove(turn: ActiveTurn): boolean {
    const slot = this.slots.get(turn);
    return slot !== undefined && !slot.admitted && this.deps.scheduler.remove(slot.job);
  }

  /** The turn is done here: its slot is forgotten; `free` hands its running slot on, last. */
  leave(turn: ActiveTurn): { slot: QueueSlot | undefined; free(): void } {
    const slot = this.slots.get(turn);
    this.slots.delete(turn);
    return { slot, free: () => (slot?.admitted ? this.deps.scheduler.finished(slot.job) : undefined) };
  }

  private slotOf(turn: ActiveTurn, claim: TurnClaim, traceParent: TraceParent | undefined, resume?: ResumePlan): QueueSlot {
    const slot: QueueSlot = { job: { tenantId: this.deps.boundaryId, start: () => this.start(turn, slot) }, claim, admitted: false, enqueuedMs: performance.now(), traceParent, ...(resume ? { resume } : {}) };
    this.slots.set(turn, slot);
    return slot;
  }

  private start(turn: ActiveTurn, slot: QueueSlot): void {
    slot.admitted = true;
    if (slot.waited && this.deps.olderQueued) return void this.startOlderFirst(turn, slot, this.deps.olderQueued);
    this.run(turn, slot);
  }

  private run(turn: ActiveTurn, slot: QueueSlot): void {
    // a burst of starts would hold every live stream's deltas behind it (turn-pacer.ts)
    pacedTurnWork()
      .then(() => this.deps.run(turn, slot))
      .catch((error: unknown) => this.deps.logger.error({ err: error, turnId: turn.record.id }, 'turn runner failed'));
  }

  /**
   * --cluster, first come first served across instances: the slot a turn that waited here was
   * given goes to an older turn queued on another instance, if there is one (taken under a new
   * attempt), and this turn waits again at the head of the queue. A turn cancelled or stopped
   * meanwhile runs as usual (its run ends it at once), and the older one queues here as a turn taken over.
   */
  private async startOlderFirst(turn: ActiveTurn, slot: QueueSlot, olderQueued: OlderQueuedTurn): Promise<void> {
    const older = await olderQueued(turn).catch((error: unknown) => {
      this.deps.logger.warn({ err: error, turnId: turn.record.id }, 'could not look for an older turn queued on another instance');
      return null;
    });
    if (older && !turn.abort.signal.aborted) {
      slot.admitted = false;
      this.deps.joined(older);
      this.deps.scheduler.handOff(slot.job, this.slotOf(older.turn, older.claim, undefined, older.plan).job);
      return;
    }
    if (older) this.deps.resume(older);
    this.run(turn, slot);
  }
}

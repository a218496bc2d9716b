/**
 * The leases this instance of a cluster holds on its turns (docs/CLUSTER.md): renewed together a
 * few times per lease, with a sweep for turns whose owner let their lease run out. A turn whose
 * lease this instance lost is stopped; whatever it still tries to write is refused by the fence
 * (store/turn-fence.ts), and its claim is lost (cluster-claims.ts).
 */
import type { Logger } from 'pino';
import type { Db } from '../../store/database.ts';
import { cancelsRequestedAmong, endExpiredTurns, type EndedTurn, insertLeasedTurn, releaseTurnLeases, renewTurnLeases, type Renewal, requestTurnCancel, takeOldestQueuedTurn, takeOverExpiredTurns, type TakenTurn } from '../../store/turn-leases.ts';
import type { BoundaryWebhooks } from '../webhooks/webhook-outbox.ts';
import type { EventHub } from '../event-hub.ts';
import { deleteEndedTurnSteps } from '../../store/turn-steps.ts';
import { findTurn } from '../../store/turns.ts';
import { ACTIVE_STATUSES } from '../../domain/turn-status.ts';
import { ApiError } from '../../domain/errors.ts';
import type { TurnRecord, TurnText } from '../../domain/turn.ts';
import type { SessionRecord } from '../../domain/session.ts';
import { nowIso } from '../../domain/ids.ts';
import type { Config } from '../../config/config.ts';
import { TurnClaimLost } from './claim-lost.ts';
import type { ClusterDuties, Duty } from '../cluster-supervisor.ts';

/**
 * How an instance of a cluster holds its turns: its name, how long a lease lasts unrenewed, and how
 * many times a turn is taken over after its lease ran out before it is ended instead.
 */
export interface ClusterMembership {
  instanceId: string;
  turnLeaseMs: number;
  maxTakeovers: number;
}

/** How a process started with these options holds its turns: under leases with --cluster, else alone (null). */
export function clusterMembership(config: Pick<Config, 'cluster' | 'instanceId' | 'turnLeaseSeconds' | 'maxTurnTakeovers'>): ClusterMembership | null {
  return config.cluster ? { instanceId: config.instanceId, turnLeaseMs: config.turnLeaseSeconds * 1000, maxTakeovers: config.maxTurnTakeovers } : null;
}

/** Renewals per lease: a lease survives two missed renewals. */
const RENEWALS_PER_LEASE = 3;
/**
 * A queued turn moves to an instance with room only once it has waited this long: its holder,
 * which may be starting it that very moment, keeps a turn it has just admitted. A heuristic on the
 * instances' clocks; the fencing number, not this, makes sure one instance runs it.
 */
const QUEUED_BEFORE_MOVE_MS = 1_000;
/** How often the instance that got a cancel for another's turn looks whether it has ended. */
const CANCEL_WAIT_POLL_MS = 100;

/** What the holder of a lease (the turn's claim, cluster-claims.ts) is told: the lease went to another instance, or a cancel came through another instance. */
export interface LeaseHolder {
  lost(): void;
  cancelRequested(): void;
}

/**
 * Resumes a turn this instance just took over (turn-resume.ts): loads it, holds its lease
 * (TurnLeases.hold) and queues it to run. A turn it could not load is left: its lease runs out and
 * the next sweep, here or elsewhere, takes it over again.
 */
export type TurnResumer = (taken: TakenTurn) => Promise<void>;

export class TurnLeases {
  private readonly held = new Map<string, { attempt: number; holder: LeaseHolder; cancelSeen: boolean }>();
  /** renews the leases held and sweeps for expired ones, a few times per lease */
  private readonly renewal: Duty;
  /** looks for cancels asked through other instances: at their ring, else at the supervisor's poll */
  private readonly cancels: Duty;
  /** starts turns queued elsewhere while this instance has room */
  private readonly queued: Duty;
  /**
   * Due a lease after the last renewal: the turns held are stopped then, even while a renewal
   * still waits for an answer (a partition that drops packets fails no query until its deadline).
   * It queries nothing, and the supervisor runs it beside a renewal that hangs.
   */
  private readonly watchdog: Duty;
  private polling = false;
  private lastRenewedMs = performance.now();
  private ticking = false;
  /** set once the boundary's runtime is built; until then expired turns are only swept, not taken */
  private resumer: TurnResumer | null = null;
  /** SIGTERM: this instance hands its turns over and takes none */
  private leaving = false;
  /** whether this instance has a free running slot and nothing queued: then it starts another's queued turn */
  private room: { boundaryId: string; free: () => boolean } | null = null;
  private pulling = false;

  constructor(
    private readonly db: Db,
    private readonly membership: ClusterMembership,
    private readonly logger: Logger,
    /** the boundary's event stream: the ends of turns this instance ends without their owner are published there */
    private readonly hub: EventHub,
    /** --webhook-url: the ends of turns this instance takes over and ends are announced too */
    private readonly webhooks: BoundaryWebhooks | null = null,
    /** the instance's supervisor, for this boundary: the loop that runs the work below, and the doorbell */
    private readonly duties: ClusterDuties,
    /** counts a turn this instance ended without its owner among the turns ended (agentd_turns_total) */
    private readonly countEnd: (status: string) => void = () => {},
  ) {
    const renewalMs = Math.max(100, Math.floor(membership.turnLeaseMs / RENEWALS_PER_LEASE));
    // released leases (another instance handing over) are taken over at once
    this.renewal = duties.add({ name: 'turn leases', everyMs: renewalMs, wokenBy: ['released'], run: () => this.tick() });
    this.cancels = duties.add({ name: 'turn cancels', wokenBy: ['cancel'], run: () => this.pollCancels() });
    this.queued = duties.add({ name: 'queued turns', run: () => this.pullQueued() });
    // another instance queued a turn: it may move here once it has waited QUEUED_BEFORE_MOVE_MS
    duties.on('queued', () => this.queued.dueIn(QUEUED_BEFORE_MOVE_MS));
    this.watchdog = duties.add({ name: 'turn lease watchdog', everyMs: renewalMs, run: () => this.stopUnrenewed() });
    this.armWatchdog();
  }

  /** The watchdog, due when the last renewal's lease runs out (or a renewal period from now, if it has). */
  private armWatchdog(): void {
    const due = this.lastRenewedMs + this.membership.turnLeaseMs - performance.now();
    this.watchdog.dueIn(due > 0 ? due : this.membership.turnLeaseMs / RENEWALS_PER_LEASE);
  }

  /** Unrenewed for a whole lease: another instance may hold the turns now, so they stop here. */
  private stopUnrenewed(): void {
    if (performance.now() - this.lastRenewedMs >= this.membership.turnLeaseMs && this.held.size > 0) {
      this.logger.warn({ turns: this.held.size }, 'turn leases could not be renewed in time: stopping their turns');
      this.loseAll(new Set());
    }
    this.armWatchdog();
  }

  private renewed(sentMs: number): void {
    this.lastRenewedMs = Math.max(this.lastRenewedMs, sentMs);
    this.armWatchdog();
  }

  /**
   * Stores a new turn with this instance's lease on it; `holder` stops it if the lease goes or a
   * cancel comes. 409 session_busy while another turn of the session is active on any instance.
   * Answers whether the boundary's queue, counted across the cluster, was full (`queueLimit`
   * turns queued): the turn is stored all the same, for the caller to fail. Answers the session
   * too, as read under the admission's lock: what another instance changed before is the turn's.
   */
  async admit(record: TurnRecord, text: TurnText, holder: LeaseHolder, queueLimit: number, movable: boolean): Promise<{ queueFull: boolean; session: SessionRecord }> {
    const admission = await insertLeasedTurn(this.db, record, text, this.membership.instanceId, this.membership.turnLeaseMs, queueLimit, movable);
    if (admission === 'session_busy') throw new ApiError('session_busy', 'the session has an active turn');
    if (admission === 'session_not_found') throw new ApiError('session_not_found', 'no such session');
    this.hold(record.id, record.attempt, holder);
    // no slot free here: it waits in the queue, where an instance with room may take it
    if (movable && this.room && !this.room.free()) this.duties.ring('queued');
    return { queueFull: admission.stored === 'stored_queue_full', session: admission.session };
  }

  /** From now on this instance renews the turn's lease at `attempt`, and tells `holder` when it is lost or cancelled. */
  hold(turnId: string, attempt: number, holder: LeaseHolder): void {
    this.held.set(turnId, { attempt, holder, cancelSeen: false });
  }

  /** Ends expired turns (endExpiredTurns), with the webhook deliveries of their ends in the same transaction. */
  private async endExpired(turnId?: string): Promise<EndedTurn[]> {
    const { webhooks } = this;
    const at = nowIso();
    const announce = webhooks
      ? (turns: EndedTurn[]) =>
          webhooks.writeAll(turns.map((turn) => ({ type: turn.status === 'cancelled' ? ('turn.cancelled' as const) : ('turn.failed' as const), at, sessionId: turn.sessionId, turnId: turn.id, data: { error: turn.error } })))
      : undefined;
    const ended = await endExpiredTurns(this.db, at, this.membership, turnId, announce);
    if (ended.length > 0) webhooks?.committed();
    // the end is announced on the stream and counted as an owner's is: subscribers of every instance get it once
    for (const turn of ended) {
      this.hub.emit(turn.status === 'cancelled' ? 'turn.cancelled' : 'turn.failed', turn.sessionId, turn.id, { error: turn.error });
      this.countEnd(turn.status);
    }
    return ended;
  }

  /** How the turns this instance takes over are resumed. */
  resumeWith(resumer: TurnResumer): void {
    this.resumer = resumer;
  }

  /**
   * From now on, whenever `room()` says this instance could start a turn at once, its poll takes
   * the boundary's oldest queued turn another instance holds (store/turn-leases.ts
   * takeOldestQueuedTurn) and starts it here, as a takeover (turn.resumed, attempt + 1).
   */
  pullQueuedWhen(boundaryId: string, room: () => boolean): void {
    this.room = { boundaryId, free: room };
  }

  /**
   * Cancels a turn of the boundary that runs on another instance, or ran on one that is gone
   * (CONTRACT.md §18): the mark on its row reaches its owner at its next poll, which ends it; a turn
   * whose owner let its lease run out is taken over and ended here. Answers the turn as it ends (or,
   * should it outlast a lease and a few seconds, as it is then).
   */
  async cancelElsewhere(boundaryId: string, turnId: string): Promise<TurnRecord | null> {
    await requestTurnCancel(this.db, turnId, nowIso());
    this.duties.ring('cancel');
    const deadline = performance.now() + this.membership.turnLeaseMs + 5_000;
    for (;;) {
      const taken = await this.endExpired(turnId);
      if (taken.length > 0) this.logger.warn({ turnId, attempt: taken[0]!.attempt }, 'took over a cancelled turn whose owner is gone: ended it');
      const record = await findTurn(this.db, boundaryId, turnId);
      if (!record || !ACTIVE_STATUSES.includes(record.status) || performance.now() > deadline) return record;
      await new Promise((resolve) => setTimeout(resolve, CANCEL_WAIT_POLL_MS));
    }
  }

  /**
   * Before the turn asks the model or runs a tool: its lease, as last renewed here, must still run
   * for a third of its length, else a renewal is made first. Throws TurnClaimLost when the turn is
   * no longer this instance's, so that an owner whose event loop was held up (a freeze, a starved
   * process) past its lease starts nothing more once another instance may have taken the turn.
   */
  async confirm(turnId: string): Promise<void> {
    if (!this.held.has(turnId)) throw new TurnClaimLost('lease_lost');
    if (performance.now() - this.lastRenewedMs < (this.membership.turnLeaseMs * 2) / RENEWALS_PER_LEASE) return;
    await this.renew();
    if (!this.held.has(turnId)) throw new TurnClaimLost('lease_lost');
  }

  /** The turn has ended (or was let go): its lease is no longer renewed. */
  release(turnId: string): void {
    this.held.delete(turnId);
  }

  stop(): void {
    for (const duty of [this.renewal, this.cancels, this.queued, this.watchdog]) duty.stop();
  }

  /**
   * SIGTERM on an instance of a live cluster: it takes no more turns over and stops renewing the
   * ones it holds; once their runs have stood down (`handOver`), releaseHeld gives the leases up.
   */
  leave(): string[] {
    this.leaving = true;
    const ids = [...this.held.keys()];
    this.held.clear();
    return ids;
  }

  /** Gives up the leases on these turns at once, so that another instance's next sweep takes them over. */
  async releaseHeld(turnIds: readonly string[]): Promise<void> {
    await releaseTurnLeases(this.db, this.membership.instanceId, turnIds);
    this.duties.ring('released');
  }

  /**
   * For a turn that waited in this instance's queue and now has a slot: the boundary's oldest
   * turn queued on another instance, if it was admitted before it, taken for this instance (it
   * then runs first: first come first served across instances); null when there is none.
   */
  async takeQueuedBefore(boundaryId: string, createdAt: string): Promise<TakenTurn | null> {
    if (this.leaving) return null;
    const aged = new Date(Date.now() - QUEUED_BEFORE_MOVE_MS).toISOString();
    const taken = await takeOldestQueuedTurn(this.db, boundaryId, this.membership.instanceId, this.membership.turnLeaseMs, createdAt < aged ? createdAt : aged);
    if (taken) this.logger.info({ turnId: taken.id, attempt: taken.attempt }, 'took an older turn queued on another instance: it starts here first');
    return taken;
  }

  /** Queued turns held elsewhere start here while this instance has room, oldest first, one per poll. */
  private async pullQueued(): Promise<void> {
    const room = this.room;
    if (this.pulling || this.leaving || !this.resumer || !room?.free()) return;
    this.pulling = true;
    try {
      const queuedBefore = new Date(Date.now() - QUEUED_BEFORE_MOVE_MS).toISOString();
      const taken = await takeOldestQueuedTurn(this.db, room.boundaryId, this.membership.instanceId, this.membership.turnLeaseMs, queuedBefore);
      if (taken === null) return;
      this.logger.info({ turnId: taken.id, attempt: taken.attempt }, 'took a turn queued on another instance: starting it here');
      await this.resumer(taken);
    } catch (error) {
      // the next poll tries again; a turn taken but not resumed is taken over once its lease runs out
      this.logger.warn({ err: error }, 'could not take a turn queued on another instance');
    } finally {
      this.pulling = false;
    }
  }

  /** Cancels asked through other instances (store/turn-leases.ts requestTurnCancel) reach the turns held here. */
  private async pollCancels(): Promise<void> {
    if (this.polling || this.held.size === 0) return;
    this.polling = true;
    try {
      const unseen = [...this.held].filter(([, entry]) => !entry.cancelSeen).map(([id]) => id);
      for (const id of await cancelsRequestedAmong(this.db, unseen)) {
        const entry = this.held.get(id);
        if (!entry || entry.cancelSeen) continue;
        entry.cancelSeen = true;
        this.logger.info({ turnId: id }, 'turn cancelled through another instance');
        entry.holder.cancelRequested();
      }
    } catch {
      // the next poll tries again; a database outage is reported by the requests that meet it
    } finally {
      this.polling = false;
    }
  }

  private async tick(): Promise<void> {
    if (this.ticking) return;
    this.ticking = true;
    try {
      await this.renew();
      await this.sweep();
    } finally {
      this.ticking = false;
    }
  }

  private async renew(): Promise<void> {
    const sentMs = performance.now();
    if (this.held.size === 0) return this.renewed(sentMs);
    const attempts = new Map([...this.held].map(([id, { attempt }]) => [id, attempt]));
    let renewal: Renewal;
    try {
      renewal = await renewTurnLeases(this.db, this.membership.instanceId, attempts, this.membership.turnLeaseMs);
      // the database dates the lease from the statement: the answer may be read much later
      this.renewed(sentMs);
    } catch {
      // the watchdog stops the turns once a whole lease passed unrenewed; the next tick tries again
      return;
    }
    // a turn that ended here meanwhile is released by its runner; it was not lost
    for (const id of renewal.ended) this.held.delete(id);
    this.loseAll(renewal.kept, attempts);
  }

  /** Every turn held (at the attempts renewed, or all) but those `kept` is lost: its run is stopped. */
  private loseAll(kept: ReadonlySet<string>, attempts: ReadonlyMap<string, number> = new Map([...this.held].map(([id, { attempt }]) => [id, attempt]))): void {
    for (const [id, attempt] of attempts) {
      const entry = this.held.get(id);
      // ended meanwhile, or still held
      if (kept.has(id) || entry === undefined) continue;
      this.held.delete(id);
      this.logger.warn({ turnId: id, attempt }, 'turn lease lost: stopping the turn');
      entry.holder.lost();
    }
  }

  /**
   * Turns whose lease ran out: a cancelled one is ended, every other one is taken over and resumed
   * here (CONTRACT.md §18). Then the steps of turns that have ended are deleted.
   */
  private async sweep(): Promise<void> {
    try {
      for (const turn of await this.endExpired()) {
        if (turn.status === 'cancelled') this.logger.warn({ turnId: turn.id, attempt: turn.attempt, status: turn.status }, 'took over a cancelled turn whose lease ran out: ended it');
        else this.logger.error({ turnId: turn.id, attempt: turn.attempt, maxTakeovers: this.membership.maxTakeovers }, 'a turn whose lease ran out after its last allowed takeover: ended it failed, not resumed (does it crash its instance?)');
      }
      if (this.resumer && !this.leaving) {
        for (const taken of await takeOverExpiredTurns(this.db, this.membership.instanceId, this.membership.turnLeaseMs, this.membership)) {
          this.logger.warn({ turnId: taken.id, attempt: taken.attempt }, 'took over a turn whose lease ran out: resuming it');
          await this.resumer(taken).catch((error: unknown) => this.logger.error({ err: error, turnId: taken.id }, 'could not resume a turn taken over; its lease will run out again'));
        }
      }
      await deleteEndedTurnSteps(this.db);
    } catch {
      // the next tick tries again; a database outage is reported by the requests that meet it
    }
  }
}

/**
 * The leases this instance of a cluster holds on its turns (docs/CLUSTER.md): renewed together a
 * few times per lease, with a sweep for turns whose owner let their lease run out. A turn whose
 * lease this instance lost is stopped; whatever it still tries to write is refused by its fencing
 * number (store/turns.ts updateTurn), and the runner stands down.
 */
import type { Logger } from 'pino';
import type { Db } from '../../store/database.ts';
import { endExpiredTurns, insertLeasedTurn, renewTurnLeases } from '../../store/turn-leases.ts';
import type { TurnRecord, TurnText } from '../../domain/turn.ts';
import { nowIso } from '../../domain/ids.ts';
import type { Config } from '../../config/config.ts';

/** How an instance of a cluster holds its turns: its name, and how long a lease lasts unrenewed. */
export interface ClusterMembership {
  instanceId: string;
  turnLeaseMs: number;
}

/** How a process started with these options holds its turns: under leases with --cluster, else alone (null). */
export function clusterMembership(config: Pick<Config, 'cluster' | 'instanceId' | 'turnLeaseSeconds'>): ClusterMembership | null {
  return config.cluster ? { instanceId: config.instanceId, turnLeaseMs: config.turnLeaseSeconds * 1000 } : null;
}

export class TurnLeaseLost extends Error {
  constructor() {
    super('the turn\'s lease could not be renewed in time');
    this.name = 'TurnLeaseLost';
  }
}

/** Renewals per lease: a lease survives two missed renewals. */
const RENEWALS_PER_LEASE = 3;

export class TurnLeases {
  private readonly held = new Map<string, { attempt: number; lost: () => void }>();
  private readonly timer: NodeJS.Timeout;
  private lastRenewedMs = performance.now();
  private ticking = false;

  constructor(
    private readonly db: Db,
    private readonly membership: ClusterMembership,
    private readonly logger: Logger,
  ) {
    this.timer = setInterval(() => void this.tick(), Math.max(100, Math.floor(membership.turnLeaseMs / RENEWALS_PER_LEASE)));
    this.timer.unref();
  }

  /** Stores a new turn with this instance's lease on it; `lost` stops it if the lease goes. */
  async admit(record: TurnRecord, text: TurnText, lost: () => void): Promise<void> {
    await insertLeasedTurn(this.db, record, text, this.membership.instanceId, this.membership.turnLeaseMs);
    this.held.set(record.id, { attempt: record.attempt, lost });
  }

  /** The turn has ended (or was let go): its lease is no longer renewed. */
  release(turnId: string): void {
    this.held.delete(turnId);
  }

  stop(): void {
    clearInterval(this.timer);
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
    if (this.held.size === 0) {
      this.lastRenewedMs = performance.now();
      return;
    }
    const attempts = new Map([...this.held].map(([id, { attempt }]) => [id, attempt]));
    let kept: Set<string>;
    try {
      kept = await renewTurnLeases(this.db, this.membership.instanceId, attempts, this.membership.turnLeaseMs);
      this.lastRenewedMs = performance.now();
    } catch (error) {
      // Unrenewed past the lease, another instance may hold the turns: stop them (their own writes
      // are refused if it does; they may still land if nobody took over meanwhile).
      if (performance.now() - this.lastRenewedMs < this.membership.turnLeaseMs) return;
      this.logger.warn({ err: error, turns: attempts.size }, 'turn leases could not be renewed in time: stopping their turns');
      kept = new Set();
    }
    for (const [id, attempt] of attempts) {
      const entry = this.held.get(id);
      // ended meanwhile, or still held
      if (kept.has(id) || entry === undefined) continue;
      this.held.delete(id);
      this.logger.warn({ turnId: id, attempt }, 'turn lease lost: stopping the turn');
      entry.lost();
    }
  }

  private async sweep(): Promise<void> {
    try {
      const ended = await endExpiredTurns(this.db, nowIso());
      for (const turn of ended) this.logger.warn({ turnId: turn.id, attempt: turn.attempt }, 'took over a turn whose lease ran out: ended it as interrupted');
    } catch {
      // the next tick tries again; a database outage is reported by the requests that meet it
    }
  }
}

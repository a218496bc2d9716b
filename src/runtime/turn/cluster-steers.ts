/**
 * Steering from any instance of a cluster (CONTRACT.md §19, docs/CLUSTER.md "Steer from any
 * instance"). The instance that takes a steer stores it for the session's active turn
 * (store/turn-steers.ts) and waits for the turn's owner to say what became of it: given to the
 * turn (202 `steered`), or refused because the turn decided to end, in which case it waits for the
 * turn's end and the input becomes a turn of its own, as on a lone server. The owner gives the
 * steer to the turn at once when it took the request itself, else when the instance that took it
 * rings the doorbell (or at the supervisor's poll, should the ring be lost), like cancels and
 * answers. Every steer of a cluster goes through the table, so a retry with the
 * same clientRequestId answers the same on every instance.
 */
import type { Logger } from 'pino';
import type { Db } from '../../store/database.ts';
import { activeTurnIdOf, claimSteer, decideSteer, deleteSteer, findSteer, findSteerByClientRequestId, insertSteer, steersWaitingFor, withdrawSteerOfEndedTurn, type StoredSteer, type SteerToDeliver } from '../../store/turn-steers.ts';
import { findTurn } from '../../store/turns.ts';
import { ACTIVE_STATUSES } from '../../domain/turn-status.ts';
import { nowIso, uuidv7 } from '../../domain/ids.ts';
import type { CanonicalItem } from '../../agent/providers/types.ts';
import type { ActiveTurns } from './active-turns.ts';
import type { EventHub } from '../event-hub.ts';
import type { ClusterDuties, Duty } from '../cluster-supervisor.ts';

/** How often the instance that took a steer looks whether the owner decided, or the turn ended. */
const DECISION_POLL_MS = 50;

/** What a steer came to: given to this turn, or to be admitted as a turn of its own (null). */
export type SteerOutcome = { turnId: string } | null;

export class ClusterSteers {
  /** looks for steers taken on other instances for the turns held here */
  private readonly looking: Duty;
  /** steers being given to a turn here, so that the poll and a direct delivery do not both claim one */
  private readonly delivering = new Set<string>();

  constructor(
    private readonly db: Db,
    private readonly boundaryId: string,
    private readonly active: ActiveTurns,
    private readonly hub: EventHub,
    private readonly logger: Logger,
    private readonly duties: ClusterDuties,
  ) {
    this.looking = duties.add({ name: 'turn steers', wokenBy: ['steer'], run: () => this.poll() });
  }

  stop(): void {
    this.looking.stop();
  }

  /** The steer stored with this clientRequestId, if any. */
  find(sessionId: string, clientRequestId: string): Promise<StoredSteer | null> {
    return findSteerByClientRequestId(this.db, sessionId, clientRequestId);
  }

  /**
   * Steers `item` into the session's active turn, wherever it runs. Null when there is none, or
   * when it ended without taking the input: the caller admits the input as a turn of its own. A
   * stored steer with the same clientRequestId found meanwhile is answered as that one is.
   */
  async steer(sessionId: string, input: string, item: CanonicalItem, inputDigest: string, clientRequestId: string | undefined): Promise<SteerOutcome | StoredSteer> {
    for (;;) {
      const turnId = await activeTurnIdOf(this.db, sessionId);
      if (turnId === null) return null;
      const id = uuidv7();
      const stored = await insertSteer(this.db, { id, sessionId, turnId, clientRequestId: clientRequestId ?? null, inputDigest, input, item, createdAt: nowIso() });
      if (!stored) {
        const raced = clientRequestId === undefined ? null : await this.find(sessionId, clientRequestId);
        if (raced) return raced;
        continue;
      }
      const held = this.active.get(turnId);
      if (held) await this.deliver({ id, turnId, sessionId, input, item }, held.record.attempt);
      // the turn runs on another instance: its owner looks now
      else this.duties.ring('steer');
      return this.settle({ id, turnId });
    }
  }

  /**
   * What became of a stored steer, once its turn's owner has decided: steered into its turn, or
   * (refused because the turn decided to end, or withdrawn because it ended first) null once the
   * turn has ended, for the input to be admitted as a turn of its own.
   */
  async settle(steer: Pick<StoredSteer, 'id' | 'turnId'>): Promise<SteerOutcome> {
    for (;;) {
      const stored = await findSteer(this.db, steer.id);
      if (stored?.status === 'steered') return { turnId: steer.turnId };
      if (stored === null || stored.status === 'refused') {
        // the turn's end holds the clientRequestId's answer no more: the turn the input becomes does
        if (stored) await deleteSteer(this.db, steer.id);
        await this.turnEnded(steer.turnId);
        return null;
      }
      if (await withdrawSteerOfEndedTurn(this.db, steer.id, steer.turnId)) return null;
      await new Promise((resolve) => setTimeout(resolve, DECISION_POLL_MS));
    }
  }

  private async turnEnded(turnId: string): Promise<void> {
    for (;;) {
      const turn = await findTurn(this.db, this.boundaryId, turnId);
      if (!turn || !ACTIVE_STATUSES.includes(turn.status)) return;
      await new Promise((resolve) => setTimeout(resolve, DECISION_POLL_MS));
    }
  }

  /**
   * Gives a steer to a turn held here: claimed under the turn's attempt, then offered to its
   * inbox (synchronously, so the turn takes it or has closed), then the decision is stored and,
   * when taken, `turn.steered` published as on a lone server.
   */
  private async deliver(steer: SteerToDeliver, attempt: number): Promise<void> {
    if (this.delivering.has(steer.id)) return;
    this.delivering.add(steer.id);
    try {
      if (!(await claimSteer(this.db, steer.id, steer.turnId, attempt))) return;
      const turn = this.active.get(steer.turnId);
      const taken = turn !== undefined && turn.record.attempt === attempt && turn.steering.offer(steer.item);
      if (taken) this.hub.emitText('turn.steered', steer.sessionId, steer.turnId, steer.input);
      await decideSteer(this.db, steer.id, attempt, taken ? 'steered' : 'refused');
    } finally {
      this.delivering.delete(steer.id);
    }
  }

  /** Steers taken by other instances (or before a takeover) reach the turns held here. */
  private async poll(): Promise<void> {
    const ids = this.active.ids();
    if (ids.length === 0) return;
    try {
      const held = new Map(ids.flatMap((id) => {
        const turn = this.active.get(id);
        return turn ? [[id, turn.record.attempt] as const] : [];
      }));
      for (const steer of await steersWaitingFor(this.db, held)) await this.deliver(steer, held.get(steer.turnId)!);
    } catch (error) {
      // the next poll tries again; a database outage is reported by the requests that meet it
      this.logger.debug({ err: error }, 'could not look for steers');
    }
  }
}

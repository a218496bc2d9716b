/**
 * --cluster: a turn's claim is its lease (turn-leases.ts TurnLeases, renewed with the others this
 * instance holds) and the fence (store/turn-fence.ts): the turn starts a model request or a tool
 * call only while its lease, as last renewed here, is still its own (confirm), so that an owner
 * held up past its lease (frozen, starved) starts nothing another instance may now be doing; each
 * step is journalled and each state short of the end stored under the turn's attempt, for other
 * instances to read and resume from; a write the fence refuses means another instance took the
 * turn over, and the claim is lost (docs/CLUSTER.md "Fenced turn ownership").
 */
import type { Logger } from 'pino';
import type { ProviderAdapter } from '../../agent/providers/types.ts';
import { DEFAULT_BOUNDARY_ID } from '../boundary.ts';
import type { Db } from '../../store/database.ts';
import type { Limits } from '../../config/config.ts';
import type { TurnRecord, TurnText } from '../../domain/turn.ts';
import { appendTurnStep } from '../../store/turn-steps.ts';
import { updateTurn } from '../../store/turns.ts';
import { isStoreUnavailable } from '../../store/unavailable.ts';
import type { TakenTurn } from '../../store/turn-leases.ts';
import type { ActiveTurn } from './active-turns.ts';
import type { TurnTools } from './tool-port.ts';
import type { LeaseHolder, TurnLeases } from './turn-leases.ts';
import { claimLostOf, TurnClaimLost } from './claim-lost.ts';
import { type ClaimedAdmission, type ClaimHolder, type OlderQueuedTurn, type ResumedTurn, type StepJournal, type TurnClaim, type TurnClaims } from './turn-claim.ts';

/** One turn held by this instance of a cluster: TurnLeases tells it (as its LeaseHolder) of a lost lease or a cancel. */
class ClusterClaim implements TurnClaim, LeaseHolder {
  readonly attempt: number;
  private holder: ClaimHolder | null = null;
  /** heard before the runner held the claim */
  private early: { lost?: TurnClaimLost; cancelRequested?: boolean } = {};
  /** the states shown, stored one after another */
  private states: Promise<void> = Promise.resolve();

  constructor(
    private readonly turn: ActiveTurn,
    private readonly leases: TurnLeases,
    private readonly db: Db,
    private readonly logger: Logger,
  ) {
    this.attempt = turn.record.attempt;
  }

  heldBy(holder: ClaimHolder): void {
    this.holder = holder;
    const { lost, cancelRequested } = this.early;
    this.early = {};
    if (lost) holder.lost(lost);
    else if (cancelRequested) holder.cancelRequested();
  }

  lost(): void {
    this.lose(new TurnClaimLost('lease_lost'));
  }

  cancelRequested(): void {
    if (this.holder) this.holder.cancelRequested();
    else this.early.cancelRequested = true;
  }

  private lose(lost: TurnClaimLost): void {
    if (this.holder) this.holder.lost(lost);
    else this.early.lost ??= lost;
  }

  confirm(): Promise<void> {
    return this.leases.confirm(this.turn.record.id);
  }

  confirming(adapter: ProviderAdapter): ProviderAdapter {
    const confirm = () => this.confirm();
    return {
      dialect: adapter.dialect,
      async *stream(request, signal) {
        await confirm();
        yield* adapter.stream(request, signal);
      },
    };
  }

  confirmingTools(tools: TurnTools): TurnTools {
    return {
      specs: () => tools.specs(),
      planMode: () => tools.planMode(),
      execute: async (call) => {
        await this.confirm();
        return tools.execute(call);
      },
    };
  }

  /** Each step under the turn's attempt (CONTRACT.md §18); a refused one stops the run. */
  journal(recorded: number): StepJournal {
    const { turn } = this;
    let seq = recorded;
    return async (step) => {
      const receipt = step.modelStep === null ? turn.receipt?.snapshot() : undefined;
      await this.whileRunning(() => this.write(() => appendTurnStep(this.db, turn.record.id, this.attempt, { seq, ...step, ...(receipt === undefined ? {} : { receipt }) })));
      seq++;
    };
  }

  /** Other instances answer the turn from its row: each state short of the end is stored too, in order. */
  show(record: TurnRecord): void {
    this.states = this.states.then(() =>
      this.write(() => updateTurn(this.db, record)).catch((error: unknown) => {
        if (!(error instanceof TurnClaimLost)) this.logger.warn({ err: error, turnId: record.id }, 'could not store the turn\'s status; its end is stored all the same');
      }),
    );
  }

  shown(): Promise<void> {
    return this.states;
  }

  /** A refused write means another instance took the turn over: the run stops, and the write throws TurnClaimLost. */
  async write<T>(write: () => Promise<T>): Promise<T> {
    try {
      return await write();
    } catch (error) {
      const lost = claimLostOf(error);
      if (lost instanceof TurnClaimLost) this.lose(lost);
      throw lost;
    }
  }

  release(): void {
    this.leases.release(this.turn.record.id);
  }

  /**
   * The database not answering while the run journals a step or stores a human request does not
   * fail the turn: the run stops as on any lost claim, its lease is no longer renewed, and once it
   * has run out the turn is resumed from its journal by whichever instance sweeps it next (this one
   * included), as after a death. Its end is left alone: the terminal write keeps trying by itself
   * (store/eventual-turn-write.ts).
   */
  async whileRunning<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      if (!isStoreUnavailable(error)) throw error;
      const lost = new TurnClaimLost('store_unreachable', { cause: error });
      this.lose(lost);
      throw lost;
    }
  }
}

/** What of its boundary a cluster's claims use: its store, and its queue limits counted in the database. */
interface ClaimedBoundary {
  db: Db;
  id: string;
  limits: Pick<Limits, 'maxQueuedTurns' | 'maxQueuedTurnsPerTenant'>;
}

export interface ClusterClaimsDeps {
  boundary: ClaimedBoundary;
  leases: TurnLeases;
  logger: Logger;
  /** loads a turn just taken over and reserves it here under `hold`'s claim (turn-resume.ts TurnResumption.prepare) */
  prepare(taken: TakenTurn, hold: (turn: ActiveTurn) => TurnClaim): Promise<ResumedTurn | null>;
}

/** The claims of a boundary of a cluster: each turn under its lease. */
export class ClusterClaims implements TurnClaims {
  constructor(private readonly deps: ClusterClaimsDeps) {}

  /** Stores the turn with this instance's lease on it (TurnLeases.admit): 409 session_busy while another turn of its session is active anywhere. */
  async admit(turn: ActiveTurn, text: TurnText): Promise<ClaimedAdmission> {
    const { boundary, leases, logger } = this.deps;
    const claim = new ClusterClaim(turn, leases, boundary.db, logger);
    // another instance can start it from its row alone unless it carries images or files
    const movable = turn.attachments.images.length === 0 && turn.attachments.files.length === 0;
    const { queueFull, session } = await leases.admit(turn.record, text, claim, this.queueLimit(), movable);
    return { claim, queueFull, session };
  }

  /** A turn just taken over (its attempt raised, its lease this instance's): reserved here under its claim, or null when it is not ours to run. */
  resumed(taken: TakenTurn): Promise<ResumedTurn | null> {
    return this.deps.prepare(taken, (turn) => this.hold(turn));
  }

  readonly olderQueued: OlderQueuedTurn = async (turn) => {
    const taken = await this.deps.leases.takeQueuedBefore(this.deps.boundary.id, turn.record.createdAt);
    return taken ? this.resumed(taken) : null;
  };

  private hold(turn: ActiveTurn): TurnClaim {
    const { boundary, leases, logger } = this.deps;
    const claim = new ClusterClaim(turn, leases, boundary.db, logger);
    leases.hold(turn.record.id, turn.record.attempt, claim);
    return claim;
  }

  /**
   * The queue limit a cluster counts in the database (CONTRACT.md §18): the server's queue in
   * single-user mode, the tenant's in multi-tenant mode (tenants' databases are apart, so the
   * server-wide queue of a multi-tenant host stays counted per instance).
   */
  private queueLimit(): number {
    const { id, limits } = this.deps.boundary;
    return id === DEFAULT_BOUNDARY_ID ? limits.maxQueuedTurns : limits.maxQueuedTurnsPerTenant;
  }
}

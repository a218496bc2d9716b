/**
 * However a turn stops being this instance's, the runtime hears it one way (turn-claim.ts). Apart,
 * with nothing of the runtime imported, so that whatever meets the loss (the tools' port, the
 * leases, the requests' broker) can name it.
 */
import { StaleTurnWrite } from '../../store/turn-fence.ts';

/**
 * How a turn stopped being this instance's: its lease was not renewed in time (or a renewal found
 * it gone), the fence refused a write of it (another instance took it over), this instance is
 * stopping and hands it over (SIGTERM in a live cluster), or the database did not answer while the
 * run journalled a step of the turn or stored a human request, so the run stops and the lease is
 * left for the next sweep (this instance's included) to resume the turn from its journal.
 */
type ClaimLoss = 'lease_lost' | 'taken_over' | 'handed_over' | 'store_unreachable';

const LOSSES: Record<ClaimLoss, string> = {
  lease_lost: 'the turn\'s lease could not be renewed in time',
  taken_over: 'another instance took the turn over',
  handed_over: 'the instance is stopping and hands the turn over',
  store_unreachable: 'the database could not be reached for the turn',
};

/** What the log says as a turn whose end is its next owner's is let go. */
const LET_GO: Partial<Record<ClaimLoss, string>> = {
  handed_over: 'turn handed over to another instance',
  store_unreachable: 'the database could not be reached for the turn: its lease is left for the next sweep to resume it',
};

/** The turn is no longer this instance's: its run stops, and nothing more of it is published here. */
export class TurnClaimLost extends Error {
  constructor(readonly loss: ClaimLoss, options?: ErrorOptions) {
    super(LOSSES[loss], options);
    this.name = 'TurnClaimLost';
  }

  /**
   * Handed over, or let go for want of the database, the turn's end is its next owner's: this
   * instance does not even try to store it. Otherwise the end is tried, and the fence decides (an
   * owner whose renewals merely failed may still hold the turn).
   */
  get endsElsewhere(): boolean {
    return this.loss in LET_GO;
  }

  /** The log's line as the turn is let go, its end left to its next owner. */
  get letGoLine(): string {
    return LET_GO[this.loss] ?? this.message;
  }
}

/** The fence's refusal, as the runtime sees it. */
export function claimLostOf(error: unknown): unknown {
  return error instanceof StaleTurnWrite ? new TurnClaimLost('taken_over', { cause: error }) : error;
}

/**
 * However a turn stops being this instance's, the runtime hears it one way (turn-claim.ts). Apart,
 * with nothing of the runtime imported, so that whatever meets the loss (the tools' port, the
 * leases, the requests' broker) can name it.
 */
import { StaleTurnWrite } from '../../store/turn-fence.ts';

/**
 * How a turn stopped being this instance's: its lease was not renewed in time (or a renewal found
 * it gone), the fence refused a write of it (another instance took it over), or this instance is
 * stopping and hands it over (SIGTERM in a live cluster).
 */
type ClaimLoss = 'lease_lost' | 'taken_over' | 'handed_over';

const LOSSES: Record<ClaimLoss, string> = {
  lease_lost: 'the turn\'s lease could not be renewed in time',
  taken_over: 'another instance took the turn over',
  handed_over: 'the instance is stopping and hands the turn over',
};

/** The turn is no longer this instance's: its run stops, and nothing more of it is published here. */
export class TurnClaimLost extends Error {
  constructor(readonly loss: ClaimLoss, options?: ErrorOptions) {
    super(LOSSES[loss], options);
    this.name = 'TurnClaimLost';
  }

  /**
   * Handed over, the turn's end is its next owner's: this instance does not even try to store it.
   * Otherwise the end is tried, and the fence decides (an owner whose renewals merely failed may
   * still hold the turn).
   */
  get endsElsewhere(): boolean {
    return this.loss === 'handed_over';
  }
}

/** The fence's refusal, as the runtime sees it. */
export function claimLostOf(error: unknown): unknown {
  return error instanceof StaleTurnWrite ? new TurnClaimLost('taken_over', { cause: error }) : error;
}

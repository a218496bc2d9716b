import type { CanonicalItem } from '../../agent/providers/types.ts';
import type { SteeringInbox } from '../../agent/loop.ts';

/**
 * The input clients steered into one turn (CONTRACT.md §19), between its acceptance and the model
 * request that shows it. Open from the turn's reservation until its agent loop decides to end; a
 * steer that finds it closed waits for the turn's end and becomes a turn of its own. Everything
 * here is synchronous, so a steer is either taken by the loop or refused, never lost in between.
 */
export class TurnSteering implements SteeringInbox {
  private pending: CanonicalItem[] = [];
  private closed: boolean;

  /** `open` false: a turn that runs no agent loop (`/compact`, `/clear`) takes no steered input. */
  constructor(open = true) {
    this.closed = !open;
  }

  /** Accepts a user message for the turn's next model request; false once the turn is ending. */
  offer(message: CanonicalItem): boolean {
    if (this.closed) return false;
    this.pending.push(message);
    return true;
  }

  take(): CanonicalItem[] {
    const taken = this.pending;
    this.pending = [];
    return taken;
  }

  closeUnlessPending(): boolean {
    if (this.pending.length === 0) this.closed = true;
    return this.closed;
  }

  close(): CanonicalItem[] {
    this.closed = true;
    return this.take();
  }
}

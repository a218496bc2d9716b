import type { ServerResponse } from 'node:http';
import { flushAtPassEnd } from '../runtime/pass-end.ts';

/**
 * Holds the SSE frames written to event streams during one pass of the event loop and lets each
 * stream's frames leave in one socket write when the pass's I/O callbacks are done (pass-end.ts,
 * after any fan-out the pass resumed).
 * Without it every callback that produced frames (a POST's turn.queued, a model answer's deltas,
 * another turn's end) flushed its own write at the next tick; under load several such callbacks
 * run in one pass, and on a machine where a socket write costs a wake-up of its reader, one write
 * instead of several is the saving. Nothing waits for a timer: a frame leaves in the pass that
 * wrote it, once that pass's callbacks have run, or after HOLD_MS in a pass that runs long. (A turn's first frames now leave after its model
 * request rather than before it, one socket write off the turn's path.)
 */
/** The longest a stream's frames are held in a long pass (a saturated fan-out) before they leave. */
const HOLD_MS = 2;
/** The clock is read once per this many frames written to held streams. */
const FRAMES_PER_CLOCK_READ = 32;

export class FrameBatch {
  private readonly held = new Set<ServerResponse>();
  private scheduled = false;
  private heldSince = 0;
  private frames = 0;
  private readonly flush = (): void => {
    this.scheduled = false;
    for (const response of this.held) response.uncork();
    this.held.clear();
  };

  /**
   * Corks `response` until the end of this pass, unless it already is; true when it was not yet
   * held. Called before each frame written to the stream.
   */
  hold(response: ServerResponse): boolean {
    if (this.held.size > 0 && ++this.frames % FRAMES_PER_CLOCK_READ === 0 && performance.now() - this.heldSince > HOLD_MS) this.flush();
    if (this.held.has(response)) return false;
    if (this.held.size === 0) this.heldSince = performance.now();
    response.cork();
    this.held.add(response);
    if (!this.scheduled) {
      this.scheduled = true;
      flushAtPassEnd(this.flush);
    }
    return true;
  }
}

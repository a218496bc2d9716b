import type { ServerResponse } from 'node:http';
import type { PassEnd } from './pass-end.ts';

/** The longest a stream's frames are held in a long pass (a saturated fan-out) before they leave. */
const HOLD_MS = 2;
/** The clock is read once per this many frames held. */
const FRAMES_PER_CLOCK_READ = 32;
/** Held frames of one stream past this many characters leave at once, as large frames always did. */
const HOLD_CHARS = 16_384;

/**
 * Holds the SSE frames written to event streams during one pass of the event loop and writes each
 * stream's frames as one chunk, in one socket write, when the pass's I/O callbacks are done
 * (pass-end.ts, after any fan-out the pass resumed). Without it every callback that produced
 * frames (a POST's turn.queued, a model answer's deltas, another turn's end) flushed its own write
 * at the next tick; under load several such callbacks run in one pass, and on a machine where a
 * socket write costs a wake-up of its reader, one write instead of several is the saving.
 *
 * Nothing waits for a timer: a frame leaves in the pass that wrote it, once that pass's callbacks
 * have run, or sooner when its stream holds HOLD_CHARS or has been held HOLD_MS. (A turn's first
 * frames now leave after its model request rather than before it, one socket write off the turn's
 * path.) Frames are held here rather than by corking the socket, so a held frame never makes the
 * stream look saturated: `write` answers false only when the stream itself needs to drain.
 */
export class FrameBatch {
  private readonly held = new Map<ServerResponse, string>();
  private heldSince = 0;
  private frames = 0;
  private readonly flush = (): void => {
    for (const [response, frames] of this.held) send(response, frames);
    this.held.clear();
  };

  constructor(private readonly passEnd: PassEnd) {}

  /** Takes one frame for `response`; false when the stream needs to drain before it takes more. */
  write(response: ServerResponse, frame: string): boolean {
    if (this.held.size > 0 && ++this.frames % FRAMES_PER_CLOCK_READ === 0 && performance.now() - this.heldSince > HOLD_MS) this.flush();
    const frames = (this.held.get(response) ?? '') + frame;
    if (frames.length >= HOLD_CHARS) {
      this.held.delete(response);
      return send(response, frames);
    }
    // The first frame held since the last flush books the next one (a second booking in one pass,
    // after an early flush, finds nothing or the frames held since).
    if (this.held.size === 0) {
      this.heldSince = performance.now();
      this.passEnd.flush(this.flush);
    }
    this.held.set(response, frames);
    return !response.writableNeedDrain;
  }

  /** Writes the frames held for `response` now: before a stream is ended, its last frames go first. */
  release(response: ServerResponse): void {
    const frames = this.held.get(response);
    if (frames === undefined) return;
    this.held.delete(response);
    send(response, frames);
  }
}

/** A stream destroyed (or ended without a release) while its frames were held has no reader left for them. */
function send(response: ServerResponse, frames: string): boolean {
  if (response.writableEnded || response.destroyed) return false;
  return response.write(frames);
}

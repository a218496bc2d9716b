import type { FastifyReply } from 'fastify';
import { ApiError } from '../domain/errors.ts';
import { isTerminal } from '../domain/turn-lifecycle.ts';
import type { EventLog } from '../events/event-log.ts';
import type { TurnRecord } from '../domain/turn.ts';

/** The longest `?wait=` of GET /v1/turns/:id/result, in seconds (CONTRACT.md §24). */
const MAX_WAIT_SECONDS = 60;

/** An SSE frame of a turn's end: `event: turn.completed` (and failed, cancelled). */
const TERMINAL_FRAME = /\nevent: turn\.(completed|failed|cancelled)\n/;

/**
 * `GET /v1/turns/:id/result?wait=SECONDS`: requests held until their turn ends, the wait runs out,
 * the client goes away or the server stops. They are counted per boundary, like event streams, so
 * a client cannot pile them up: past the cap the answer is 429 `too_many_waits`.
 */
export class TurnWaits {
  private readonly perBoundary = new Map<string, number>();
  private readonly ends = new Set<() => void>();

  constructor(
    /** waiting requests a boundary may hold (--max-event-subscribers, or its per-tenant share) */
    readonly maxPerBoundary: number,
  ) {}

  /**
   * Resolves when `read()` finds the turn terminal (read again at each turn end of its session on
   * the boundary's event log), or when the wait ends otherwise; the caller answers from the turn
   * it then reads.
   */
  async wait(options: { boundaryId: string; log: EventLog; sessionId: string; seconds: number; reply: FastifyReply; read: () => Promise<TurnRecord> }): Promise<void> {
    const held = this.perBoundary.get(options.boundaryId) ?? 0;
    if (held >= this.maxPerBoundary) {
      throw new ApiError('too_many_waits', `at most ${this.maxPerBoundary} requests may wait for turns at once; wait without ?wait, or on the event stream`);
    }
    this.perBoundary.set(options.boundaryId, held + 1);
    let end!: () => void;
    const ended = new Promise<void>((resolve) => (end = resolve));
    // subscribed before the first read, so an end between the two is not missed
    const subscription = options.log.subscribe(
      null,
      {
        write: (frame) => {
          if (TERMINAL_FRAME.test(frame)) void readAgain();
          return true;
        },
        onDrain: () => undefined,
      },
      { sessionId: options.sessionId },
    );
    const readAgain = async () => {
      try {
        if (isTerminal((await options.read()).status)) end();
      } catch {
        end();
      }
    };
    const timer = setTimeout(end, options.seconds * 1000);
    const response = options.reply.raw;
    response.once('close', end);
    this.ends.add(end);
    try {
      await readAgain();
      await ended;
    } finally {
      clearTimeout(timer);
      subscription.close();
      response.off('close', end);
      this.ends.delete(end);
      const left = (this.perBoundary.get(options.boundaryId) ?? 1) - 1;
      if (left === 0) this.perBoundary.delete(options.boundaryId);
      else this.perBoundary.set(options.boundaryId, left);
    }
  }

  /** The server stops: every wait answers now, with what the turn is. */
  endAll(): void {
    for (const end of [...this.ends]) end();
  }
}

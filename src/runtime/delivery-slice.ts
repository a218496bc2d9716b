/**
 * How long event delivery may hold the event loop in one turn of it. Fan-out of new events and
 * the flushes of drained subscribers share one slice per event log: once it is spent, the rest
 * waits for the next turn (setImmediate), so requests and timers still run while a thousand
 * subscribers are fed, and a thousand sockets that drain together cannot take thirty seconds
 * between two requests.
 */

/** The longest delivery holds the event loop before letting requests and timers run. */
const SLICE_MS = 10;
/** The clock is read once per this many writes (a socket write costs a few microseconds). */
const WRITES_PER_CLOCK_READ = 32;

export class DeliverySlice {
  private writes = 0;
  private startedAt = 0;
  private waiting: (() => void)[] = [];

  /** Counts one write; the first of a turn starts the slice and books its end. */
  countWrite(): void {
    this.writes += 1;
    if (this.writes > 1) return;
    this.startedAt = performance.now();
    setImmediate(() => this.nextTurn());
  }

  get spent(): boolean {
    if (this.writes === 0 || this.writes % WRITES_PER_CLOCK_READ !== 0) return false;
    return performance.now() - this.startedAt > SLICE_MS;
  }

  /** Runs `resume` in the next turn of the event loop, after the slice has been renewed. */
  defer(resume: () => void): void {
    this.waiting.push(resume);
  }

  private nextTurn(): void {
    this.writes = 0;
    const waiting = this.waiting;
    this.waiting = [];
    for (const resume of waiting) resume();
  }
}

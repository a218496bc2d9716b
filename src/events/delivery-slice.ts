/**
 * How long the fan-out of new events may hold the event loop in one turn of it: once the slice
 * is spent, the rest waits for the next turn (the end of this pass, pass-end.ts), so requests and
 * timers still run while a thousand subscribers are fed.
 */
import type { PassEnd } from './pass-end.ts';

/** The longest delivery holds the event loop before letting requests and timers run. */
const SLICE_MS = 10;
/** The clock is read once per this many deliveries (a socket write costs a few microseconds). */
const WRITES_PER_CLOCK_READ = 32;

export class DeliverySlice {
  private writes = 0;
  private startedAt = 0;
  private over = false;
  private waiting: (() => void)[] = [];
  private readonly renew = (): void => this.nextTurn();

  constructor(private readonly passEnd: PassEnd) {}

  /** Counts one delivery; the first of a turn starts the slice and books its end. */
  countDelivery(): void {
    this.writes += 1;
    if (this.writes > 1) return;
    this.startedAt = performance.now();
    this.passEnd.resume(this.renew);
  }

  get spent(): boolean {
    if (this.over) return true;
    if (this.writes === 0 || this.writes % WRITES_PER_CLOCK_READ !== 0) return false;
    this.over = performance.now() - this.startedAt > SLICE_MS;
    return this.over;
  }

  /** Runs `resume` in the next turn of the event loop, after the slice has been renewed. */
  defer(resume: () => void): void {
    this.waiting.push(resume);
  }

  private nextTurn(): void {
    this.writes = 0;
    this.over = false;
    const waiting = this.waiting;
    this.waiting = [];
    for (const resume of waiting) resume();
  }
}

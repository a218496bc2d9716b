/**
 * One live subscriber of an event log: writes straight through while its sink keeps up, queues
 * (bounded) while not, and owes a `replay.reset` once it has lost a frame.
 */

import { REPLAY_RESET_FRAME } from './sse-frame.ts';
import type { EventRecord, EventSink, Subscription } from './event-record.ts';
import type { SubscriberRegistry } from './subscriber-registry.ts';

export class Subscriber implements Subscription {
  private readonly queue: FrameQueue;
  private waitingForDrain = false;
  /** Frames were dropped; a replay.reset goes out before the next frame. */
  private gap = false;
  private isClosed = false;
  /**
   * The id of the newest event this subscriber was handed (live or replayed): the
   * log's fan-out runs behind its appends under load, so an event may reach it after a replay did.
   */
  handedThrough: number;
  private readonly resume = (): void => this.flush();

  constructor(
    private readonly sink: EventSink,
    capacity: number,
    private readonly registry: SubscriberRegistry<Subscriber>,
    readonly sessionId: string | null,
    private readonly onReset: (() => void) | undefined,
    newestId: number,
  ) {
    this.queue = new FrameQueue(capacity);
    this.handedThrough = newestId;
  }

  wants(record: EventRecord): boolean {
    return this.sessionId === null || record.sessionId === this.sessionId;
  }

  get closed(): boolean {
    return this.isClosed;
  }

  get queuedFrames(): number {
    return this.queue.size;
  }

  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.registry.delete(this);
    this.queue.clear();
  }

  /** Delivers a live event unless it is not wanted or was already handed over; true when it was. */
  deliverEvent(record: EventRecord, frame: string): boolean {
    if (this.isClosed || record.id <= this.handedThrough || !this.wants(record)) return false;
    this.handedThrough = record.id;
    this.deliver(frame);
    return true;
  }

  deliver(frame: string): void {
    if (this.isClosed) return;
    // Anything already waiting goes first, even if a sink re-entered us while it was being flushed.
    if (!this.waitingForDrain && this.queue.size === 0) {
      if (this.gap) {
        this.gap = false;
        this.write(REPLAY_RESET_FRAME);
      }
      if (!this.waitingForDrain) {
        this.write(frame);
        return;
      }
    }
    if (this.queue.pushDroppingOldest(frame)) this.noteGap();
  }

  private noteGap(): void {
    if (this.gap) return;
    this.gap = true;
    this.onReset?.();
  }

  /**
   * Writes what waited, right when the sink drains. Not sliced like the fan-out: a socket left
   * idle for a turn of the event loop loses throughput, and its queue would overflow (measured:
   * a fast consumer of 16 KB frames then lost deltas).
   */
  private flush(): void {
    this.waitingForDrain = false;
    while (!this.isClosed && !this.waitingForDrain) {
      if (this.gap) {
        this.gap = false;
        this.write(REPLAY_RESET_FRAME);
        continue;
      }
      const frame = this.queue.shift();
      if (frame === undefined) return;
      this.write(frame);
    }
  }

  /** A sink that throws is treated as gone: the appender and other subscribers carry on. */
  private write(frame: string): void {
    try {
      if (this.sink.write(frame)) return;
      this.waitingForDrain = true;
      this.sink.onDrain(this.resume);
    } catch {
      this.close();
    }
  }
}

/**
 * A ring buffer of frames that, when full, drops its oldest frame to make room. Its slots are
 * allocated the first time a frame waits and kept until the subscription closes.
 */
class FrameQueue {
  private slots: (string | undefined)[] | null = null;
  private head = 0;
  size = 0;

  constructor(private readonly capacity: number) {}

  /** Appends a frame; true when the oldest frame had to be dropped for it. */
  pushDroppingOldest(frame: string): boolean {
    this.slots ??= new Array<string | undefined>(this.capacity);
    if (this.size === this.capacity) {
      this.slots[this.head] = frame;
      this.head = (this.head + 1) % this.capacity;
      return true;
    }
    this.slots[(this.head + this.size) % this.capacity] = frame;
    this.size += 1;
    return false;
  }

  shift(): string | undefined {
    if (this.size === 0 || this.slots === null) return undefined;
    const frame = this.slots[this.head];
    this.slots[this.head] = undefined;
    this.head = (this.head + 1) % this.capacity;
    this.size -= 1;
    return frame;
  }

  clear(): void {
    this.slots = null;
    this.head = 0;
    this.size = 0;
  }
}

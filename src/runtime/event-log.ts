/**
 * The event log of one access boundary (CONTRACT.md §6): assigns ids, keeps a bounded replay
 * window, and fans each event out to live subscribers.
 *
 * Each event is serialised once, at append; delivery hands the same frame string to every
 * subscriber. A subscriber whose consumer signals backpressure gets a bounded queue of pending
 * frames; when that overflows, its oldest frames are dropped and a `replay.reset` is written
 * before the next event, so a slow consumer never holds up the appender or the other subscribers.
 */

import { REPLAY_RESET_FRAME, formatEventFrame, isValidEventType } from './sse-frame.ts';

export { KEEP_ALIVE_FRAME, REPLAY_RESET_FRAME } from './sse-frame.ts';

export interface EventRecord {
  id: number;
  type: string;
  turnId: string | null;
  sessionId: string | null;
  at: string;
  data: unknown;
}

export interface EventFields {
  turnId?: string | null;
  sessionId?: string | null;
  data?: unknown;
}

/** Where a subscriber's frames go: for HTTP, the response stream. */
export interface EventSink {
  /**
   * Takes one frame. Returns false when the consumer is saturated: the frame is still taken, but
   * no more are written until the sink calls the function it was given through onDrain.
   */
  write(frame: string): boolean;
  /**
   * Called after write returned false, once per saturation; the sink calls `resume` (later, not
   * from inside onDrain) when it drains, e.g. `res.once('drain', resume)`.
   */
  onDrain(resume: () => void): void;
}

export interface Subscription {
  /** Stops delivery and releases everything the log held for this subscriber. Idempotent. */
  close(): void;
  /** Frames waiting for the consumer to drain. */
  readonly queuedFrames: number;
  readonly closed: boolean;
}

export interface SubscriptionFilter {
  /** Only events of this session; replay.reset frames still go out as they would unfiltered. */
  sessionId?: string | null;
}

export interface EventLogOptions {
  /** Events kept for replay, and frames a saturated subscriber may have queued. */
  replayLimit: number;
  /** The next id to assign; the caller persists the counter so ids never repeat across restarts. */
  firstId: number;
  now?: () => Date;
  /** told each time a subscriber too slow to keep up loses frames (and will get a replay.reset) */
  onSlowSubscriberReset?: () => void;
}

export class EventLog {
  readonly replayLimit: number;
  private readonly now: () => Date;
  private nextId: number;
  /** Ring buffers of the retained window; slot `(start + i) % replayLimit` holds the i-th oldest. */
  private readonly records: EventRecord[] = [];
  private readonly frames: string[] = [];
  private start = 0;
  private count = 0;
  private readonly subscribers = new Set<Subscriber>();
  private readonly onSlowSubscriberReset: (() => void) | undefined;

  constructor(options: EventLogOptions) {
    if (!Number.isSafeInteger(options.replayLimit) || options.replayLimit < 1) {
      throw new RangeError('replayLimit must be a positive integer');
    }
    if (!Number.isSafeInteger(options.firstId) || options.firstId < 1) {
      throw new RangeError('firstId must be a positive integer');
    }
    this.replayLimit = options.replayLimit;
    this.nextId = options.firstId;
    this.now = options.now ?? (() => new Date());
    this.onSlowSubscriberReset = options.onSlowSubscriberReset;
  }

  /** The id of the latest event; firstId - 1 before the first append. */
  get newestId(): number {
    return this.nextId - 1;
  }

  get oldestRetainedId(): number | null {
    return this.count === 0 ? null : this.nextId - this.count;
  }

  get subscriberCount(): number {
    return this.subscribers.size;
  }

  /** Records an event, retains it for replay and delivers it to every subscriber. */
  append(type: string, fields: EventFields = {}): EventRecord {
    if (!isValidEventType(type)) throw new TypeError(`invalid event type ${JSON.stringify(type)}`);
    const record: EventRecord = {
      id: this.nextId,
      type,
      turnId: fields.turnId ?? null,
      sessionId: fields.sessionId ?? null,
      at: this.now().toISOString(),
      data: fields.data ?? {},
    };
    // Serialising first means a value JSON cannot hold throws before the id is used up.
    const frame = formatEventFrame(record);
    this.nextId += 1;
    this.retain(record, frame);
    for (const subscriber of this.subscribers) if (subscriber.wants(record)) subscriber.deliver(frame);
    return record;
  }

  /**
   * Starts delivery to `sink`. With `lastEventId` null only live events follow; with an id, the
   * retained events after it are written first (after a `replay.reset` when the id cannot be
   * resumed from), and live events continue without a gap or a repeat. A filter narrows both the
   * replay and the live events; ids and the reset rules stay those of the whole log.
   */
  subscribe(lastEventId: number | null, sink: EventSink, filter: SubscriptionFilter = {}): Subscription {
    if (lastEventId !== null && (!Number.isSafeInteger(lastEventId) || lastEventId < 0)) {
      throw new RangeError('lastEventId must be a non-negative integer or null');
    }
    const subscriber = new Subscriber(sink, this.replayLimit, this.subscribers, filter.sessionId ?? null, this.onSlowSubscriberReset);
    this.subscribers.add(subscriber);
    if (lastEventId !== null) this.replay(lastEventId, subscriber);
    return subscriber;
  }

  /** The retained events with an id above `afterId`, oldest first. */
  eventsAfter(afterId: number): EventRecord[] {
    const result: EventRecord[] = [];
    for (let index = this.firstIndexAfter(afterId); index < this.count; index += 1) {
      result.push(this.records[this.slot(index)]);
    }
    return result;
  }

  private replay(lastEventId: number, subscriber: Subscriber): void {
    if (this.needsReset(lastEventId)) subscriber.deliver(REPLAY_RESET_FRAME);
    for (let index = this.firstIndexAfter(lastEventId); index < this.count && !subscriber.closed; index += 1) {
      const slot = this.slot(index);
      if (subscriber.wants(this.records[slot])) subscriber.deliver(this.frames[slot]);
    }
  }

  private needsReset(lastEventId: number): boolean {
    const oldest = this.oldestRetainedId;
    if (oldest === null) return lastEventId > 0;
    return lastEventId < oldest - 1 || lastEventId > this.newestId;
  }

  /** Window position of the first retained event with an id above `afterId`. */
  private firstIndexAfter(afterId: number): number {
    const oldest = this.oldestRetainedId;
    if (oldest === null) return 0;
    return Math.min(this.count, Math.max(0, afterId + 1 - oldest));
  }

  private slot(index: number): number {
    return (this.start + index) % this.replayLimit;
  }

  private retain(record: EventRecord, frame: string): void {
    if (this.count < this.replayLimit) {
      this.records.push(record);
      this.frames.push(frame);
      this.count += 1;
      return;
    }
    this.records[this.start] = record;
    this.frames[this.start] = frame;
    this.start = (this.start + 1) % this.replayLimit;
  }
}

/** One subscriber: writes straight through while its sink keeps up, queues (bounded) while not. */
class Subscriber implements Subscription {
  private readonly queue: FrameQueue;
  private waitingForDrain = false;
  /** Frames were dropped; a replay.reset goes out before the next frame. */
  private gap = false;
  private isClosed = false;
  private readonly resume = (): void => this.flush();

  constructor(
    private readonly sink: EventSink,
    capacity: number,
    private readonly registry: Set<Subscriber>,
    private readonly sessionId: string | null,
    private readonly onReset: (() => void) | undefined,
  ) {
    this.queue = new FrameQueue(capacity);
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

  deliver(frame: string): void {
    if (this.isClosed) return;
    // Anything already waiting goes first, even if a sink re-entered us while it was being flushed.
    if (this.waitingForDrain || this.queue.size > 0 || this.gap) {
      if (this.queue.pushDroppingOldest(frame) && !this.gap) {
        this.gap = true;
        this.onReset?.();
      }
      return;
    }
    this.write(frame);
  }

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

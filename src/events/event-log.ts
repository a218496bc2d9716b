/**
 * The event log of one access boundary (CONTRACT.md §6): assigns ids, keeps a bounded replay
 * window, and fans each event out to live subscribers.
 *
 * Each event is serialised once, at append; delivery hands the same frame string to every
 * subscriber. A subscriber whose consumer signals backpressure gets a bounded queue of pending
 * frames; when that overflows, its oldest frames are dropped and a `replay.reset` is written
 * before the next event, so a slow consumer never holds up the appender or the other subscribers.
 *
 * Fan-out yields (delivery-slice.ts): events not yet fanned out form a backlog that the next
 * turns of the event loop work through in order. The backlog never holds more than `replayLimit`
 * events (so nothing outside the retained window is kept alive by it): past that, the append
 * fans out the oldest at once, slice or not, as it did before fan-out yielded. Yielding therefore
 * never loses an event; only a subscriber's own slowness does.
 */

import { REPLAY_RESET_FRAME, formatEventFrame, isValidEventType } from './sse-frame.ts';
import { Subscriber } from './event-subscriber.ts';
import { DeliverySlice } from './delivery-slice.ts';
import { PassEnd } from './pass-end.ts';
import { FrameBatch } from './frame-batch.ts';
import { SubscriberRegistry } from './subscriber-registry.ts';

export { KEEP_ALIVE_FRAME, REPLAY_RESET_FRAME } from './sse-frame.ts';
import type { EventFields, EventRecord, EventSink, Subscription, SubscriptionFilter } from './event-record.ts';
export type { EventFields, EventRecord, EventSink, Subscription, SubscriptionFilter } from './event-record.ts';

export interface EventLogOptions {
  /** Events kept for replay, and frames a saturated subscriber may have queued. */
  replayLimit: number;
  /** The next id to assign; the caller persists the counter so ids never repeat across restarts. */
  firstId: number;
  now?: () => Date;
  /** told each time a subscriber too slow to keep up loses frames (and will get a replay.reset) */
  onSlowSubscriberReset?: () => void;
}

interface PendingEvent {
  /** null for a replay.reset every subscriber gets: the log skipped events (skipTo) */
  record: EventRecord | null;
  frame: string;
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
  private readonly subscribers = new SubscriberRegistry<Subscriber>();
  private readonly onSlowSubscriberReset: (() => void) | undefined;
  /** Events appended but not yet handed to every subscriber, oldest first from `backlogHead`. */
  private backlog: PendingEvent[] = [];
  private backlogHead = 0;
  /** Where the fan-out of the oldest pending event stopped when it yielded. */
  private fanOutPosition: Iterator<Subscriber> | null = null;
  /** The end of each event-loop pass, where put-off fan-out resumes and then held frames leave. */
  readonly passEnd = new PassEnd();
  /** The frames written to this log's event streams during a pass, sent as one chunk each at its end. */
  readonly frameBatch = new FrameBatch(this.passEnd);
  private readonly slice = new DeliverySlice(this.passEnd);
  private fanOutDeferred = false;
  private readonly resumeFanOut = (): void => {
    this.fanOutDeferred = false;
    this.fanOut();
  };

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

  /** Events appended but not yet handed to every subscriber (the fan-out yielded under load). */
  get pendingFanOut(): number {
    return this.backlog.length - this.backlogHead;
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
    if (this.subscribers.size === 0 && this.backlogHead === this.backlog.length) return record;
    this.backlog.push({ record, frame });
    this.fanOut();
    return record;
  }

  /**
   * Takes an event whose id was assigned elsewhere (a cluster's shared sequence, runtime/event-relay.ts):
   * it must be the next id. Retained and delivered exactly as `append` does.
   */
  appendRecord(record: EventRecord, frame: string = formatEventFrame(record)): void {
    if (record.id !== this.nextId) throw new RangeError(`event ${record.id} appended where ${this.nextId} was next`);
    this.nextId += 1;
    this.retain(record, frame);
    this.enqueue(record, frame);
  }

  /**
   * Continues at `nextId`, past events this log never got (they left the shared window before it
   * read them): the retained window starts afresh, and every subscriber gets a replay.reset.
   */
  skipTo(nextId: number): void {
    if (!Number.isSafeInteger(nextId) || nextId <= this.nextId) throw new RangeError('skipTo moves forward only');
    this.nextId = nextId;
    this.records.length = 0;
    this.frames.length = 0;
    this.start = 0;
    this.count = 0;
    this.enqueue(null, REPLAY_RESET_FRAME);
  }

  private enqueue(record: EventRecord | null, frame: string): void {
    if (this.subscribers.size === 0 && this.backlogHead === this.backlog.length) return;
    this.backlog.push({ record, frame });
    this.fanOut();
  }

  /** Hands pending events to the subscribers, in order, until done or the turn's budget is spent. */
  private fanOut(): void {
    while (this.backlogHead < this.backlog.length) {
      const { record, frame } = this.backlog[this.backlogHead];
      const position = (this.fanOutPosition ??= this.subscribers.targetsOf(record));
      for (;;) {
        if (this.slice.spent && this.pendingFanOut <= this.replayLimit) return this.deferFanOut();
        const next = position.next();
        if (next.done) break;
        if (record === null) next.value.deliver(frame);
        else if (next.value.deliverEvent(record, frame)) this.slice.countDelivery();
      }
      this.advanceBacklog();
    }
  }

  private deferFanOut(): void {
    if (this.fanOutDeferred) return;
    this.fanOutDeferred = true;
    this.slice.defer(this.resumeFanOut);
  }

  private advanceBacklog(): void {
    this.fanOutPosition = null;
    this.backlogHead += 1;
    if (this.backlogHead === this.backlog.length) {
      this.backlog = [];
      this.backlogHead = 0;
    } else if (this.backlogHead >= 1024 && this.backlogHead * 2 >= this.backlog.length) {
      this.backlog = this.backlog.slice(this.backlogHead);
      this.backlogHead = 0;
    }
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
    const subscriber = new Subscriber(sink, this.replayLimit, this.subscribers, filter.sessionId ?? null, this.onSlowSubscriberReset, this.newestId);
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


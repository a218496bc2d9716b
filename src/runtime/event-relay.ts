/**
 * One event stream across the instances of a cluster (CONTRACT.md §18, docs/CLUSTER.md). Each
 * instance writes the events it publishes to PostgreSQL, where they are numbered in one sequence
 * per boundary (store/cluster-events.ts), and feeds its own event log from that stream, in id
 * order: its subscribers, whoever published, get every event once and in order, and replay from
 * the log's window, which mirrors the stored one.
 *
 * Writes are batched: what is published while a batch is being stored goes in the next one, a
 * transaction each, so a stream of deltas costs a transaction per database round trip, not per
 * delta; nothing is merged or dropped. The instance's own batch goes into its log as soon as it is
 * stored when nothing came between; otherwise, and on another instance's doorbell, and at the
 * instance supervisor's poll in any case (cluster-supervisor.ts), the log reads what is new.
 *
 * The log follows the stream only while somebody reads it: a subscriber, or one about to subscribe
 * (catchUp). An instance nobody watches reads none of the others' events (they cost it a query and
 * a parse each, about half of a cluster turn's CPU on an instance that did not run the turn) and
 * reads what it missed, at most the stored window, when a subscriber comes.
 */
import type { Logger } from 'pino';
import type { Db } from '../store/database.ts';
import type { EventLog } from '../events/event-log.ts';
import type { EventFields, EventRecord } from '../events/event-record.ts';
import { formatEventFrame, isValidEventType } from '../events/sse-frame.ts';
import { ensureEventCounter, storeEvents, storedEventWindow, storedEventsAfter, type EventDraft } from '../store/cluster-events.ts';
import type { ClusterDuties, Duty } from './cluster-supervisor.ts';
/** How long the log keeps following after catchUp without a subscriber: the subscriber it was for is about to come. */
const FOLLOW_AFTER_CATCH_UP_MS = 5_000;
/** Events stored per transaction, and read per query. */
const BATCH = 500;
/** A database outage: unstored events wait this long between attempts. */
const RETRY_MS = 1_000;

export interface RelayOptions {
  db: Db;
  boundaryId: string;
  log: EventLog;
  replayLimit: number;
  /** the instance's supervisor, for this boundary: its poll (a lost ring) and the doorbell */
  duties: ClusterDuties;
  logger: Logger;
}

/** The attempt at which this instance holds a turn; undefined when it holds none (its events are not fenced). */
export type AttemptOf = (turnId: string) => number | undefined;

export class EventRelay {
  private pending: EventDraft[] = [];
  private storing: Promise<void> | null = null;
  private reading: Promise<void> | null = null;
  private readAgain = false;
  private closed = false;
  private closing = false;
  private readonly poll: Duty;
  private attemptOf: AttemptOf = () => undefined;
  /** until when the log follows the stream without a subscriber (epoch ms) */
  private followUntil = 0;

  private constructor(private readonly options: RelayOptions) {
    this.poll = options.duties.add({ name: 'event stream', wokenBy: ['events'], run: () => this.follow() });
  }

  /** Opens the relay of a boundary; `makeLog` gets the first id its log will hold, and the window is loaded into it. */
  static async open(options: Omit<RelayOptions, 'log'>, makeLog: (firstId: number) => EventLog): Promise<EventRelay> {
    await ensureEventCounter(options.db, options.boundaryId);
    const { newestId, events } = await storedEventWindow(options.db, options.boundaryId, options.replayLimit);
    const log = makeLog(events[0]?.id ?? newestId + 1);
    for (const record of events) log.appendRecord(record);
    return new EventRelay({ ...options, log });
  }

  /** From now on each event of a turn this instance holds is stored only while the turn is at the attempt held when it was published. */
  fenceWith(attemptOf: AttemptOf): void {
    this.attemptOf = attemptOf;
  }

  get log(): EventLog {
    return this.options.log;
  }

  /** Queues an event for the shared stream; it reaches the subscribers once stored. Throws, as append does, on what cannot be an event. */
  publish(type: string, fields: EventFields): EventRecord {
    if (!isValidEventType(type)) throw new TypeError(`invalid event type ${JSON.stringify(type)}`);
    const turnId = fields.turnId ?? null;
    const draft: EventDraft = { type, sessionId: fields.sessionId ?? null, turnId, at: new Date().toISOString(), data: JSON.stringify(fields.data ?? {}) };
    const attempt = turnId === null ? undefined : this.attemptOf(turnId);
    if (attempt !== undefined) draft.attempt = attempt;
    this.pending.push(draft);
    this.storing ??= this.store();
    // numbered when stored: 0 until then
    return { id: 0, type, turnId: draft.turnId, sessionId: draft.sessionId, at: draft.at, data: fields.data ?? {} };
  }

  /**
   * Brings the log up to `lastEventId` when a subscriber asks to resume after an event it got from
   * another instance, which this one may not have read yet.
   */
  async catchUp(lastEventId: number | null): Promise<void> {
    // unwatched until now, the log may be behind the stream, whatever the subscriber saw
    const behind = !this.watched || (lastEventId !== null && lastEventId > this.log.newestId);
    this.followUntil = Date.now() + FOLLOW_AFTER_CATCH_UP_MS;
    if (behind) await this.read();
  }

  /** Someone reads the log now, or is about to. */
  private get watched(): boolean {
    return this.log.subscriberCount > 0 || Date.now() < this.followUntil;
  }

  private follow(): void {
    if (this.watched) void this.read();
  }

  /** Stores what was published, then stops following the stream. */
  async close(): Promise<void> {
    this.closing = true;
    await this.storing;
    this.closed = true;
    this.poll.stop();
    await this.reading;
  }

  private async store(): Promise<void> {
    // what the current pass of the event loop publishes joins the first batch
    await new Promise((resolve) => setImmediate(resolve));
    while (this.pending.length > 0) {
      const batch = this.pending.slice(0, BATCH);
      let result: Awaited<ReturnType<typeof storeEvents>>;
      try {
        result = await storeEvents(this.options.db, this.options.boundaryId, batch, this.options.replayLimit);
      } catch (error) {
        if (this.closing) {
          this.options.logger.error({ err: error, lost: this.pending.length }, 'could not store the last events for the cluster');
          this.pending = [];
          break;
        }
        this.options.logger.error({ err: error, waiting: this.pending.length }, 'could not store events for the cluster: retrying');
        await new Promise((resolve) => setTimeout(resolve, RETRY_MS).unref());
        continue;
      }
      this.pending.splice(0, batch.length);
      const { firstId, stored } = result;
      if (stored.length < batch.length) this.options.logger.warn({ refused: batch.length - stored.length }, 'events of a turn taken over by another instance were not stored');
      if (firstId === null) continue;
      this.options.duties.ring('events');
      if (firstId === this.log.newestId + 1 && this.reading === null) {
        stored.forEach((draft, index) => this.log.appendRecord(recordOf(firstId + index, draft)));
      } else this.follow();
    }
    this.storing = null;
  }

  /** Reads the events stored after the log's newest into it; a read asked for meanwhile runs once more after it. */
  private read(): Promise<void> {
    if (this.reading) {
      this.readAgain = true;
      return this.reading;
    }
    this.reading = this.readUntilCurrent().finally(() => {
      this.reading = null;
    });
    return this.reading;
  }

  private async readUntilCurrent(): Promise<void> {
    do {
      this.readAgain = false;
      let records: EventRecord[];
      do {
        if (this.closed) return;
        try {
          records = await storedEventsAfter(this.options.db, this.options.boundaryId, this.log.newestId, BATCH);
        } catch {
          return; // the next poll tries again
        }
        for (const record of records) {
          if (record.id <= this.log.newestId) continue;
          // older events left the stored window before this instance read them
          if (record.id > this.log.newestId + 1) this.log.skipTo(record.id);
          this.log.appendRecord(record, formatEventFrame(record));
        }
      } while (records.length === BATCH);
    } while (this.readAgain);
  }
}

function recordOf(id: number, draft: EventDraft): EventRecord {
  return { id, type: draft.type, turnId: draft.turnId, sessionId: draft.sessionId, at: draft.at, data: JSON.parse(draft.data) as unknown };
}

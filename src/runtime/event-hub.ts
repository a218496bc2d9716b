import type { Logger } from 'pino';
import type { Db } from '../store/database.ts';
import { boundEventText } from '../domain/event-text.ts';
import { EventLog, type EventRecord } from '../events/event-log.ts';
import type { EventData, EventType, TextEventType } from '../api/events.ts';
import { reserveEventIds, writeEventIdCeiling } from '../store/boundaries.ts';
import { NO_METRICS, type MetricsRecorder } from '../telemetry/recorder.ts';
import { EventRelay, type AttemptOf } from './event-relay.ts';
import type { ClusterDuties } from './cluster-supervisor.ts';

/** Event ids are reserved in blocks, so a restart never reuses one without a write per event. */
const ID_BLOCK = 4096;

/**
 * The boundary's event log plus the durable id ceiling: ids count up within the boundary and never
 * repeat across restarts (CONTRACT.md §6). A lone process numbers its events itself, in memory,
 * reserving ids in blocks; an instance of a cluster publishes through the shared stream (relay),
 * which numbers them in the database and feeds the log.
 */
export class EventHub {
  private ceiling: number;
  private extending: Promise<void> | null = null;

  private constructor(
    readonly log: EventLog,
    private readonly db: Db,
    private readonly boundaryId: string,
    ceiling: number,
    private readonly logger: Logger,
    private readonly relay: EventRelay | null = null,
  ) {
    this.ceiling = ceiling;
  }

  static async open(db: Db, boundaryId: string, replayLimit: number, logger: Logger, metrics: MetricsRecorder = NO_METRICS, cluster: ClusterDuties | null = null): Promise<EventHub> {
    const onSlowSubscriberReset = metrics.enabled ? () => metrics.eventsDropped() : undefined;
    if (cluster) {
      const relay = await EventRelay.open({ db, boundaryId, replayLimit, logger, duties: cluster }, (firstId) => new EventLog({ replayLimit, firstId, onSlowSubscriberReset }));
      return new EventHub(relay.log, db, boundaryId, 0, logger, relay);
    }
    // one statement, not a read and a write: it is on a tenant's first request
    const ceiling = await reserveEventIds(db, boundaryId, ID_BLOCK);
    const firstId = ceiling - ID_BLOCK + 1;
    const log = new EventLog({ replayLimit, firstId, onSlowSubscriberReset });
    return new EventHub(log, db, boundaryId, ceiling, logger);
  }

  /**
   * Publishes one event of the catalogue (src/api/events.ts): only declared types, with their
   * payloads. In a cluster the record's id is assigned when it is stored (0 in the answer).
   */
  emit<Type extends EventType>(type: Type, sessionId: string | null, turnId: string | null, data: EventData<Type>): EventRecord {
    if (this.relay) return this.relay.publish(type, { sessionId, turnId, data });
    const record = this.log.append(type, { sessionId, turnId, data });
    if (this.ceiling - record.id < ID_BLOCK / 2) this.extendCeiling();
    return record;
  }

  /** A text-bearing event (deltas, activity, warnings): text bounded at 16,383 characters. */
  emitText(type: TextEventType, sessionId: string | null, turnId: string | null, text: string): void {
    this.emit(type, sessionId, turnId, boundEventText(text));
  }

  /** --cluster: events of a turn this instance holds are fenced by the attempt it holds it at (event-relay.ts). */
  fenceWith(attemptOf: AttemptOf): void {
    this.relay?.fenceWith(attemptOf);
  }

  /** Before a subscriber resumes after `lastEventId`: in a cluster, the log first reads up to it if it was published elsewhere. */
  async catchUp(lastEventId: number | null): Promise<void> {
    await this.relay?.catchUp(lastEventId);
  }

  /** Stores what is still unstored (a cluster's events, the id ceiling); a cluster's hub then stops following the stream. */
  async flush(): Promise<void> {
    await this.extending;
    await this.relay?.close();
  }

  private extendCeiling(): void {
    if (this.extending) return;
    const next = this.ceiling + ID_BLOCK;
    this.extending = writeEventIdCeiling(this.db, this.boundaryId, next)
      .then(() => {
        this.ceiling = next;
      })
      .catch((error: unknown) => this.logger.error({ err: error }, 'could not persist the event id ceiling'))
      .finally(() => {
        this.extending = null;
      });
  }
}

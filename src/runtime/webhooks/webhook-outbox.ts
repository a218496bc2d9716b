/**
 * A boundary's webhooks (CONTRACT.md §20, docs/WEBHOOKS.md): what announces an event writes its
 * deliveries, one row per configured URL, inside the transaction that stores what the event says
 * (so a crash loses neither or both), and tells the worker once that transaction has committed.
 */
import type { Logger } from 'pino';
import type { Db } from '../../store/database.ts';
import { insertOutboxRows, type OutboxRow, type OutboxWrite } from '../../store/webhook-outbox.ts';
import { uuidv7 } from '../../domain/ids.ts';
import type { WebhookConfig } from '../../config/webhooks.ts';
import type { MetricsRecorder } from '../../telemetry/recorder.ts';
import { webhookBody, type WebhookEventType } from './webhook-body.ts';
import { WebhookWorker, type WorkerStart } from './webhook-worker.ts';
import type { WebhookSender } from './webhook-sender.ts';

export interface Announcement {
  type: WebhookEventType;
  at: string;
  sessionId: string;
  turnId: string;
  data: unknown;
}

export interface BoundaryWebhooksDeps {
  db: Db;
  config: WebhookConfig;
  sender: WebhookSender;
  /** the tenant's id in multi-tenant mode, null in single-user mode (the payload's tenantId) */
  tenantId: string | null;
  metrics: MetricsRecorder;
  logger: Logger;
}

export class BoundaryWebhooks {
  private readonly worker: WebhookWorker;

  constructor(private readonly deps: BoundaryWebhooksDeps) {
    this.worker = new WebhookWorker({ db: deps.db, sender: deps.sender, urls: deps.config.urls, metrics: deps.metrics, logger: deps.logger });
  }

  start(how: WorkerStart): Promise<void> {
    return this.worker.start(how);
  }

  /**
   * The insert of this announcement's deliveries, to run inside the transaction that stores what
   * it announces. The rows are made once: a retried transaction writes the same ids again, and a
   * repeat of a committed one is refused by the primary key.
   */
  write(announcement: Announcement): OutboxWrite {
    const rows = this.rowsFor(announcement);
    return (trx) => insertOutboxRows(trx, rows);
  }

  /** The deliveries of several announcements, written in one transaction; null for none. */
  writeAll(announcements: readonly Announcement[]): OutboxWrite | null {
    if (announcements.length === 0) return null;
    const writes = announcements.map((announcement) => this.write(announcement));
    return async (trx) => {
      for (const write of writes) await write(trx);
    };
  }

  /** the boundary's database, for an announcement with nothing else to store */
  get db(): Db {
    return this.deps.db;
  }

  /** A transaction holding deliveries committed: they go out now. */
  committed(): void {
    this.worker.kick();
  }

  stop(): Promise<void> {
    return this.worker.stop();
  }

  private rowsFor(announcement: Announcement): OutboxRow[] {
    const id = uuidv7();
    const body = webhookBody({ id, ...announcement, tenantId: this.deps.tenantId });
    const now = Date.now();
    return this.deps.config.urls.map((url) => ({ id: uuidv7(), event_id: id, url, event_type: announcement.type, body, created_at: now, next_attempt_at: now, attempts: 0 }));
  }
}

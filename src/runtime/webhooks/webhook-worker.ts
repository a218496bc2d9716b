/**
 * Delivers a boundary's webhook outbox in the background: rows due are claimed, sent through the
 * process's WebhookSender (bounded in number and time, so a slow or dead receiver holds sockets,
 * never a turn), and deleted once a receiver answers 2xx; a failure is retried on the schedule of
 * retry-schedule.ts until 24 h after the event, then dropped. Every outcome is counted.
 */
import type { Logger } from 'pino';
import type { Db } from '../../store/database.ts';
import { claimDueOutboxRows, deleteOutboxRow, deleteOutboxRowsNotFor, nextOutboxDue, releaseOutboxRows, rescheduleOutboxRow, type OutboxRow } from '../../store/webhook-outbox.ts';
import type { MetricsRecorder } from '../../telemetry/recorder.ts';
import { GIVE_UP_AFTER_MS, retryDelayMs } from './retry-schedule.ts';
import { DELIVERY_TIMEOUT_MS, type DeliveryResult, type WebhookSender } from './webhook-sender.ts';

/** A claim outlasts any attempt, so no other instance sends the row meanwhile. */
const CLAIM_MS = DELIVERY_TIMEOUT_MS * 3;
/** Rows other instances of a cluster wrote are found within this; rows written here are sent at once. */
const POLL_MS = 5_000;
const RECHECK_MS = 100;
/** A worker with nothing due sooner than this is quiet (onQuiet). */
const QUIET_MS = 30_000;

export interface WebhookWorkerDeps {
  db: Db;
  sender: WebhookSender;
  /** the URLs configured now: rows for any other are dropped at start */
  urls: readonly string[];
  metrics: MetricsRecorder;
  logger: Logger;
  /**
   * Called when a look finds nothing in flight and nothing due within QUIET_MS: `nextDue` is when
   * the next row falls due (epoch ms), null with none owed. A drain lets go of its database then.
   */
  onQuiet?: (nextDue: number | null) => void;
  now?: () => number;
}

export interface WorkerStart {
  /** no other agentd is on the database: rows for URLs no longer configured are dropped */
  alone: boolean;
  /** the process's first worker on this database: claims a dead process left are void, and every owed row is tried at once */
  releaseClaims: boolean;
}

export class WebhookWorker {
  private timer: NodeJS.Timeout | null = null;
  private ticking = false;
  private again = false;
  private stopped = false;
  /** rows are owed, as far as the last look knew (a tenant's runtime stays open while they are) */
  private owed = true;
  private readonly sending = new Set<Promise<void>>();
  private readonly stopping = new AbortController();
  private readonly now: () => number;

  constructor(private readonly deps: WebhookWorkerDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** Starts delivering (WorkerStart says what is tidied first). */
  async start({ alone, releaseClaims }: WorkerStart): Promise<void> {
    if (alone) {
      const dropped = await deleteOutboxRowsNotFor(this.deps.db, this.deps.urls);
      if (dropped > 0) {
        this.deps.metrics.webhookDropped(dropped);
        this.deps.logger.warn({ dropped }, 'webhook deliveries for URLs no longer configured were dropped');
      }
      if (releaseClaims) await releaseOutboxRows(this.deps.db, this.now());
    }
    this.kick();
  }

  /** Rows were committed (or a slot came free): look for due rows now. */
  kick(): void {
    if (this.stopped) return;
    this.owed = true;
    if (this.ticking) {
      this.again = true;
      return;
    }
    this.schedule(0);
  }

  /** Nothing is known to be owed: the boundary may close without leaving a delivery behind. */
  get idle(): boolean {
    return !this.owed && this.sending.size === 0;
  }

  /** Stops looking and abandons attempts in flight (their rows are owed again at once). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.stopping.abort();
    await Promise.all([...this.sending]);
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.tick(), Math.max(0, delayMs));
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    this.timer = null;
    this.ticking = true;
    this.again = false;
    let next = POLL_MS;
    try {
      const free = this.deps.sender.freeSlots;
      if (free > 0) {
        const now = this.now();
        for (const row of await claimDueOutboxRows(this.deps.db, now, now + CLAIM_MS, free)) this.track(this.deliver(row));
      }
      const due = await nextOutboxDue(this.deps.db);
      this.owed = due !== null;
      if (this.sending.size === 0 && (due === null || due - this.now() > QUIET_MS)) this.deps.onQuiet?.(due);
      // rows due but not taken (no free slot, or another instance's) are looked at again shortly
      if (due !== null) next = Math.min(POLL_MS, Math.max(RECHECK_MS, due - this.now()));
    } catch (error) {
      this.deps.logger.warn({ err: { message: (error as Error).message } }, 'could not read the webhook outbox; trying again shortly');
    } finally {
      this.ticking = false;
    }
    // a slot taken by a send is handed back by its end, which kicks
    this.schedule(this.again ? 0 : next);
  }

  private track(sending: Promise<void>): void {
    const tracked = sending.finally(() => {
      this.sending.delete(tracked);
      this.kick();
    });
    this.sending.add(tracked);
  }

  private async deliver(row: OutboxRow): Promise<void> {
    const result = await this.deps.sender.send(row.url, row.body, this.stopping.signal);
    try {
      await this.record(row, result);
    } catch (error) {
      // the claim lapses and the row is tried again; a repeat shows the same id
      this.deps.logger.warn({ err: { message: (error as Error).message }, delivery: row.id }, 'could not record a webhook attempt');
    }
  }

  private async record(row: OutboxRow, result: DeliveryResult): Promise<void> {
    const { db, metrics, logger } = this.deps;
    // URLs may carry a secret in their path: logs name the origin only, never the body
    const where = { delivery: row.id, event: row.event_type, receiver: new URL(row.url).origin };
    const now = this.now();
    if (result.delivered) {
      await deleteOutboxRow(db, row.id);
      metrics.webhookDelivered(Math.max(0, now - row.created_at) / 1000);
      logger.debug({ ...where, status: result.status }, 'webhook delivered');
      return;
    }
    if (this.stopped) {
      // abandoned, not failed: owed again at once after a restart
      await rescheduleOutboxRow(db, row.id, row.attempts, now);
      return;
    }
    const attempts = row.attempts + 1;
    if (now - row.created_at >= GIVE_UP_AFTER_MS) {
      await deleteOutboxRow(db, row.id);
      metrics.webhookDropped();
      logger.warn({ ...where, attempts, reason: result.reason }, 'webhook dropped after 24 h of failed attempts');
      return;
    }
    const delay = retryDelayMs(attempts);
    await rescheduleOutboxRow(db, row.id, attempts, now + delay);
    metrics.webhookRetried();
    logger.info({ ...where, attempts, reason: result.reason, retryInMs: delay }, 'webhook attempt failed; retrying');
  }
}

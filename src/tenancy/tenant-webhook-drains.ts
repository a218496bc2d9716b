/**
 * Multi-tenant webhooks whose tenant has no runtime open (docs/WEBHOOKS.md). A tenant's deliveries
 * leave from its own database, through its runtime's worker while the runtime is open. When it is
 * not (after a start, before the tenant's first request; after the LRU closed it), a drain does the
 * same work on a one-connection store of its own while something is due, then lets go of the
 * database and comes back when the next row falls due. At most MAX_DRAINING drains hold a
 * connection at once (the others wait their turn), so a receiver down for a day costs no tenant
 * database more than it costs one. A runtime opening stops its tenant's drain first, and one
 * closing starts it again: one worker at a time sends a tenant's rows (and the outbox's claims
 * would keep even two from sending one row twice).
 */
import type { Logger } from 'pino';
import { openStore } from '../store/database.ts';
import type { WebhookConfig } from '../config/webhooks.ts';
import type { WebhookSender } from '../runtime/webhooks/webhook-sender.ts';
import { WebhookWorker } from '../runtime/webhooks/webhook-worker.ts';
import type { MetricsRecorder } from '../telemetry/recorder.ts';

const MAX_DRAINING = 4;

interface Drain {
  /** a stop was asked (the runtime opens, the server stops) */
  stopRequested: boolean;
  wake(): void;
  /** settles once the drain has stopped and closed its store */
  stopped: Promise<void>;
}

export interface TenantWebhookDrainsDeps {
  config: WebhookConfig;
  sender: WebhookSender;
  /** a tenant's database URL (as its runtime role) */
  databaseUrlOf(tenantId: string): string;
  stateDirOf(tenantId: string): string;
  /** no other agentd works on the tenants' databases (not --cluster) */
  alone: boolean;
  metrics: MetricsRecorder;
  logger: Logger;
}

export class TenantWebhookDrains {
  private readonly drains = new Map<string, Drain>();
  /** drains coming back when their next row falls due */
  private readonly later = new Map<string, NodeJS.Timeout>();
  /** tenants whose outbox this process has looked at */
  private readonly seen = new Set<string>();
  private readonly waiting: (() => void)[] = [];
  private draining = 0;
  private closed = false;

  constructor(private readonly deps: TenantWebhookDrainsDeps) {}

  /**
   * True the first time this process looks at the tenant's outbox (a drain's or its runtime's
   * worker): that look voids the claims a dead process left. Later looks keep each row's backoff.
   */
  firstLook(tenantId: string): boolean {
    const first = !this.seen.has(tenantId);
    this.seen.add(tenantId);
    return first;
  }

  /** The tenant's runtime is not open: deliver what its outbox owes. */
  start(tenantId: string): void {
    this.clearLater(tenantId);
    if (this.closed || this.drains.has(tenantId)) return;
    let finish!: () => void;
    let wake!: () => void;
    const quiet = new Promise<void>((resolve) => (wake = resolve));
    const drain: Drain = { stopRequested: false, wake, stopped: new Promise<void>((resolve) => (finish = resolve)) };
    this.drains.set(tenantId, drain);
    const logger = this.deps.logger.child({ tenant: tenantId });
    let nextDue: number | null = null;
    const run = async () => {
      await this.slot();
      try {
        if (drain.stopRequested) return;
        const store = await openStore({ databaseUrl: this.deps.databaseUrlOf(tenantId), stateDir: this.deps.stateDirOf(tenantId), maxConnections: 1, migrate: false });
        try {
          if (drain.stopRequested) return;
          const onQuiet = (due: number | null) => {
            nextDue = due;
            wake();
          };
          const worker = new WebhookWorker({ db: store.db, sender: this.deps.sender, urls: this.deps.config.urls, metrics: this.deps.metrics, logger, onQuiet });
          await worker.start({ alone: this.deps.alone, releaseClaims: this.deps.alone && this.firstLook(tenantId) });
          await quiet;
          await worker.stop();
        } finally {
          await store.close().catch(() => {});
        }
      } finally {
        this.freeSlot();
      }
    };
    run()
      .catch((error: Error) => logger.warn({ err: { message: error.message } }, 'could not deliver the webhooks owed by a tenant without a runtime; trying again when its runtime opens'))
      .finally(() => {
        if (this.drains.get(tenantId) === drain) this.drains.delete(tenantId);
        if (!drain.stopRequested && nextDue !== null) this.comeBackAt(tenantId, nextDue);
        finish();
      });
  }

  /** The tenant's runtime opens: its worker takes over from the drain. */
  async stop(tenantId: string): Promise<void> {
    this.clearLater(tenantId);
    const drain = this.drains.get(tenantId);
    if (!drain) return;
    drain.stopRequested = true;
    drain.wake();
    await drain.stopped;
  }

  async closeAll(): Promise<void> {
    this.closed = true;
    for (const tenantId of [...this.later.keys()]) this.clearLater(tenantId);
    const drains = [...this.drains.values()];
    for (const drain of drains) {
      drain.stopRequested = true;
      drain.wake();
    }
    for (const release of this.waiting.splice(0)) release();
    await Promise.all(drains.map((drain) => drain.stopped));
  }

  private comeBackAt(tenantId: string, due: number): void {
    if (this.closed) return;
    const timer = setTimeout(() => this.start(tenantId), Math.max(0, due - Date.now()));
    timer.unref();
    this.later.set(tenantId, timer);
  }

  private clearLater(tenantId: string): void {
    const timer = this.later.get(tenantId);
    if (timer) clearTimeout(timer);
    this.later.delete(tenantId);
  }

  private async slot(): Promise<void> {
    if (this.draining < MAX_DRAINING || this.closed) {
      this.draining += 1;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.draining += 1;
  }

  private freeSlot(): void {
    this.draining -= 1;
    this.waiting.shift()?.();
  }
}

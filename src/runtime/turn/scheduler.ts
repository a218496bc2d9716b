/**
 * Admission of turns: global and per-tenant running limits never reject, they queue in FIFO order
 * per tenant and round-robin across tenants; a full queue (global or tenant) rejects at once.
 * Pure bookkeeping: the caller starts the admitted job and calls `finished` when it ends.
 */
export interface SchedulerLimits {
  maxRunning: number;
  maxQueued: number;
  /** null in single-user mode: the one boundary is bounded by the global limits only */
  maxRunningPerTenant: number | null;
  maxQueuedPerTenant: number | null;
}

export interface Job {
  tenantId: string;
  start(): void;
}

export type EnqueueResult = 'queued' | 'queue_full' | 'tenant_queue_full';

export class Scheduler<J extends Job = Job> {
  private readonly queues = new Map<string, J[]>();
  /** tenants with queued work, in round-robin order */
  private readonly rotation: string[] = [];
  private readonly runningByTenant = new Map<string, number>();
  private running = 0;
  private queued = 0;

  constructor(private readonly limits: SchedulerLimits) {}

  enqueue(job: J): EnqueueResult {
    if (this.queued >= this.limits.maxQueued) return 'queue_full';
    const queue = this.queues.get(job.tenantId) ?? [];
    if (this.limits.maxQueuedPerTenant !== null && queue.length >= this.limits.maxQueuedPerTenant) return 'tenant_queue_full';
    if (queue.length === 0) {
      this.queues.set(job.tenantId, queue);
      this.rotation.push(job.tenantId);
    }
    queue.push(job);
    this.queued++;
    this.admit();
    return 'queued';
  }

  /** Removes a job that has not started yet; false when it is not queued. */
  remove(job: J): boolean {
    const queue = this.queues.get(job.tenantId);
    const position = queue?.indexOf(job) ?? -1;
    if (!queue || position === -1) return false;
    queue.splice(position, 1);
    this.queued--;
    if (queue.length === 0) this.dropTenant(job.tenantId);
    return true;
  }

  /**
   * The running slot `from` was just given passes to `to` (a job that was not queued), and `from`
   * waits again at the head of its tenant's queue.
   */
  handOff(from: J, to: J): void {
    this.runningByTenant.set(from.tenantId, (this.runningByTenant.get(from.tenantId) ?? 1) - 1);
    this.runningByTenant.set(to.tenantId, (this.runningByTenant.get(to.tenantId) ?? 0) + 1);
    let queue = this.queues.get(from.tenantId);
    if (queue === undefined) {
      queue = [];
      this.queues.set(from.tenantId, queue);
      this.rotation.unshift(from.tenantId);
    }
    queue.unshift(from);
    this.queued++;
    to.start();
  }

  /** A started job ended: its slot goes to the next admissible job. */
  finished(job: J): void {
    this.running--;
    this.runningByTenant.set(job.tenantId, (this.runningByTenant.get(job.tenantId) ?? 1) - 1);
    this.admit();
  }

  /** Nothing waits and a job of `tenantId` would start at once (--cluster: this instance may start another's queued turn). */
  hasIdleSlot(tenantId: string): boolean {
    const underTenantLimit = this.limits.maxRunningPerTenant === null || (this.runningByTenant.get(tenantId) ?? 0) < this.limits.maxRunningPerTenant;
    return this.queued === 0 && this.running < this.limits.maxRunning && underTenantLimit;
  }

  get counts() {
    return { running: this.running, queued: this.queued };
  }

  private admit(): void {
    while (this.running < this.limits.maxRunning) {
      const job = this.takeNext();
      if (!job) return;
      this.running++;
      this.runningByTenant.set(job.tenantId, (this.runningByTenant.get(job.tenantId) ?? 0) + 1);
      job.start();
    }
  }

  /** The head of the first tenant (in rotation) that is under its running limit. */
  private takeNext(): J | undefined {
    for (let turn = 0; turn < this.rotation.length; turn++) {
      const tenantId = this.rotation.shift()!;
      const queue = this.queues.get(tenantId)!;
      const underLimit = this.limits.maxRunningPerTenant === null || (this.runningByTenant.get(tenantId) ?? 0) < this.limits.maxRunningPerTenant;
      if (!underLimit) {
        this.rotation.push(tenantId);
        continue;
      }
      const job = queue.shift()!;
      this.queued--;
      if (queue.length === 0) this.queues.delete(tenantId);
      else this.rotation.push(tenantId);
      return job;
    }
    return undefined;
  }

  private dropTenant(tenantId: string): void {
    this.queues.delete(tenantId);
    const position = this.rotation.indexOf(tenantId);
    if (position !== -1) this.rotation.splice(position, 1);
  }
}

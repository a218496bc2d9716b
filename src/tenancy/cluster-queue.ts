/**
 * `--max-queued-turns` of a multi-tenant cluster, counted across its instances (docs/CLUSTER.md,
 * "Multi-tenant clusters"). A tenant's queue is counted exactly, in the tenant's database, as its
 * turns are admitted; the server-wide queue spans every tenant's database, so it is counted here
 * instead, from what each instance publishes: every instance stores how many turns wait in its
 * scheduler (table `cluster_instances` of the registry's database, under a lease it renews) and
 * reads the others' sum, every half second. A turn is refused `turn_queue_full` when this
 * instance's queued turns and the others' last published ones reach the limit. It is a bound up to
 * half a second old: instances admitting at the same moment may each take the last place.
 */
import { sql, type Kysely } from 'kysely';
import { databaseNowMs } from '../store/turn-fence.ts';
import type { Logger } from 'pino';
import { Scheduler, type EnqueueResult, type Job, type SchedulerLimits } from '../runtime/turn/scheduler.ts';
import type { ClusterSupervisor, Duty } from '../runtime/cluster-supervisor.ts';

/** How often an instance publishes its queue and reads the others'. */
export const CLUSTER_QUEUE_POLL_MS = 500;

/** The one scheduler of a multi-tenant instance of a cluster: its server-wide queue counts the other instances' too. */
export class ClusterScheduler<J extends Job = Job> extends Scheduler<J> {
  /** the turns queued on the other live instances, as they last published them */
  queuedElsewhere = 0;

  constructor(private readonly maxQueued: number, limits: SchedulerLimits) {
    super(limits);
  }

  override enqueue(job: J): EnqueueResult {
    if (this.counts.queued + this.queuedElsewhere >= this.maxQueued) return 'queue_full';
    return super.enqueue(job);
  }
}

export interface ClusterQueueOptions {
  db: Kysely<any>;
  instanceId: string;
  leaseMs: number;
  scheduler: ClusterScheduler;
  logger: Logger;
  /** the instance's one loop for background work, which publishes and reads */
  supervisor: ClusterSupervisor;
}

export class ClusterQueue {
  private readonly publishing: Duty;
  private stopped = false;
  private failing = false;

  constructor(private readonly options: ClusterQueueOptions) {
    this.publishing = options.supervisor.duty({ name: 'cluster queue', everyMs: CLUSTER_QUEUE_POLL_MS, run: () => this.poll() });
  }

  /** Stops publishing; this instance's count leaves the cluster's at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.publishing.stop();
    await this.options.db.deleteFrom('cluster_instances').where('instance_id', '=', this.options.instanceId).execute();
  }

  private async poll(): Promise<void> {
    if (this.stopped) return;
    const { db, instanceId, leaseMs, scheduler, logger } = this.options;
    try {
      // one statement: this instance's count stored, the other live ones' summed
      const { rows } = await sql<{ elsewhere: string | number | null }>`
        with published as (
          insert into cluster_instances (instance_id, queued_turns, lease_expires_at)
          values (${instanceId}, ${scheduler.counts.queued}, ${databaseNowMs} + ${leaseMs})
          on conflict (instance_id) do update set queued_turns = excluded.queued_turns, lease_expires_at = excluded.lease_expires_at
          returning instance_id
        )
        select coalesce(sum(queued_turns), 0) as elsewhere from cluster_instances
         where instance_id <> ${instanceId} and lease_expires_at > ${databaseNowMs}`.execute(db);
      scheduler.queuedElsewhere = Number(rows[0]?.elsewhere ?? 0);
      this.failing = false;
    } catch (error) {
      // the last sum stands; the next poll tries again
      if (!this.failing) logger.warn({ err: (error as Error).message }, 'could not publish or read the cluster\'s queued turns; trying again');
      this.failing = true;
    }
  }
}

/**
 * The tenants of a multi-tenant cluster whose holder is gone (docs/CLUSTER.md, "Multi-tenant
 * clusters"). A tenant's turns are taken over by the sweep of a runtime of that tenant
 * (runtime/turn/turn-leases.ts), and runtimes open on request: an instance that died or stopped
 * may have held the only runtime of a tenant with turns. So each instance records, in the
 * administrative database, the tenants whose runtime it holds, under a lease it renews (table
 * `cluster_tenants`, admin-migrations.ts); every instance looks for rows whose lease ran out and
 * opens those tenants' runtimes itself, whose sweep then takes their turns over and resumes them.
 * An instance stopping with others alive gives its rows up at once, as it does its turns' leases.
 */
import { sql, type Kysely } from 'kysely';
import { databaseNowMs } from '../store/turn-fence.ts';
import type { Logger } from 'pino';
import type { ClusterSupervisor, Duty } from '../runtime/cluster-supervisor.ts';

/** Renewals and looks per lease, as for turns: a lease survives two missed renewals. */
const TICKS_PER_LEASE = 3;

export interface ClusterTenantsOptions {
  /** the administrative database */
  db: Kysely<any>;
  instanceId: string;
  leaseMs: number;
  logger: Logger;
  /** the instance's one loop for background work, which renews and looks */
  supervisor: ClusterSupervisor;
  /** opens the tenant's runtime here (held until it is idle and its slot is wanted) */
  open(tenantId: string): Promise<void>;
  /** whether the tenant is one of the registry's (a row may name a tenant since removed) */
  known(tenantId: string): boolean;
}

export class ClusterTenants {
  private readonly renewal: Duty;
  private stopped = false;
  /** the tenants whose runtime this instance holds */
  private readonly held = new Set<string>();

  constructor(private readonly options: ClusterTenantsOptions) {
    this.renewal = options.supervisor.duty({ name: 'cluster tenants', everyMs: Math.max(1, Math.floor(options.leaseMs / TICKS_PER_LEASE)), run: () => this.tick() });
  }

  /**
   * This instance holds the tenant's runtime from now on. Recorded at once if the database answers,
   * else at the next renewal: the runtime is not refused for it.
   */
  async hold(tenantId: string): Promise<void> {
    this.held.add(tenantId);
    await this.record([tenantId]).catch((error: Error) => this.options.logger.warn({ tenant: tenantId, err: error.message }, 'could not record the tenant as held here; the next renewal does'));
  }

  /** The tenant's runtime closed here with nothing left to take over (idle, or its turns ended). */
  async release(tenantId: string): Promise<void> {
    this.held.delete(tenantId);
    await this.options.db
      .deleteFrom('cluster_tenants')
      .where('tenant_id', '=', tenantId)
      .where('instance_id', '=', this.options.instanceId)
      .execute()
      .catch((error: Error) => this.options.logger.warn({ tenant: tenantId, err: error.message }, 'could not withdraw the tenant as held here; its row runs out'));
  }

  /** Stores (or renews) this instance's rows of `tenantIds`, one statement. */
  private async record(tenantIds: string[]): Promise<void> {
    if (tenantIds.length === 0) return;
    const { db, instanceId, leaseMs } = this.options;
    await sql`insert into cluster_tenants (tenant_id, instance_id, lease_expires_at)
              select tenant_id, ${instanceId}, ${databaseNowMs} + ${leaseMs} from unnest(${tenantIds}::text[]) as held (tenant_id)
              on conflict (tenant_id, instance_id) do update set lease_expires_at = excluded.lease_expires_at`.execute(db);
  }

  /** Stops renewing and looking; `handOver`: this instance's rows run out now, for another to take its tenants. */
  async stop(handOver: boolean): Promise<void> {
    this.stopped = true;
    this.renewal.stop();
    const { db, instanceId } = this.options;
    if (handOver) await db.updateTable('cluster_tenants').set({ lease_expires_at: 0 }).where('instance_id', '=', instanceId).execute();
    else await db.deleteFrom('cluster_tenants').where('instance_id', '=', instanceId).execute();
  }

  private async tick(): Promise<void> {
    if (this.stopped) return;
    const { db, logger } = this.options;
    try {
      // an upsert, not an update: a row another instance deleted while this one was cut off comes back
      await this.record([...this.held]);
      // this instance's own rows included: those of an earlier process with the same --instance-id
      const { rows } = await sql<{ tenant_id: string }>`select distinct tenant_id from cluster_tenants where lease_expires_at < ${databaseNowMs}`.execute(db);
      for (const { tenant_id: tenantId } of rows) {
        if (this.stopped) return;
        // held here, the runtime's own sweep takes the turns over
        if (this.options.known(tenantId) && !this.held.has(tenantId)) {
          try {
            await this.options.open(tenantId);
          } catch (error) {
            // its rows stay: the next look tries again (no runtime slot free, the tenant's database away)
            logger.warn({ tenant: tenantId, err: (error as Error).message }, 'could not open the runtime of a tenant another instance held');
            continue;
          }
          logger.info({ tenant: tenantId }, 'opened the runtime of a tenant whose instance is gone, to take its turns over');
        }
        // this instance's runtime holds the tenant now (its own row was just renewed); the gone ones' rows go
        await sql`delete from cluster_tenants where tenant_id = ${tenantId} and lease_expires_at < ${databaseNowMs}`.execute(db);
      }
    } catch (error) {
      logger.warn({ err: (error as Error).message }, 'could not renew or look through the cluster\'s tenants; trying again');
    }
  }
}

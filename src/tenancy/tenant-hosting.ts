/**
 * Multi-tenant hosting (CONTRACT.md §11), composed at start-up: every tenant of the registry is
 * provisioned (database, role, migrations) before the server binds; afterwards each tenant's
 * runtime — its own store connected as its role, event hub, request broker, share of the shared
 * scheduler, workspace root and tools — opens on the tenant's first request and is held by
 * TenantRuntimes.
 */
import { serverSecrets } from '../config/server-secrets.ts';
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Logger } from 'pino';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config/config.ts';
import type { Catalog, CatalogModel } from '../config/models-file.ts';
import type { ProviderAdapter } from '../agent/providers/types.ts';
import { openStore, type StoreOptions } from '../store/database.ts';
import type { BoundaryRuntime } from '../runtime/boundary-runtime.ts';
import { openBoundaryRuntime, turnToolsFactory } from '../runtime/open-boundary.ts';
import type { Scheduler } from '../runtime/turn/scheduler.ts';
import { lazyToolRegistries } from '../runtime/tool-registries.ts';
import { createProcessGroupRunner } from '../exec/process-group.ts';
import { clusterMembership } from '../runtime/turn/turn-leases.ts';
import { provisionTenants } from './provision.ts';
import { tenantStateDir } from './db-password.ts';
import { TenantRuntimes } from './tenant-runtimes.ts';
import { mountTenantDisk, REVERT_RESERVATION_NAME, TenantDiskError, type TenantDisk } from './tenant-disk.ts';
import { DiskReservation, type RevertSpace } from '../workspace/revert-reservation.ts';
import { UsageError } from '../config/flags.ts';
import type { Tenant } from '../config/tenant-registry.ts';
import type { RuntimeTelemetry } from '../telemetry/runtime-telemetry.ts';
import type { BoundaryWebhookDeps } from '../runtime/boundary-runtime.ts';
import { NO_METRICS } from '../telemetry/recorder.ts';
import type { Kysely } from 'kysely';
import { migrateAdministrativeDatabase } from './admin-migrations.ts';
import { ClusterTenants } from './cluster-tenants.ts';
import { ClusterQueue, ClusterScheduler } from './cluster-queue.ts';
import type { ClusterSupervisor } from '../runtime/cluster-supervisor.ts';

/**
 * A tenant's share of PostgreSQL connections. Its turns hold a connection only per statement or
 * transaction, so a few suffice; `max_connections` must cover `--max-active-tenants` times this.
 */
const TENANT_POOL_SIZE = 4;

export interface TenantHostingOptions {
  config: Config;
  catalog: Catalog;
  scheduler: Scheduler;
  logger: Logger;
  adapterFor(model: CatalogModel): Promise<ProviderAdapter>;
  /** the server's metrics (per-tenant turn and token counters) and tracing */
  telemetry?: RuntimeTelemetry;
  /** how each tenant's database is claimed as its runtime opens (store/database-claim.ts) */
  claim: NonNullable<StoreOptions['claim']>;
  /**
   * Another instance of the cluster holds the administrative database (its claim): on SIGTERM the
   * tenants' turns are then handed over rather than ended, as a single-user instance's are.
   */
  othersPresent(): Promise<boolean>;
  /** no other instance of the cluster held the administrative database when this one claimed it */
  aloneOnRegistry: boolean;
  /** the administrative database (the claim's): with --cluster, which instance holds which tenant (cluster-tenants.ts) */
  adminDb: Kysely<any>;
  /** --cluster: the instance's one loop for background work (runtime/cluster-supervisor.ts); null without */
  supervisor: ClusterSupervisor | null;
  /** --webhook-url: server-wide URLs; each tenant's deliveries carry its id and leave from its own outbox */
  webhooks?: Omit<BoundaryWebhookDeps, 'firstLook'> | null;
}

export interface TenantHosting {
  runtimes: TenantRuntimes;
  /** the runtime of the request's tenant (access.ts chose it), held until the response closes */
  runtimeFor(request: FastifyRequest, reply: FastifyReply): Promise<BoundaryRuntime>;
  close(): Promise<void>;
}

export async function startTenantHosting(options: TenantHostingOptions): Promise<TenantHosting> {
  const { config, catalog, scheduler, logger, adapterFor, telemetry, claim } = options;
  const registry = config.tenants!;
  const stateRoot = config.tenantStateRoot!;
  const adminUrl = config.databaseUrl!;
  const sandboxRunner = config.sandboxRunner;
  if (sandboxRunner === null) {
    logger.warn('no --sandbox-runner: tenants\' agents are offered no tool that executes or writes; they answer, read inside their workspace, plan and ask');
  }

  if (config.cluster) await migrateAdministrativeDatabase(options.adminDb);
  const provisioned = await provisionTenants({ adminUrl, tenantStateRoot: stateRoot, tenants: registry.tenants, othersConnect: config.cluster && !options.aloneOnRegistry });
  const databaseUrls = new Map(provisioned.map((tenant) => [tenant.tenantId, tenant.databaseUrl]));
  logger.info({ tenants: provisioned.length }, 'tenants provisioned');
  const disks = sandboxRunner !== null && config.sandboxQuota !== null ? await mountTenantDisks(config, logger) : new Map<string, TenantDisk>();

  // without a sandbox, no tool that declares it executes (Tool.executes) is offered
  const registryFor = lazyToolRegistries({ withoutExecutingTools: sandboxRunner === null });
  const toolsFor = turnToolsFactory(registryFor, { confinedExecution: false, telemetry, permissionRules: config.permissionRules });

  const serverFiles = serverSecrets(config).map((secret) => secret.path);
  const drains = options.webhooks ? await webhookDrains(options, (tenantId) => databaseUrls.get(tenantId)!, (tenantId) => tenantStateDir(stateRoot, tenantId)) : null;
  const webhooks = options.webhooks && drains ? { ...options.webhooks, firstLook: (tenantId: string) => drains.firstLook(tenantId) } : null;
  /** set as the server stops: another instance of the cluster is alive to take the turns over */
  let handOver = false;
  const openTenant = async (tenant: Tenant) => {
    const stateDir = tenantStateDir(stateRoot, tenant.id);
    // the runtime's own worker takes over the tenant's outbox
    await drains?.stop(tenant.id);
    // Migrations ran at provisioning, as the tenant role.
    const store = await openStore({ databaseUrl: databaseUrls.get(tenant.id)!, stateDir, maxConnections: TENANT_POOL_SIZE, migrate: false, claim, ...(config.cluster ? { leaseMs: config.turnLeaseSeconds * 1000 } : {}) });
    const sandboxHome = disks.get(tenant.id)?.home ?? join(stateDir, 'sandbox-home');
    if (sandboxRunner !== null) mkdirSync(sandboxHome, { recursive: true, mode: 0o700 });
    try {
      const workspaceRoots = [tenant.workspaceRoot];
      const runtime = await openBoundaryRuntime(
        {
          id: tenant.id, db: store.db, aloneOnDatabase: store.claim?.alone ?? true, workspaceRoots,
          cluster: clusterMembership(config), duties: options.supervisor?.boundary(store.doorbell) ?? null, catalog, limits: config.limits, yolo: config.yolo, projectInstructions: config.projectInstructions, stateDir,
          tools: { sandboxRunner, workspaceRoots, hostRunner: createProcessGroupRunner(), sandboxHome, serverFiles },
          revertSpace: revertSpaceOf(disks.get(tenant.id)),
        },
        { scheduler, logger: logger.child({ tenant: tenant.id }), adapterFor, toolsFor, telemetry, webhooks },
      );
      await store.claim?.admitOthers();
      await clusterTenants?.hold(tenant.id);
      return {
        runtime,
        close: async () => {
          // The runtime's close stops the tenant's sandbox runner with its tools. An idle runtime
          // closed for another tenant has no turn to hand over; a stopping instance of a live
          // cluster hands its turns over, which another instance resumes (cluster-tenants.ts).
          await runtime.close({ handOver });
          // handed over, the tenant stays recorded as this instance's, to be taken by another
          if (!handOver) await clusterTenants?.release(tenant.id);
          await store.close();
          drains?.start(tenant.id);
        },
      };
    } catch (error) {
      await store.close();
      drains?.start(tenant.id);
      throw error;
    }
  };

  const runtimes = new TenantRuntimes({ maxActive: config.limits.maxActiveTenants, open: openTenant, logger });
  const tenantsById = new Map(registry.tenants.map((tenant) => [tenant.id, tenant]));
  const { supervisor } = options;
  const clusterQueue =
    scheduler instanceof ClusterScheduler && supervisor
      ? new ClusterQueue({ db: options.adminDb, instanceId: config.instanceId, leaseMs: config.turnLeaseSeconds * 1000, scheduler, logger, supervisor })
      : null;
  const clusterTenants = supervisor
    ? new ClusterTenants({
        supervisor,
        db: options.adminDb,
        instanceId: config.instanceId,
        leaseMs: config.turnLeaseSeconds * 1000,
        logger,
        known: (tenantId) => tenantsById.has(tenantId),
        open: async (tenantId) => (await runtimes.lease(tenantsById.get(tenantId)!)).release(),
      })
    : null;
  return {
    runtimes,
    async runtimeFor(request, reply) {
      const lease = await runtimes.lease(request.tenant!);
      // 'close' ends every response: answered, failed, an SSE stream ended, a client gone away.
      if (reply.raw.closed) lease.release();
      else reply.raw.once('close', lease.release);
      return lease.runtime;
    },
    close: async () => {
      handOver = config.cluster && (await options.othersPresent());
      await clusterTenants?.stop(handOver).catch((error: Error) => logger.warn({ err: error.message }, 'could not give up this instance\'s tenants in the administrative database'));
      await clusterQueue?.stop().catch((error: Error) => logger.warn({ err: error.message }, 'could not withdraw this instance\'s queued turns from the administrative database'));
      // first: a runtime closing now starts no drain
      await drains?.closeAll();
      await runtimes.closeAll();
      await unmountTenantDisks(disks, logger);
    },
  };
}

/**
 * --webhook-url: every tenant's outbox is drained from the start, before any of its requests; a
 * tenant's runtime takes its outbox over while open (tenant-webhook-drains.ts).
 */
async function webhookDrains(options: TenantHostingOptions, databaseUrlOf: (tenantId: string) => string, stateDirOf: (tenantId: string) => string) {
  const { TenantWebhookDrains } = await import('./tenant-webhook-drains.ts');
  const { config, logger, telemetry } = options;
  const drains = new TenantWebhookDrains({
    config: options.webhooks!.config, sender: options.webhooks!.sender, databaseUrlOf, stateDirOf, alone: !config.cluster, metrics: telemetry?.metrics ?? NO_METRICS, logger,
  });
  for (const tenant of config.tenants!.tenants) drains.start(tenant.id);
  return drains;
}

/**
 * Every tenant's quota'd file system, mounted before the server binds (tenant-disk.ts). A host
 * that cannot give one (not root, no loop device, no mkfs.ext4) stops start-up naming the flag:
 * a tenant never runs without the quota the operator asked for.
 */
async function mountTenantDisks(config: Config, logger: Logger): Promise<Map<string, TenantDisk>> {
  const quota = config.sandboxQuota!;
  const disks = new Map<string, TenantDisk>();
  const refuse = (reason: string) =>
    new UsageError(`--sandbox-disk-quota: ${reason}; a quota needs root, loop devices and mkfs.ext4 (e2fsprogs), or give --sandbox-disk-quota 0 to run tenants without one`);
  if (process.getuid?.() !== 0) throw refuse('the server is not root, so it cannot mount a tenant\'s file system');
  try {
    for (const tenant of config.tenants!.tenants) {
      const disk = await mountTenantDisk(tenantStateDir(config.tenantStateRoot!, tenant.id), tenant.workspaceRoot, quota).catch((error: Error) => {
        throw error instanceof TenantDiskError ? refuse(`tenant ${tenant.id}: ${error.message}`) : error;
      });
      disks.set(tenant.id, disk);
      if (disk.keptLargerBytes !== null) logger.warn({ tenant: tenant.id, bytes: disk.keptLargerBytes }, 'the tenant\'s file system is larger than --sandbox-disk-quota and is kept (it is never shrunk)');
    }
  } catch (error) {
    await unmountTenantDisks(disks, logger);
    throw error;
  }
  logger.info({ tenants: disks.size, bytes: quota.bytes, inodes: quota.inodes }, 'tenant file systems mounted');
  return disks;
}

async function unmountTenantDisks(disks: Map<string, TenantDisk>, logger: Logger): Promise<void> {
  for (const [tenant, disk] of disks) {
    await disk.close().catch((error: Error) => logger.error({ tenant, err: error.message }, 'cannot unmount the tenant\'s file system'));
  }
  disks.clear();
}

/** A tenant with a quota'd file system counts its revert content there, in a file beside its `home` (out of the guest's view). */
function revertSpaceOf(disk: TenantDisk | undefined): RevertSpace | null {
  return disk ? new DiskReservation(join(dirname(disk.home), REVERT_RESERVATION_NAME)) : null;
}

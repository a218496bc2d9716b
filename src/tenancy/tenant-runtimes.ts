/**
 * The tenant runtimes held in memory (CONTRACT.md §11): a tenant's runtime starts on its first
 * request; at most `maxActive` are held, and when another tenant needs a slot the least recently
 * used one that nothing depends on (no request in flight, no active turn, checkout or subscriber)
 * is closed. When none can be closed the request is refused with 503 `tenant_runtime_unavailable`.
 */
import type { Logger } from 'pino';
import { ApiError } from '../domain/errors.ts';
import type { BoundaryRuntime } from '../runtime/boundary-runtime.ts';
import type { Tenant } from '../config/tenant-registry.ts';

/** A started tenant runtime and how to close everything it holds (store, sandbox runner). */
export interface OpenedTenantRuntime {
  runtime: BoundaryRuntime;
  close(): Promise<void>;
}

export interface TenantRuntimesOptions {
  maxActive: number;
  open(tenant: Tenant): Promise<OpenedTenantRuntime>;
  logger: Logger;
}

/** A runtime in use by one request: `release` once the request's response has closed. */
export interface TenantLease {
  runtime: BoundaryRuntime;
  release(): void;
}

interface HeldRuntime {
  opening: Promise<OpenedTenantRuntime>;
  opened: OpenedTenantRuntime | null;
  /** requests in flight; counted from before the runtime opens, so an opening one is never chosen */
  leases: number;
}

export class TenantRuntimes {
  /** Map order is recency: the least recently used first, a use moves a tenant to the end. */
  private readonly held = new Map<string, HeldRuntime>();
  /** runtimes being closed; the tenant's next runtime opens after its previous one is closed */
  private readonly closing = new Map<string, Promise<void>>();
  private stopped = false;

  constructor(private readonly options: TenantRuntimesOptions) {}

  get activeCount(): number {
    return this.held.size;
  }

  async lease(tenant: Tenant): Promise<TenantLease> {
    if (this.stopped) throw new ApiError('server_stopping', 'the server is stopping');
    let held = this.held.get(tenant.id);
    if (held) {
      this.held.delete(tenant.id);
    } else {
      if (this.held.size >= this.options.maxActive) this.closeLeastRecentlyUsedIdle();
      held = { opening: this.open(tenant), opened: null, leases: 0 };
    }
    this.held.set(tenant.id, held);
    held.leases++;
    let opened: OpenedTenantRuntime;
    try {
      opened = await held.opening;
      held.opened = opened;
    } catch (error) {
      held.leases--;
      if (this.held.get(tenant.id) === held) this.held.delete(tenant.id);
      throw error;
    }
    let released = false;
    return {
      runtime: opened.runtime,
      release: () => {
        if (released) return;
        released = true;
        held.leases--;
      },
    };
  }

  /** Server shutdown: closes every runtime (ending its live turns durably). */
  async closeAll(): Promise<void> {
    this.stopped = true;
    const held = [...this.held.entries()];
    this.held.clear();
    await Promise.all(held.map(([tenantId, runtime]) => this.close(tenantId, runtime)));
    await Promise.all(this.closing.values());
  }

  private async open(tenant: Tenant): Promise<OpenedTenantRuntime> {
    await this.closing.get(tenant.id);
    const started = performance.now();
    const opened = await this.options.open(tenant);
    this.options.logger.info({ tenant: tenant.id, ms: Math.round(performance.now() - started), active: this.held.size }, 'tenant runtime started');
    return opened;
  }

  private closeLeastRecentlyUsedIdle(): void {
    for (const [tenantId, held] of this.held) {
      if (held.leases > 0 || !held.opened?.runtime.isIdle()) continue;
      this.held.delete(tenantId);
      void this.close(tenantId, held);
      return;
    }
    throw new ApiError('tenant_runtime_unavailable', 'every tenant runtime slot is busy; retry shortly');
  }

  private close(tenantId: string, held: HeldRuntime): Promise<void> {
    const closing = this.closeNow(tenantId, held).finally(() => {
      if (this.closing.get(tenantId) === closing) this.closing.delete(tenantId);
    });
    this.closing.set(tenantId, closing);
    return closing;
  }

  private async closeNow(tenantId: string, held: HeldRuntime): Promise<void> {
    let opened: OpenedTenantRuntime;
    try {
      opened = await held.opening;
    } catch {
      return; // its failure was answered to the request that opened it
    }
    try {
      await opened.close();
      this.options.logger.info({ tenant: tenantId }, 'tenant runtime closed');
    } catch (error) {
      this.options.logger.error({ tenant: tenantId, err: error }, 'could not close a tenant runtime');
    }
  }
}

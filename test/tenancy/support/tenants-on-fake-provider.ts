import { after, before } from 'node:test';
import { startFakeProvider, type FakeProvider } from '../../support/fake-provider.ts';
import { fakeProviderModels } from '../../support/server.ts';
import { startTenantServer, type TenantServerOptions, type TenantServer } from './tenant-server.ts';

export interface TenantsOnFakeProvider {
  readonly fake: FakeProvider;
  readonly hosted: TenantServer;
  /** starts the stopped tenant server again on its databases; the after hook then closes the new one */
  restart(): Promise<TenantServer>;
}

/**
 * Registers before/after hooks in the current suite that start a fake provider and a multi-tenant
 * agentd whose models talk to it; afterwards drops the tenants' databases and closes the fake.
 */
export function useTenantsOnFakeProvider(options: Omit<TenantServerOptions, 'models'>): TenantsOnFakeProvider {
  let fake: FakeProvider | undefined;
  let hosted: TenantServer | undefined;
  before(async () => {
    fake = await startFakeProvider();
    hosted = await startTenantServer({ ...options, models: fakeProviderModels(fake.baseUrl) });
  });
  after(async () => {
    await hosted?.close();
    await fake?.close();
  });
  return {
    get fake() {
      if (!fake) throw new Error('the fake provider starts in the suite\'s before hook');
      return fake;
    },
    get hosted() {
      if (!hosted) throw new Error('the tenant server starts in the suite\'s before hook');
      return hosted;
    },
    async restart() {
      if (!hosted) throw new Error('the tenant server starts in the suite\'s before hook');
      hosted = await hosted.restart();
      return hosted;
    },
  };
}

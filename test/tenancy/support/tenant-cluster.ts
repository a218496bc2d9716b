import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, afterEach, before } from 'node:test';
import { startFakeProvider, type FakeProvider } from '../../support/fake-provider.ts';
import { startAgentd, type AgentdProcess } from '../../support/agentd-process.ts';
import { EventRecorder } from '../../support/events.ts';
import { http, type HttpOptions, type HttpResponse } from '../../support/http.ts';
import { fakeProviderModels } from '../../support/server.ts';
import { registryFixture, type RegistryFixture } from '../registry-fixture.ts';
import { scratchCluster } from './scratch-cluster.ts';
import { stopInstances, until } from '../../support/cluster.ts';

export { until };

/** One tenant as a client of one instance sees it. */
export interface TenantOnInstance {
  id: string;
  workspaceRoot: string;
  request(method: string, path: string, options?: HttpOptions): Promise<HttpResponse>;
  /** a subscriber to the tenant's /v1/events on that instance; closed after each test */
  subscribe(): Promise<EventRecorder>;
}

/** Several multi-tenant agentd processes with --cluster on one registry, administrative database and tenant state root. */
export interface TenantCluster {
  readonly fake: FakeProvider;
  readonly fixture: RegistryFixture;
  readonly tenantIds: readonly string[];
  /** the registry's (administrative) database, as its owner */
  readonly adminUrl: string;
  /** an instance with the shared arguments, `--instance-id` and `extra`; killed after each test */
  start(instanceId: string, extra?: string[]): Promise<AgentdProcess>;
  tenant(agentd: AgentdProcess, index: number): TenantOnInstance;
}

export function useTenantCluster(options: { tenantCount: number; args?: string[] }): TenantCluster {
  let fake: FakeProvider;
  let fixture: RegistryFixture;
  let document: any;
  let scratch: ReturnType<typeof scratchCluster>;
  let args: string[];
  const running: AgentdProcess[] = [];
  const recorders: EventRecorder[] = [];
  before(async () => {
    fake = await startFakeProvider();
    fixture = registryFixture();
    document = fixture.document(options.tenantCount);
    const registryPath = fixture.write(document);
    scratch = scratchCluster();
    await scratch.create();
    scratch.adopt(document.tenants.map((tenant: { id: string }) => tenant.id));
    const modelsFile = join(fixture.dir, 'models.json');
    writeFileSync(modelsFile, JSON.stringify(fakeProviderModels(fake.baseUrl)));
    args = ['--state-dir', fixture.stateDir, '--tenant-registry', registryPath, '--database-url', scratch.adminUrl, '--models-file', modelsFile, '--cluster', ...(options.args ?? [])];
  });
  afterEach(() => stopInstances(running, recorders));
  after(async () => {
    await fake.close();
    await scratch.drop();
  });
  return {
    get fake() {
      return fake;
    },
    get fixture() {
      return fixture;
    },
    get adminUrl() {
      return scratch.adminUrl;
    },
    get tenantIds() {
      return document.tenants.map((tenant: { id: string }) => tenant.id);
    },
    async start(instanceId, extra = []) {
      const agentd = await startAgentd([...args, '--instance-id', instanceId, ...extra], 60_000);
      running.push(agentd);
      return agentd;
    },
    tenant(agentd, index) {
      const entry = document.tenants[index];
      const authorization = { authorization: `Bearer ${readFileSync(entry.credentials[0].tokenFile, 'utf8').trim()}` };
      return {
        id: entry.id,
        workspaceRoot: entry.workspaceRoot,
        request: (method, path, requestOptions = {}) => http(method, agentd.url + path, { ...requestOptions, headers: { ...authorization, ...requestOptions.headers } }),
        async subscribe() {
          const recorder = new EventRecorder(agentd.url, { headers: authorization });
          recorders.push(recorder);
          await recorder.opened;
          return recorder;
        },
      };
    },
  };
}

const TERMINAL = ['completed', 'failed', 'cancelled'];

export const turnOf = async (tenant: TenantOnInstance, turnId: string) => (await tenant.request('GET', `/v1/turns/${turnId}`)).json;

export const endOf = (tenant: TenantOnInstance, turnId: string, timeoutMs = 30_000) =>
  until(`the end of ${turnId}`, async () => {
    const turn = await turnOf(tenant, turnId);
    return TERMINAL.includes(turn.status) ? turn : undefined;
  }, timeoutMs);

import { mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, afterEach, before } from 'node:test';
import { createBackend, type TestBackend } from './backends.ts';
import { startFakeProvider, type FakeProvider } from './fake-provider.ts';
import { startAgentd, type AgentdProcess } from './agentd-process.ts';
import { EventRecorder } from './events.ts';
import { http } from './http.ts';
import { fakeProviderModels } from './server.ts';

/** Polls `probe` every 50 ms until it gives a value; fails naming `what` past the timeout. */
export async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The `agentd serve` arguments every instance of a test cluster shares: one database, one workspace, the fake's models. */
export function clusterArguments(backend: TestBackend, fakeBaseUrl: string): string[] {
  const workspace = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-ws-')));
  const modelsFile = join(backend.stateDir, 'models.json');
  writeFileSync(modelsFile, JSON.stringify(fakeProviderModels(fakeBaseUrl)));
  return ['--state-dir', backend.stateDir, '--workspace-root', workspace, '--models-file', modelsFile, '--database-url', backend.databaseUrl!, '--cluster'];
}

const TERMINAL = ['completed', 'failed', 'cancelled'];

/** A test's cluster: one PostgreSQL database, one fake provider, and the instances it starts. */
/** After each test: closes its event recorders and kills its instances, a frozen one (SIGSTOP) included. */
export async function stopInstances(running: AgentdProcess[], recorders: EventRecorder[]): Promise<void> {
  for (const recorder of recorders.splice(0)) recorder.close();
  for (const agentd of running.splice(0)) {
    agentd.child.kill('SIGCONT');
    await agentd.kill();
  }
}

export interface TestCluster {
  readonly backend: TestBackend;
  readonly fake: FakeProvider;
  /** the workspace root every instance shares */
  readonly workspace: string;
  /**
   * an instance with the shared arguments, `--instance-id` and `extra` (a `--database-url` there
   * replaces the shared one: the same database through a proxy); stopped after each test
   */
  start(instanceId: string, extra?: string[]): Promise<AgentdProcess>;
  /** a subscriber to the instance's event stream; closed after each test */
  subscribe(agentd: AgentdProcess, options?: { lastEventId?: number }): Promise<EventRecorder>;
  turnOn(agentd: AgentdProcess, turnId: string): Promise<any>;
  statusOn(agentd: AgentdProcess, turnId: string, status: string): Promise<true>;
  ended(agentd: AgentdProcess, turnId: string, timeoutMs?: number): Promise<any>;
}

/**
 * Registers the hooks of a cluster test (inside its describe): the database and the fake before,
 * the instances (thawed first, if a test froze one) and subscribers after each test, the rest
 * after all. `sharedArgs` are added to every instance's, read when the hooks run.
 */
export function useTestCluster(sharedArgs: () => string[] = () => []): TestCluster {
  let backend: TestBackend;
  let fake: FakeProvider;
  let args: string[];
  const running: AgentdProcess[] = [];
  const recorders: EventRecorder[] = [];
  before(async () => {
    backend = await createBackend('postgres');
    fake = await startFakeProvider();
    args = [...clusterArguments(backend, fake.baseUrl), ...sharedArgs()];
  });
  afterEach(() => stopInstances(running, recorders));
  after(async () => {
    await fake.close();
    await backend.drop();
  });
  const turnOn = async (agentd: AgentdProcess, turnId: string) => (await http('GET', `${agentd.url}/v1/turns/${turnId}`)).json;
  return {
    get backend() {
      return backend;
    },
    get fake() {
      return fake;
    },
    get workspace() {
      return args[args.indexOf('--workspace-root') + 1]!;
    },
    async start(instanceId, extra = []) {
      const shared = extra.includes('--database-url') ? args.filter((_, index) => args[index] !== '--database-url' && args[index - 1] !== '--database-url') : args;
      const agentd = await startAgentd([...shared, '--instance-id', instanceId, ...extra]);
      running.push(agentd);
      return agentd;
    },
    async subscribe(agentd, options = {}) {
      const recorder = new EventRecorder(agentd.url, options);
      recorders.push(recorder);
      await recorder.opened;
      return recorder;
    },
    turnOn,
    statusOn: (agentd, turnId, status) => until(`${status} on ${agentd.url}`, async () => ((await turnOn(agentd, turnId)).status === status ? true : undefined)),
    ended: (agentd, turnId, timeoutMs = 30_000) =>
      until(`the end of ${turnId}`, async () => {
        const turn = await turnOn(agentd, turnId);
        return TERMINAL.includes(turn.status) ? turn : undefined;
      }, timeoutMs),
  };
}

import { before, after } from 'node:test';
import { startTestServer, fakeProviderModels, type TestServer, type TestServerOptions } from './server.ts';
import { startFakeProvider, type FakeProvider, type FakeRequest } from './fake-provider.ts';
import { EventRecorder } from './events.ts';

export interface ServerOnFakeProvider {
  readonly fake: FakeProvider;
  readonly server: TestServer;
}

export interface SuiteServerOnFakeProvider extends ServerOnFakeProvider {
  /** `close` runs at the suite's end before the server closes (a client of the server, say) */
  closeFirst(close: () => Promise<void>): void;
}

export interface FakeServerHarness extends ServerOnFakeProvider {
  /** every event since the server started */
  readonly events: EventRecorder;
  newSession(body?: unknown): Promise<any>;
  /** submits a turn and returns the Turn */
  submit(sessionId: string, input: string): Promise<any>;
  resolve(requestId: string, body: unknown): ReturnType<TestServer['request']>;
  /** the n-th (1-based) human request of a turn, once it was published */
  nthRequestOf(turnId: string, n: number): Promise<any>;
  /** the output the model received for a call, from the latest provider request carrying it */
  toolOutputSent(callId: string): string | undefined;
}

export type FakeServerOptions = Omit<TestServerOptions, 'models'> & {
  /** the models file, given the fake's base URL; default: fakeProviderModels */
  models?: (baseUrl: string) => unknown;
};

/** Starts a fake provider and a server whose models talk to it (the fake is closed if the server fails to start). */
async function startServerOnFakeProvider(options: FakeServerOptions): Promise<{ fake: FakeProvider; server: TestServer }> {
  const fake = await startFakeProvider();
  const { models, ...rest } = options;
  try {
    const server = await startTestServer({ ...rest, models: models ? models(fake.baseUrl) : fakeProviderModels(fake.baseUrl) });
    return { fake, server };
  } catch (error) {
    await fake.close();
    throw error;
  }
}

/**
 * Registers before/after hooks in the current suite that start a fake provider and a server whose
 * models talk to it; closes both afterwards. For suites that need no event recorder (useFakeServer).
 */
export function useServerOnFakeProvider(options: FakeServerOptions = {}): SuiteServerOnFakeProvider {
  let started: { fake: FakeProvider; server: TestServer };
  const closingFirst: (() => Promise<void>)[] = [];
  before(async () => {
    started = await startServerOnFakeProvider(options);
  });
  after(async () => {
    for (const close of closingFirst) await close();
    await started.server.close();
    await started.fake.close();
  });
  return {
    get fake() {
      return started.fake;
    },
    get server() {
      return started.server;
    },
    closeFirst(close) {
      closingFirst.push(close);
    },
  };
}

/**
 * Registers before/after hooks in the current suite that start a fake provider, a server whose
 * models talk to it, and an event recorder; closes all three afterwards.
 */
export function useFakeServer(options: FakeServerOptions = {}): FakeServerHarness {
  let fake: FakeProvider;
  let server: TestServer;
  let events: EventRecorder;
  before(async () => {
    ({ fake, server } = await startServerOnFakeProvider(options));
    events = new EventRecorder(server.url, { lastEventId: 0 });
    await events.opened;
  });
  after(async () => {
    events.close();
    await server.close();
    await fake.close();
  });
  return {
    get fake() {
      return fake;
    },
    get server() {
      return server;
    },
    get events() {
      return events;
    },
    newSession: async (body = {}) => (await server.request('POST', '/v1/sessions', { body })).json,
    submit: async (sessionId, input) => (await server.request('POST', `/v1/sessions/${sessionId}/turns`, { body: { input } })).json,
    resolve: (requestId, body) => server.request('POST', `/v1/requests/${requestId}/resolve`, { body }),
    async nthRequestOf(turnId, n) {
      const created = () => events.ofTurn(turnId).filter((event) => event.type === 'request.created');
      await events.waitFor(() => created().length >= n);
      return created()[n - 1].data.data;
    },
    toolOutputSent: (callId) => toolOutputSent(fake.requests, callId),
  };
}

export function toolOutputSent(requests: FakeRequest[], callId: string): string | undefined {
  for (const request of [...requests].reverse()) {
    const item = request.body?.input?.find((entry: any) => entry.call_id === callId && String(entry.type).endsWith('_output'));
    if (item) return String(item.output);
  }
  return undefined;
}

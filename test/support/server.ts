import { mkdirSync, mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig } from '../../src/config/config.ts';
import { startServer, type RunningServer } from '../../src/server.ts';
import { createBackend, type BackendKind, type TestBackend } from './backends.ts';
import { http, type HttpOptions, type HttpResponse } from './http.ts';

export interface TestServerOptions {
  backend?: BackendKind;
  /** extra `agentd serve` arguments */
  args?: string[];
  env?: NodeJS.ProcessEnv;
  /** models file content; default: one model on an unreachable local connection */
  models?: unknown;
  /** reuse the backend and workspace of an earlier server (for restart tests) */
  reuse?: { backend: TestBackend; workspace: string };
  keepAliveMs?: number;
  /** host confinement of commands (ServerTuning.confinement): 'auto' by default */
  confinement?: 'auto' | 'off';
  /** keep every log line (debug level) in memory, for tests that assert what logs never hold */
  captureLogs?: boolean;
  /** the level of the captured log (default debug) */
  captureLevel?: 'debug' | 'info';
  /** --cluster: the supervisor's poll (ServerTuning.clusterPollMs) */
  clusterPollMs?: number;
}

export interface TestServer {
  server: RunningServer;
  backend: TestBackend;
  /** the canonical workspace root (a fresh temporary directory) */
  workspace: string;
  url: string;
  request(method: string, path: string, options?: HttpOptions): Promise<HttpResponse>;
  /** closes the server, keeping the database and workspace */
  stop(): Promise<void>;
  /** closes the server and drops its database */
  close(): Promise<void>;
  /** the JSON log lines written so far (only with captureLogs) */
  logs(): string[];
}

export const DEFAULT_MODELS = {
  defaultModel: 'test-model',
  connections: [{ id: 'local', provider: 'local', dialect: 'openai-responses', baseUrl: 'http://127.0.0.1:9/v1', apiKeyEnv: null }],
  models: [
    { id: 'test-model', connection: 'local', transportModel: 'test-transport', label: 'Test', contextWindow: 32768, efforts: ['none', 'low', 'medium', 'high'], defaultEffort: 'medium' },
    { id: 'plain-model', connection: 'local', transportModel: 'plain', label: null, contextWindow: null },
  ],
};

/** Starts a real agentd on a free loopback port with a real database and a temporary workspace. */
export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const backend = options.reuse?.backend ?? (await createBackend(options.backend ?? 'sqlite'));
  const workspace = options.reuse?.workspace ?? realpathSync(mkdtempSync(join(tmpdir(), 'agentd-ws-')));
  mkdirSync(backend.stateDir, { recursive: true });
  const modelsFile = join(backend.stateDir, 'models.json');
  writeFileSync(modelsFile, JSON.stringify(options.models ?? DEFAULT_MODELS));
  const args = [
    '--port', '0',
    '--state-dir', backend.stateDir,
    '--workspace-root', workspace,
    '--models-file', modelsFile,
    ...(backend.databaseUrl ? ['--database-url', backend.databaseUrl] : []),
    ...(options.args ?? []),
  ];
  const env = options.env ?? {};
  const config = await loadConfig(args, env, workspace);
  const logLines: string[] = [];
  const logger = options.captureLogs
    ? pino({ level: options.captureLevel ?? 'debug' }, { write: (line: string) => void logLines.push(line) })
    : pino({ level: process.env.AGENTD_TEST_LOG ?? 'silent' });
  const server = await startServer(config, env, logger, { keepAliveMs: options.keepAliveMs, confinement: options.confinement, clusterPollMs: options.clusterPollMs });
  const url = `http://127.0.0.1:${server.port}`;
  const stop = stopOnce(server);
  return {
    server,
    backend,
    workspace,
    url,
    request: (method, path, requestOptions) => http(method, url + path, requestOptions),
    stop,
    logs: () => [...logLines],
    close: async () => {
      await stop();
      await backend.drop();
    },
  };
}

/** Closes the server on the first call; later calls (a test's stop, then its after hook's close) do nothing. */
export function stopOnce(server: RunningServer): () => Promise<void> {
  let stopped = false;
  return async () => {
    if (stopped) return;
    stopped = true;
    await server.close();
  };
}

/** A models file whose models talk to a fake provider, one per dialect. */
export function fakeProviderModels(baseUrl: string, options: { contextWindow?: number | null; defaultModel?: string } = {}) {
  const dialects = ['openai-responses', 'anthropic-messages', 'openai-chat'] as const;
  return {
    defaultModel: options.defaultModel ?? 'fake-responses',
    connections: dialects.map((dialect) => ({ id: `fake-${dialect}`, provider: `fake-${dialect.split('-')[0]}`, dialect, baseUrl, apiKeyEnv: null })),
    models: dialects.map((dialect) => ({
      id: dialect === 'openai-responses' ? 'fake-responses' : dialect === 'anthropic-messages' ? 'fake-anthropic' : 'fake-chat',
      connection: `fake-${dialect}`,
      transportModel: `fake-${dialect}-model`,
      contextWindow: options.contextWindow ?? null,
      efforts: ['none', 'low', 'medium', 'high'],
      defaultEffort: 'none',
      prices: { inputPerMillion: 1, outputPerMillion: 2, cachedInputPerMillion: 0.5 },
    })),
  };
}

/** Polls a turn until it is terminal. */
export async function waitForTurn(server: TestServer, turnId: string, timeoutMs = 15_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const turn = (await server.request('GET', `/v1/turns/${turnId}`)).json;
    if (['completed', 'failed', 'cancelled'].includes(turn.status)) return turn;
    if (Date.now() > deadline) throw new Error(`turn ${turnId} still ${turn.status}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Polls a turn until it has the given status. */
export async function waitForStatus(server: TestServer, turnId: string, status: string, timeoutMs = 15_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const turn = (await server.request('GET', `/v1/turns/${turnId}`)).json;
    if (turn.status === status) return turn;
    if (Date.now() > deadline) throw new Error(`turn ${turnId} is ${turn.status}, not ${status}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { loadConfig } from '../../../src/config/config.ts';
import { startServer, type RunningServer } from '../../../src/server.ts';
import { http, type HttpOptions, type HttpResponse } from '../../support/http.ts';
import { EventRecorder } from '../../support/events.ts';
import { stopOnce } from '../../support/server.ts';
import { registryFixture, type RegistryFixture } from '../registry-fixture.ts';
import { scratchCluster } from './scratch-cluster.ts';

/** One tenant as a client sees it: its id, workspace and a request function carrying its token. */
export interface TenantClient {
  id: string;
  workspaceRoot: string;
  token: string;
  request(method: string, path: string, options?: HttpOptions): Promise<HttpResponse>;
  /** a recording SSE client of this tenant's /v1/events */
  events(lastEventId?: number): EventRecorder;
}

export interface TenantServer {
  server: RunningServer;
  url: string;
  tenants: TenantClient[];
  fixture: RegistryFixture;
  /** every line agentd logged, as written */
  logLines: string[];
  /** a request with any Authorization header (or none) */
  request(method: string, path: string, options?: HttpOptions): Promise<HttpResponse>;
  /** stops the server, keeping databases, roles, registry and workspaces */
  stop(): Promise<void>;
  /** starts it again on the same registry and databases (the earlier one must be stopped) */
  restart(): Promise<TenantServer>;
  /** stops it and drops every database and role it made */
  close(): Promise<void>;
}

export interface TenantServerOptions {
  tenantCount: number;
  /** the models file's content */
  models: unknown;
  /** extra `agentd serve` arguments */
  args?: string[];
}

/**
 * A real agentd in multi-tenant mode: a registry of `tenantCount` tenants with real token files,
 * provisioned through a scratch non-superuser administrative role on the test PostgreSQL, logging
 * into memory (info level) so tests can read what it logged.
 */
export async function startTenantServer(options: TenantServerOptions): Promise<TenantServer> {
  const fixture = registryFixture();
  const document = fixture.document(options.tenantCount);
  const registryPath = fixture.write(document);
  const cluster = scratchCluster();
  await cluster.create();
  cluster.adopt(document.tenants.map((tenant: { id: string }) => tenant.id));
  const modelsFile = join(fixture.dir, 'models.json');
  writeFileSync(modelsFile, JSON.stringify(options.models));
  const args = [
    '--port', '0',
    '--state-dir', fixture.stateDir,
    '--tenant-registry', registryPath,
    '--database-url', cluster.adminUrl,
    '--models-file', modelsFile,
    ...(options.args ?? []),
  ];
  const logLines: string[] = [];
  const launch = async (): Promise<TenantServer> => {
    const sink = new Writable({
      write(chunk, _encoding, done) {
        logLines.push(...String(chunk).split('\n').filter(Boolean));
        done();
      },
    });
    const logger = pino({ level: 'info', redact: { paths: ['req.headers.authorization', 'headers.authorization'], remove: true } }, sink);
    const server = await startServer(await loadConfig(args, {}, fixture.dir), {}, logger, { confinement: 'off' });
    const url = `http://127.0.0.1:${server.port}`;
    const tenants = document.tenants.map((tenant: any): TenantClient => {
      const token = readFileSync(tenant.credentials[0].tokenFile, 'utf8').trim();
      const authorization = { authorization: `Bearer ${token}` };
      return {
        id: tenant.id,
        workspaceRoot: tenant.workspaceRoot,
        token,
        request: (method, path, requestOptions = {}) => http(method, url + path, { ...requestOptions, headers: { ...authorization, ...requestOptions.headers } }),
        events: (lastEventId) => new EventRecorder(url, { lastEventId, headers: authorization }),
      };
    });
    const stop = stopOnce(server);
    return {
      server,
      url,
      tenants,
      fixture,
      logLines,
      request: (method, path, requestOptions) => http(method, url + path, requestOptions),
      stop,
      restart: launch,
      close: async () => {
        await stop();
        await cluster.drop();
      },
    };
  };
  try {
    return await launch();
  } catch (error) {
    await cluster.drop();
    throw error;
  }
}

/** A new session of `tenant` with one turn of `input`; returns the turn as POST answered it (202). */
export async function startTenantTurn(tenant: TenantClient, input: string): Promise<any> {
  const session = await tenant.request('POST', '/v1/sessions', { body: {} });
  if (session.status !== 201) throw new Error(`POST /v1/sessions: HTTP ${session.status} ${JSON.stringify(session.json)}`);
  const turn = await tenant.request('POST', `/v1/sessions/${session.json.id}/turns`, { body: { input } });
  if (turn.status !== 202) throw new Error(`POST turns: HTTP ${turn.status} ${JSON.stringify(turn.json)}`);
  return turn.json;
}

/** Polls a tenant's turn until `done` says yes. */
export async function waitForTenantTurn(tenant: TenantClient, turnId: string, done: (turn: any) => boolean = (turn) => ['completed', 'failed', 'cancelled'].includes(turn.status), timeoutMs = 15_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const turn = (await tenant.request('GET', `/v1/turns/${turnId}`)).json;
    if (done(turn)) return turn;
    if (Date.now() > deadline) throw new Error(`turn ${turnId} is still ${turn.status}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/**
 * Multi-tenant hosting (issue 13) on the real PostgreSQL: what a tenant's first request costs (its
 * runtime starts: a pool connected as the tenant's role, event log, broker), and GET
 * /v1/sessions/:id spread round-robin over 16 tenants' tokens against the same load on one tenant.
 *
 *   node --import tsx bench/tenants.ts      (BENCH_TENANTS, default 16; BENCH_SECONDS; BENCH_ROUNDS)
 *
 * Provisions through a scratch non-superuser administrative role and drops every database and
 * role it made afterwards, also when a measurement fails.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { registryFixture } from '../test/tenancy/registry-fixture.ts';
import { scratchCluster } from '../test/tenancy/support/scratch-cluster.ts';
import { ensureBuilt, modelsFor, REPO_ROOT, spawnListening, type Child } from './support/children.ts';
import { HttpClient } from './support/http-client.ts';
import { waitForQuietMachine } from './support/quiet.ts';
import { fixed, median, percentile, printFigure, runIfMain, whole } from './support/report.ts';
import { runWrk, type WrkResult } from './support/wrk.ts';

interface BenchTenant {
  id: string;
  token: string;
  /** one session of its own, created before the load */
  sessionId?: string;
}

const tenantCount = Number(process.env.BENCH_TENANTS ?? 16);
const seconds = Number(process.env.BENCH_SECONDS ?? 5);
const rounds = Number(process.env.BENCH_ROUNDS ?? 3);

/** A wrk script that sends each request to the next tenant's session with that tenant's token. */
function roundRobinScript(tenants: readonly BenchTenant[]): string {
  const targets = tenants.map((tenant) => `{ path = ${JSON.stringify(`/v1/sessions/${tenant.sessionId}`)}, auth = ${JSON.stringify(`Bearer ${tenant.token}`)} }`);
  return [
    `local targets = { ${targets.join(', ')} }`,
    'local next = 0',
    'request = function()',
    '  next = next % #targets + 1',
    '  return wrk.format("GET", targets[next].path, { ["Authorization"] = targets[next].auth })',
    'end',
    '',
  ].join('\n');
}

/** Waits for a quiet machine (at most a minute) and says how busy it still was. */
async function settle(section: string): Promise<void> {
  const busy = await waitForQuietMachine();
  const load = loadavg().map((value) => fixed(value, 2)).join(' ');
  console.log(`# ${section}: machine ${Math.round(busy * 100)}% busy${busy > 0.1 ? ' (never got quiet)' : ''}, load average ${load}`);
}

async function timeRequest(client: HttpClient, path: string): Promise<number> {
  const started = performance.now();
  const response = await client.request('GET', path);
  if (response.status !== 200) throw new Error(`GET ${path}: HTTP ${response.status} ${JSON.stringify(response.json)}`);
  return performance.now() - started;
}

async function benchTenants(agentd: Child, tenants: BenchTenant[]): Promise<void> {
  const clients = tenants.map((tenant) => new HttpClient(agentd.url, 1, { authorization: `Bearer ${tenant.token}` }));
  try {
    await settle('first requests');
    // One at a time, so each first request measures one runtime start and nothing else.
    const first: number[] = [];
    const second: number[] = [];
    for (const client of clients) first.push(await timeRequest(client, '/v1/sessions'));
    for (const client of clients) second.push(await timeRequest(client, '/v1/sessions'));
    const spread = (values: number[]) => `p50 ${fixed(median(values))} ms, p99 ${fixed(percentile(values, 0.99))} ms`;
    printFigure({ name: `First request of a tenant (runtime start), ${tenants.length} tenants`, value: spread(first), detail: 'GET /v1/sessions, one tenant at a time, each started once' });
    printFigure({ name: 'Second request of the same tenants (runtime held)', value: spread(second), detail: 'context' });

    for (const [index, tenant] of tenants.entries()) tenant.sessionId = (await clients[index].expect(201, 'POST', '/v1/sessions', {})).id;
  } finally {
    for (const client of clients) client.close();
  }

  const url = `${agentd.url}/`;
  const spreadScript = roundRobinScript(tenants);
  const oneScript = roundRobinScript(tenants.slice(0, 1));
  await runWrk(url, { seconds: 2, luaScript: spreadScript });
  await runWrk(url, { seconds: 2, luaScript: oneScript });
  await settle('requests over tenants');
  const results = { one: [] as WrkResult[], spread: [] as WrkResult[] };
  for (let round = 0; round < rounds; round++) {
    results.one.push(await runWrk(url, { seconds, luaScript: oneScript, latency: true }));
    results.spread.push(await runWrk(url, { seconds, luaScript: spreadScript, latency: true }));
  }
  const rate = (runs: WrkResult[]) => median(runs.map((run) => run.requestsPerSecond));
  const p99 = (runs: WrkResult[]) => median(runs.map((run) => run.p99Ms ?? Number.NaN));
  const errors = (runs: WrkResult[]) => runs.reduce((sum, run) => sum + run.errors, 0);
  const how = `median of ${rounds} × ${seconds} s`;
  printFigure({
    name: 'GET /v1/sessions/:id, one tenant, 32 connections',
    value: `${whole(rate(results.one))} req/s, p99 ${fixed(p99(results.one))} ms`,
    detail: `${how}; ${errors(results.one)} errors; ${results.one[0].command.replace(/http\S+/, 'http://127.0.0.1:PORT/')}`,
  });
  const ratio = rate(results.spread) / rate(results.one);
  printFigure({
    name: `GET /v1/sessions/:id round-robin over ${tenants.length} tenants' tokens, 32 connections`,
    value: `${whole(rate(results.spread))} req/s = ${fixed(100 * ratio)}% of one tenant, p99 ${fixed(p99(results.spread))} ms`,
    detail: `${how}; ${errors(results.spread)} errors; every request a different tenant's token and database`,
  });
}

runIfMain(import.meta.url, async () => {
  ensureBuilt();
  const fixture = registryFixture();
  const document = fixture.document(tenantCount);
  const registryPath = fixture.write(document);
  const cluster = scratchCluster();
  const modelsFile = join(fixture.dir, 'models.json');
  writeFileSync(modelsFile, JSON.stringify(modelsFor('http://127.0.0.1:9/v1')));
  const tenants: BenchTenant[] = document.tenants.map((tenant: any) => ({ id: tenant.id, token: readFileSync(tenant.credentials[0].tokenFile, 'utf8').trim() }));
  let agentd: Child | null = null;
  try {
    await cluster.create();
    cluster.adopt(tenants.map((tenant) => tenant.id));
    const spawnedAt = performance.now();
    agentd = await spawnListening(
      [
        join(REPO_ROOT, 'bin', 'agentd.js'), 'serve', '--port', '0', '--state-dir', fixture.stateDir,
        '--tenant-registry', registryPath, '--database-url', cluster.adminUrl, '--models-file', modelsFile,
        '--max-active-tenants', String(tenantCount * 2),
      ],
      /agentd listening on (http:\/\/\S+)/,
      join(fixture.dir, 'agentd.log'),
    );
    printFigure({ name: `Start-up with ${tenantCount} new tenants (provisioning each)`, value: `${whole(performance.now() - spawnedAt)} ms`, detail: 'spawn → listening; databases, roles and migrations made' });
    await benchTenants(agentd, tenants);
  } finally {
    await agentd?.stop();
    await cluster.drop();
    rmSync(fixture.dir, { recursive: true, force: true });
    rmSync(cluster.stateRoot, { recursive: true, force: true });
  }
});

/**
 * What starting a tenant's runtime costs, measured many times: agentd with 16 tenants and
 * --max-active-tenants 1, asked GET /v1/sessions for each tenant in turn, so that every request
 * starts a runtime (its pool and claim connected, interrupted turns failed, its event ids
 * reserved) while the previous tenant's closes beside it. A before/after pair alternates round by
 * round, each build on a registry and PostgreSQL databases of its own (an older build refuses a
 * database a newer one migrated).
 *
 *   node --import tsx bench/tenant-reopen.ts
 *     BENCH_BEFORE_ROOT, BENCH_BEFORE_NODE   a second build to alternate with (e.g. /tmp/agentd-node20 on /usr/bin/node)
 *     BENCH_ROUNDS (default 4), BENCH_REQUESTS per round (default 160)
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { registryFixture } from '../test/tenancy/registry-fixture.ts';
import { scratchCluster } from '../test/tenancy/support/scratch-cluster.ts';
import { ensureBuilt, modelsFor, REPO_ROOT, spawnListening, type Child } from './support/children.ts';
import { HttpClient } from './support/http-client.ts';
import { fixed, median, percentile, printFigure, runIfMain } from './support/report.ts';

const TENANTS = 16;
const rounds = Number(process.env.BENCH_ROUNDS ?? 4);
const requestsPerRound = Number(process.env.BENCH_REQUESTS ?? 160);

interface Build {
  name: string;
  root: string;
  node: string;
}

interface Side {
  build: Build;
  fixture: ReturnType<typeof registryFixture>;
  cluster: ReturnType<typeof scratchCluster>;
  registryPath: string;
  modelsFile: string;
  tokens: string[];
  starts: number[];
  /** agentd's CPU time per counted start, ms: load-independent, unlike the latency */
  cpuPerStart: number[];
  /** PostgreSQL's (the postmaster's and every backend that ended meanwhile), per counted start */
  databaseCpuPerStart: number[];
}

/**
 * CPU time of the PostgreSQL server and of the backends it has reaped, ms (null if its data
 * directory cannot be read, e.g. not on this machine): a runtime's connections end with it.
 */
function databaseCpuMs(): number | null {
  const dataDirectory = spawnSync('psql', ['-h', '127.0.0.1', '-U', 'postgres', '-Atc', 'show data_directory'], { encoding: 'utf8' }).stdout?.trim();
  try {
    const pid = Number(readFileSync(join(dataDirectory, 'postmaster.pid'), 'utf8').split('\n')[0]);
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    // utime, stime, cutime, cstime
    return ((Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 1000) / 100;
  } catch {
    return null;
  }
}

async function prepare(build: Build): Promise<Side> {
  const fixture = registryFixture();
  const document = fixture.document(TENANTS);
  const registryPath = fixture.write(document);
  const cluster = scratchCluster();
  const modelsFile = join(fixture.dir, 'models.json');
  writeFileSync(modelsFile, JSON.stringify(modelsFor('http://127.0.0.1:9/v1')));
  const tenants = document.tenants as { id: string; credentials: { tokenFile: string }[] }[];
  await cluster.create();
  cluster.adopt(tenants.map((tenant) => tenant.id));
  const tokens = tenants.map((tenant) => readFileSync(tenant.credentials[0].tokenFile, 'utf8').trim());
  return { build, fixture, cluster, registryPath, modelsFile, tokens, starts: [], cpuPerStart: [], databaseCpuPerStart: [] };
}

async function measureRound(side: Side): Promise<void> {
  const { build, fixture } = side;
  const agentd: Child = await spawnListening(
    [
      join(build.root, 'bin', 'agentd.js'), 'serve', '--port', '0', '--state-dir', fixture.stateDir,
      '--tenant-registry', side.registryPath, '--database-url', side.cluster.adminUrl, '--models-file', side.modelsFile,
      '--max-active-tenants', '1',
    ],
    /agentd listening on (http:\/\/\S+)/,
    join(fixture.dir, 'agentd.log'),
    build.node,
  );
  const clients = side.tokens.map((token) => new HttpClient(agentd.url, 1, { authorization: `Bearer ${token}` }));
  let cpuAtFirstCounted = 0;
  let databaseCpuAtFirstCounted: number | null = null;
  try {
    // the first pass over the tenants warms the server's own code up; it is not counted
    for (let index = 0, counted = 0; counted < requestsPerRound; index++) {
      if (index === TENANTS) {
        cpuAtFirstCounted = agentd.cpuMs();
        databaseCpuAtFirstCounted = databaseCpuMs();
      }
      const started = performance.now();
      const response = await clients[index % TENANTS].request('GET', '/v1/sessions');
      const elapsed = performance.now() - started;
      // the one slot is still held by the runtime closing beside it: asked again, not counted
      if (response.status === 503) continue;
      if (response.status !== 200) throw new Error(`${build.name}: HTTP ${response.status} ${JSON.stringify(response.json)}`);
      if (index >= TENANTS) {
        side.starts.push(elapsed);
        counted++;
      }
    }
    side.cpuPerStart.push((agentd.cpuMs() - cpuAtFirstCounted) / requestsPerRound);
    const databaseCpu = databaseCpuMs();
    if (databaseCpu !== null && databaseCpuAtFirstCounted !== null) side.databaseCpuPerStart.push((databaseCpu - databaseCpuAtFirstCounted) / requestsPerRound);
  } finally {
    for (const client of clients) client.close();
    await agentd.stop();
  }
}

async function dispose(side: Side): Promise<void> {
  await side.cluster.drop();
  rmSync(side.fixture.dir, { recursive: true, force: true });
  rmSync(side.cluster.stateRoot, { recursive: true, force: true });
}

runIfMain(import.meta.url, async () => {
  ensureBuilt();
  const builds: Build[] = [{ name: 'this build', root: REPO_ROOT, node: process.execPath }];
  if (process.env.BENCH_BEFORE_ROOT) builds.push({ name: `before (${process.env.BENCH_BEFORE_ROOT})`, root: process.env.BENCH_BEFORE_ROOT, node: process.env.BENCH_BEFORE_NODE || process.execPath });
  const sides: Side[] = [];
  const loads: number[] = [];
  try {
    for (const build of builds) sides.push(await prepare(build));
    for (let round = 0; round < rounds; round++) {
      // alternate which side goes first, so a drift in the machine's load hits both alike
      for (const side of round % 2 === 0 ? sides : [...sides].reverse()) await measureRound(side);
      loads.push(loadavg()[0]);
    }
  } finally {
    for (const side of sides) await dispose(side);
  }
  for (const side of sides) {
    printFigure({
      name: `A tenant runtime's start, ${side.build.name}`,
      value: `p50 ${fixed(median(side.starts))} ms, p90 ${fixed(percentile(side.starts, 0.9))} ms, agentd CPU ${fixed(median(side.cpuPerStart), 2)} ms a start${side.databaseCpuPerStart.length > 0 ? `, PostgreSQL CPU ${fixed(median(side.databaseCpuPerStart), 2)} ms` : ''}`,
      detail: `GET /v1/sessions that starts the runtime; ${side.starts.length} starts over ${TENANTS} tenants in ${rounds} alternating rounds; load average ${loads.map((load) => fixed(load, 1)).join(' ')}; ${side.build.node}`,
    });
  }
});

/**
 * Cluster figures (issue 30, docs/BENCHMARKS.md): turns/s and CPU per turn with 1, 2 and 3 agentd
 * instances on one PostgreSQL database, and takeover time after a kill -9.
 *
 *   npm run build && nice node --import tsx bench/cluster.ts [--turns 60] [--in-flight 6] [--takeovers 10] [--lease 2]
 *
 * Turns: `--in-flight` clients, each with a session of its own on instance (client mod N), submit
 * turns one after another against the in-process fake model (a short text answer, no tools) and
 * poll the turn every 25 ms until it ends. CPU is utime + stime from /proc: of every agentd
 * instance, and of the PostgreSQL backends serving the database (their share), per turn.
 * Takeover: a turn hangs in its model request on one of two instances, which is killed (-9); the
 * time from the kill to the other instance showing the turn at attempt 2, polled every 20 ms.
 */
import { parseArgs } from 'node:util';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { createBackend, type TestBackend } from '../test/support/backends.ts';
import { startFakeProvider, type FakeProvider } from '../test/support/fake-provider.ts';
import { startAgentd, type AgentdProcess } from '../test/support/agentd-process.ts';
import { clusterArguments } from '../test/support/cluster.ts';
import { http } from '../test/support/http.ts';

const { values } = parseArgs({
  options: {
    turns: { type: 'string', default: '60' },
    'in-flight': { type: 'string', default: '6' },
    takeovers: { type: 'string', default: '10' },
    lease: { type: 'string', default: '2' },
  },
});
const TURNS = Number(values.turns);
const IN_FLIGHT = Number(values['in-flight']);
const TAKEOVERS = Number(values.takeovers);
const LEASE = values.lease!;
const TERMINAL = ['completed', 'failed', 'cancelled'];
const TICKS = 100; // USER_HZ on Linux
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function cpuMs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS;
  } catch {
    return 0;
  }
}

async function databaseBackends(admin: pg.Client, database: string): Promise<number[]> {
  const { rows } = await admin.query<{ pid: number }>('select pid from pg_stat_activity where datname = $1', [database]);
  return rows.map((row) => row.pid);
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

async function world(): Promise<{ backend: TestBackend; fake: FakeProvider; args: string[]; admin: pg.Client; database: string }> {
  const backend = await createBackend('postgres');
  const fake = await startFakeProvider();
  fake.setDefaultStep({ kind: 'reply', text: 'ok' });
  const admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' });
  await admin.connect();
  return { backend, fake, args: clusterArguments(backend, fake.baseUrl), admin, database: new URL(backend.databaseUrl!).pathname.slice(1) };
}

async function untilEnded(agentd: AgentdProcess, turnId: string): Promise<void> {
  for (;;) {
    const turn = (await http('GET', `${agentd.url}/v1/turns/${turnId}`)).json;
    if (TERMINAL.includes(turn.status)) return;
    await sleep(25);
  }
}

async function throughput(instances: number): Promise<string> {
  const { backend, fake, args, admin, database } = await world();
  const started: AgentdProcess[] = [];
  for (let index = 0; index < instances; index++) started.push(await startAgentd([...args, '--instance-id', `bench-${index}`, '--turn-lease-seconds', '10', '--max-concurrent-turns', '16'], 60_000));
  const sessions = await Promise.all(Array.from({ length: IN_FLIGHT }, async (_, index) => ({ agentd: started[index % instances]!, id: (await http('POST', `${started[index % instances]!.url}/v1/sessions`, { body: {} })).json.id as string })));
  // warm-up: one turn per session, not counted
  await Promise.all(sessions.map(async ({ agentd, id }) => untilEnded(agentd, (await http('POST', `${agentd.url}/v1/sessions/${id}/turns`, { body: { input: 'warm up' } })).json.id)));
  const backends = await databaseBackends(admin, database);
  const agentdBefore = started.map((agentd) => cpuMs(agentd.child.pid!));
  const databaseBefore = backends.map(cpuMs);
  let remaining = TURNS;
  const begin = performance.now();
  await Promise.all(
    sessions.map(async ({ agentd, id }) => {
      while (remaining > 0) {
        remaining--;
        const turn = (await http('POST', `${agentd.url}/v1/sessions/${id}/turns`, { body: { input: 'a short question' } })).json;
        await untilEnded(agentd, turn.id);
      }
    }),
  );
  const seconds = (performance.now() - begin) / 1000;
  const agentdCpu = started.map((agentd, index) => cpuMs(agentd.child.pid!) - agentdBefore[index]!);
  const databaseCpu = backends.map((pid, index) => cpuMs(pid) - databaseBefore[index]!).reduce((sum, ms) => sum + ms, 0);
  const totalAgentd = agentdCpu.reduce((sum, ms) => sum + ms, 0);
  for (const agentd of started) await agentd.kill();
  await fake.close();
  await admin.end();
  await backend.drop();
  return `${instances} instance(s): ${(TURNS / seconds).toFixed(1)} turns/s; agentd CPU ${(totalAgentd / TURNS).toFixed(1)} ms/turn in all (per instance ${agentdCpu.map((ms) => (ms / TURNS).toFixed(1)).join(' / ')}); PostgreSQL backends ${(databaseCpu / TURNS).toFixed(1)} ms/turn (${((100 * databaseCpu) / (databaseCpu + totalAgentd)).toFixed(0)}% of the two)`;
}

async function takeovers(): Promise<string> {
  const { backend, fake, args, admin } = await world();
  const lease = ['--turn-lease-seconds', LEASE];
  let owner = await startAgentd([...args, '--instance-id', 'owner-0', ...lease], 60_000);
  const other = await startAgentd([...args, '--instance-id', 'other', ...lease], 60_000);
  // warm both: the first turn of an instance loads the provider and tool modules
  for (const agentd of [owner, other]) {
    const session = (await http('POST', `${agentd.url}/v1/sessions`, { body: {} })).json;
    await untilEnded(agentd, (await http('POST', `${agentd.url}/v1/sessions/${session.id}/turns`, { body: { input: 'warm' } })).json.id);
  }
  const times: number[] = [];
  for (let round = 0; round < TAKEOVERS; round++) {
    const marker = `takeover-${round}`;
    fake.route(marker, { kind: 'hang' }, { kind: 'reply', text: 'resumed' });
    const session = (await http('POST', `${owner.url}/v1/sessions`, { body: {} })).json;
    const seen = fake.requests.length;
    const turn = (await http('POST', `${owner.url}/v1/sessions/${session.id}/turns`, { body: { input: marker } })).json;
    while (!fake.requests.slice(seen).some((request) => JSON.stringify(request.body).includes(marker))) await sleep(10);
    // a renewal period or so into the lease, as a death would come at any moment of it
    await sleep(Math.random() * (Number(LEASE) * 1000) / 3);
    const killedAt = performance.now();
    await owner.kill();
    for (;;) {
      const now = (await http('GET', `${other.url}/v1/turns/${turn.id}`)).json;
      if (now.attempt === 2) break;
      await sleep(20);
    }
    times.push(performance.now() - killedAt);
    await untilEnded(other, turn.id);
    owner = await startAgentd([...args, '--instance-id', `owner-${round + 1}`, ...lease], 60_000);
  }
  await owner.kill();
  await other.kill();
  await fake.close();
  await admin.end();
  await backend.drop();
  const sorted = [...times].sort((a, b) => a - b);
  return `takeover after kill -9 (lease ${LEASE} s, ${TAKEOVERS} kills): p50 ${percentile(sorted, 50).toFixed(0)} ms, p99 ${percentile(sorted, 99).toFixed(0)} ms, min ${sorted[0]!.toFixed(0)} ms (every one: ${times.map((ms) => ms.toFixed(0)).join(', ')})`;
}

const lines: string[] = [];
for (const instances of [1, 2, 3]) {
  lines.push(await throughput(instances));
  console.log(lines.at(-1));
}
// --takeovers 0: the throughput figures alone
if (TAKEOVERS > 0) {
  lines.push(await takeovers());
  console.log(lines.at(-1));
}

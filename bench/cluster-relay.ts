/**
 * Issue 30, the event relay of a cluster: RELAY_TURNS turns (40) of RELAY_WORDS text deltas (20)
 * each, RELAY_IN_FLIGHT (4) at a time, submitted round-robin to 1, 2 and 3 `--cluster` instances
 * on one PostgreSQL database, with one SSE subscriber per instance; and, for comparison, one
 * unclustered agentd on PostgreSQL. Reports turns/s; agentd CPU per turn (all instances) and the
 * database backends' CPU per turn; delivery latency (publish `at` to a subscriber's read, ms, p50
 * and p99 over every event and subscriber); and the relay spread (for each event, its latest read
 * minus its earliest read across the instances' subscribers, p50/p99). RELAY_INSTANCES=2,3 runs
 * only those cluster sizes; RELAY_SUBSCRIBERS=256 spreads that many subscribers round-robin over
 * the instances instead of one each (PERFORMANCE.md's relay target is at 256).
 *
 *   node --import tsx bench/cluster-relay.ts
 */
import pg from 'pg';
import { modelsFor, readCpuMs, startAgentd, startFakeModel, type AgentdChild, type FakeModelChild } from './support/children.ts';
import { HttpClient } from './support/http-client.ts';
import { SseSubscriber } from './support/sse-subscriber.ts';
import { TurnWatcher } from './support/turn-driver.ts';
import { fixed, percentile, printFigure, runIfMain } from './support/report.ts';

const TURNS = Number(process.env.RELAY_TURNS ?? 40);
const WORDS = Number(process.env.RELAY_WORDS ?? 20);
const IN_FLIGHT = Number(process.env.RELAY_IN_FLIGHT ?? 4);
/** 0: one subscriber per instance */
const SUBSCRIBERS = Number(process.env.RELAY_SUBSCRIBERS ?? 0);
const ADMIN_URL = process.env.AGENTD_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: ADMIN_URL });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** CPU ms of the database's backends serving `database` (processes that came and went between reads are missed). */
async function backendCpu(database: string): Promise<Map<number, number>> {
  const { rows } = await admin((client) => client.query('select pid from pg_stat_activity where datname = $1', [database]));
  const cpu = new Map<number, number>();
  for (const { pid } of rows as { pid: number }[]) {
    try {
      cpu.set(pid, readCpuMs(pid));
    } catch {
      // gone meanwhile
    }
  }
  return cpu;
}

function cpuSpent(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, ms] of after) total += ms - (before.get(pid) ?? 0);
  return total;
}

async function scenario(fake: FakeModelChild, instances: number, cluster: boolean): Promise<void> {
  const database = `agentd_bench_relay_${process.pid}_${instances}_${cluster ? 'c' : 's'}`;
  await admin((client) => client.query(`create database ${database}`));
  const url = new URL(ADMIN_URL);
  url.pathname = `/${database}`;
  const agentds: AgentdChild[] = [];
  const subscribers: SseSubscriber[] = [];
  try {
    for (let index = 0; index < instances; index++) {
      agentds.push(await startAgentd({
        models: modelsFor(fake.baseUrl),
        args: ['--log-level', 'warn', '--database-url', url.toString(), ...(cluster ? ['--cluster', '--instance-id', `bench-${index}`] : []), '--event-replay-limit', '10000'],
      }));
    }
    const reads = new Map<number, number[]>();
    /** which subscriber read each event (to name an event some subscriber missed or got twice) */
    const readers = new Map<number, string[]>();
    const latencies: number[] = [];
    const watcher = new TurnWatcher();
    const subscriberCount = SUBSCRIBERS > 0 ? SUBSCRIBERS : instances;
    for (let index = 0; index < subscriberCount; index++) {
      const agentd = agentds[index % instances];
      subscribers.push(await SseSubscriber.connect(agentd.url, (frame, receivedAtMs) => {
        if (frame.id === null) return;
        const wallNow = Date.now();
        // the `at` field alone: a whole JSON.parse per frame for 256 subscribers would load the bench
        latencies.push(wallNow - Date.parse(/"at":"([^"]+)"/.exec(frame.data)![1]));
        const seen = reads.get(frame.id) ?? [];
        seen.push(receivedAtMs);
        (readers.get(frame.id) ?? readers.set(frame.id, []).get(frame.id)!).push(`${index}:${frame.event}`);
        reads.set(frame.id, seen);
        if (index === 0) watcher.onFrame(frame);
      }));
    }
    const clients = agentds.map((agentd) => new HttpClient(agentd.url, IN_FLIGHT));
    const sessions = await Promise.all(Array.from({ length: TURNS }, (_, index) => clients[index % instances].expect(201, 'POST', '/v1/sessions', {})));
    // one warm-up turn per instance: the first turn loads the provider and tool modules
    for (const [index, client] of clients.entries()) {
      const turn = await client.expect(202, 'POST', `/v1/sessions/${sessions[index].id}/turns`, { input: 'warm up' });
      await watcher.wait(turn.id, 60_000);
    }
    // events of the warm-up that some subscriber reads after this point are not counted
    const warmUpNewest = watcher.newestId;
    reads.clear();
    readers.clear();
    latencies.length = 0;
    const cpuBefore = agentds.map((agentd) => agentd.cpuMs());
    const dbBefore = await backendCpu(database);
    const started = performance.now();
    let next = 0;
    const worker = async () => {
      for (let index = next++; index < TURNS; index = next++) {
        const client = clients[index % instances];
        const turn = await client.expect(202, 'POST', `/v1/sessions/${sessions[index].id}/turns`, { input: `turn ${index}` });
        await watcher.wait(turn.id, 60_000);
      }
    };
    await Promise.all(Array.from({ length: IN_FLIGHT }, worker));
    const elapsedMs = performance.now() - started;
    const agentdCpu = agentds.reduce((sum, agentd, index) => sum + agentd.cpuMs() - cpuBefore[index], 0);
    const dbCpu = cpuSpent(dbBefore, await backendCpu(database));
    // every subscriber reads to the newest event (at most 10 s more)
    const newest = Math.max(...reads.keys());
    const deadline = Date.now() + 10_000;
    while ((reads.get(newest)?.length ?? 0) < subscriberCount && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
    for (const id of [...reads.keys()]) if (id <= warmUpNewest) reads.delete(id);
    const spreads = [...reads.values()].filter((seen) => seen.length === subscriberCount).map((seen) => Math.max(...seen) - Math.min(...seen));
    const incomplete = [...reads.keys()].filter((id) => reads.get(id)!.length !== subscriberCount);
    for (const id of incomplete) console.log(`event ${id} read as ${readers.get(id)!.join(', ')}`);
    const name = cluster ? `${instances} instance${instances > 1 ? 's' : ''} (--cluster)` : '1 agentd, no --cluster';
    const spreadOver = SUBSCRIBERS > 0 ? `${subscriberCount} subscribers spread over the instances` : 'one subscriber per instance';
    console.log(`\n${name}: ${TURNS} turns, ${WORDS} deltas each, ${IN_FLIGHT} in flight, ${spreadOver}`);
    printFigure({ name: 'turns/s', value: fixed((TURNS * 1000) / elapsedMs) });
    printFigure({ name: 'agentd CPU per turn, all instances', value: `${fixed(agentdCpu / TURNS)} ms` });
    printFigure({ name: 'database backends CPU per turn', value: `${fixed(dbCpu / TURNS)} ms` });
    printFigure({ name: 'delivery latency p50 / p99', value: `${fixed(percentile(latencies, 0.5), 0)} / ${fixed(percentile(latencies, 0.99), 0)} ms` });
    if (subscriberCount > 1) printFigure({ name: 'relay spread across subscribers p50 / p99', value: `${fixed(percentile(spreads, 0.5))} / ${fixed(percentile(spreads, 0.99))} ms` });
    printFigure({ name: 'events not read by every subscriber', value: String(incomplete.length) });
    for (const client of clients) client.close();
  } finally {
    for (const subscriber of subscribers) subscriber.close();
    for (const agentd of agentds) await agentd.stop();
    await admin((client) => client.query(`drop database if exists ${database} with (force)`));
  }
}

export async function benchClusterRelay(): Promise<void> {
  const fake = await startFakeModel({ words: WORDS });
  try {
    const only = process.env.RELAY_INSTANCES?.split(',').map(Number);
    if (!only) await scenario(fake, 1, false);
    for (const instances of only ?? [1, 2, 3]) await scenario(fake, instances, true);
  } finally {
    await fake.stop();
  }
}

runIfMain(import.meta.url, benchClusterRelay);

/**
 * Figures 1–3 of docs/PERFORMANCE.md: plain HTTP routes under wrk with 32 connections, against a
 * bare Fastify hello server measured in the same run.
 *
 *   node --import tsx bench/http-routes.ts            (BENCH_SECONDS per run, BENCH_ROUNDS rounds)
 *   BENCH_BEFORE_ROOT=<another checkout> node --import tsx bench/http-routes.ts
 *                                                     (that build measured in the same rounds, alternating;
 *                                                      BENCH_BEFORE_NODE runs it on another node, e.g. Node 20)
 *
 * BENCH_AGENTD_ROOT runs the measured agentd from another checkout instead of this one (a before and
 * an after build, neither of them a working tree others are changing). BENCH_NODE_FLAGS passes node
 * options to it, e.g. "--cpu-prof --cpu-prof-dir=/tmp/routes-prof".
 */
import { agentdNodeFlags, agentdRoot, startAgentd, startHello, type AgentdChild, type Child } from './support/children.ts';
import { HttpClient } from './support/http-client.ts';
import { median, printFigure, runIfMain, whole, fixed } from './support/report.ts';
import { runWrk, type WrkOptions, type WrkResult } from './support/wrk.ts';
import { waitForQuietMachine } from './support/quiet.ts';
import { loadavg } from 'node:os';

export interface HttpRouteOptions {
  seconds: number;
  rounds: number;
}

export const SESSIONS_IN_LIST = 200;

export function httpRouteOptionsFromEnv(): HttpRouteOptions {
  return { seconds: Number(process.env.BENCH_SECONDS ?? 5), rounds: Number(process.env.BENCH_ROUNDS ?? 3) };
}

/** The routes of one agentd, in wrk's URLs, its 200 sessions already created. */
interface Routes {
  one: string;
  list: string;
  create: string;
}

async function prepareRoutes(agentd: AgentdChild): Promise<Routes> {
  const client = new HttpClient(agentd.url);
  const sessionIds: string[] = [];
  for (let index = 0; index < SESSIONS_IN_LIST; index++) sessionIds.push((await client.expect(201, 'POST', '/v1/sessions', {})).id);
  client.close();
  return { one: `${agentd.url}/v1/sessions/${sessionIds[100]}`, list: `${agentd.url}/v1/sessions?limit=50`, create: `${agentd.url}/v1/sessions` };
}

/** A wrk run with agentd's CPU time per request over it (utime+stime, 10 ms ticks): it holds up on a busy machine. */
interface RouteRun extends WrkResult {
  cpuUsPerRequest: number;
}

interface RouteResults {
  one: RouteRun[];
  list: RouteRun[];
  create: RouteRun[];
}

async function measureRoute(agentd: AgentdChild, url: string, options: WrkOptions): Promise<RouteRun> {
  const cpuBefore = agentd.cpuMs();
  const result = await runWrk(url, options);
  return { ...result, cpuUsPerRequest: ((agentd.cpuMs() - cpuBefore) * 1000) / result.requests };
}

const noResults = (): RouteResults => ({ one: [], list: [], create: [] });

/**
 * Measures and prints the three HTTP figures; agentd should hold no sessions yet. With `before`
 * (another build, BENCH_BEFORE_ROOT), its figures are taken in the same rounds, alternating with
 * this build's, and printed after them for comparison.
 */
export async function benchHttpRoutes(agentd: AgentdChild, hello: Child, options: HttpRouteOptions, before?: AgentdChild): Promise<void> {
  const builds = [{ agentd, label: '', routes: await prepareRoutes(agentd), results: noResults() }];
  if (before) builds.push({ agentd: before, label: ' (before)', routes: await prepareRoutes(before), results: noResults() });

  const helloUrl = `${hello.url}/`;
  const warmUp = { seconds: 2 };
  await runWrk(helloUrl, warmUp);
  for (const build of builds) {
    await runWrk(build.routes.one, warmUp);
    await runWrk(build.routes.list, warmUp);
  }

  const helloResults: WrkResult[] = [];
  for (let round = 0; round < options.rounds; round++) {
    helloResults.push(await runWrk(helloUrl, options));
    for (const build of builds) {
      build.results.one.push(await measureRoute(build.agentd, build.routes.one, options));
      build.results.list.push(await measureRoute(build.agentd, build.routes.list, options));
    }
  }
  // Creating sessions last: it grows the table the reads above measure.
  for (let round = 0; round < options.rounds; round++) {
    for (const build of builds) build.results.create.push(await measureRoute(build.agentd, build.routes.create, { ...options, postJson: {} }));
  }

  const helloRate = rate(helloResults);
  const rounds = `median of ${options.rounds} × ${options.seconds} s`;
  printFigure({ name: 'Fastify hello, 32 connections', value: `${whole(helloRate)} req/s`, detail: `${rounds}; ${helloResults[0].command.replace(/http\S+/, 'http://127.0.0.1:PORT/')}` });
  for (const { label, results } of builds) printRouteFigures(results, helloRate, rounds, label);
}

const rate = (runs: WrkResult[]) => median(runs.map((run) => run.requestsPerSecond));
const errors = (runs: WrkResult[]) => runs.reduce((sum, run) => sum + run.errors, 0);
const cpu = (runs: RouteRun[]) => `agentd CPU ${whole(median(runs.map((run) => run.cpuUsPerRequest)))} µs per request`;

function printRouteFigures(results: RouteResults, helloRate: number, rounds: string, label: string): void {
  const oneRate = rate(results.one);
  printFigure({
    name: `GET /v1/sessions/:id, 32 connections${label}`,
    value: `${whole(oneRate)} req/s = ${fixed((100 * oneRate) / helloRate)}% of hello`,
    target: '≥ 60% of hello',
    met: oneRate >= 0.6 * helloRate && errors(results.one) === 0,
    detail: `${rounds}; ${errors(results.one)} errors; ${cpu(results.one)}`,
  });
  const listRate = rate(results.list);
  printFigure({
    name: `GET /v1/sessions?limit=50 of ${SESSIONS_IN_LIST}, 32 connections${label}`,
    value: `${whole(listRate)} req/s = ${fixed((100 * listRate) / helloRate)}% of hello`,
    target: '≥ 30% of hello',
    met: listRate >= 0.3 * helloRate && errors(results.list) === 0,
    detail: `${rounds}; ${errors(results.list)} errors; ${cpu(results.list)}`,
  });
  const createRate = rate(results.create);
  printFigure({
    name: `POST /v1/sessions, 32 connections, SQLite${label}`,
    value: `${whole(createRate)} req/s`,
    target: '≥ 8,000/s',
    met: createRate >= 8000 && errors(results.create) === 0,
    detail: `${rounds}; ${errors(results.create)} errors; ${cpu(results.create)}; ${results.create[0].command.replace(/http\S+/, 'http://127.0.0.1:PORT/v1/sessions')}`,
  });
}

runIfMain(import.meta.url, async () => {
  const beforeRoot = process.env.BENCH_BEFORE_ROOT;
  const [agentd, hello, before] = await Promise.all([
    startAgentd({ root: agentdRoot(), nodeArgs: agentdNodeFlags() }),
    startHello(),
    beforeRoot ? startAgentd({ root: beforeRoot, node: process.env.BENCH_BEFORE_NODE || process.execPath }) : undefined,
  ]);
  try {
    const busy = await waitForQuietMachine();
    const load = loadavg().map((value) => fixed(value, 2)).join(' ');
    console.log(`# machine ${Math.round(busy * 100)}% busy${busy > 0.1 ? ' (never got quiet)' : ''}, load average ${load}${beforeRoot ? `; before: ${beforeRoot}` : ''}`);
    await benchHttpRoutes(agentd, hello, httpRouteOptionsFromEnv(), before);
  } finally {
    await Promise.all([agentd.stop(), hello.stop(), before?.stop()]);
  }
});

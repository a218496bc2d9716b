/**
 * Figures 1–3 of docs/PERFORMANCE.md: plain HTTP routes under wrk with 32 connections, against a
 * bare Fastify hello server measured in the same run.
 *
 *   node --import tsx bench/http-routes.ts            (BENCH_SECONDS per run, BENCH_ROUNDS rounds)
 */
import { startAgentd, startHello, type AgentdChild, type Child } from './support/children.ts';
import { HttpClient } from './support/http-client.ts';
import { median, printFigure, runIfMain, whole, fixed } from './support/report.ts';
import { runWrk, type WrkResult } from './support/wrk.ts';

export interface HttpRouteOptions {
  seconds: number;
  rounds: number;
}

export const SESSIONS_IN_LIST = 200;

export function httpRouteOptionsFromEnv(): HttpRouteOptions {
  return { seconds: Number(process.env.BENCH_SECONDS ?? 5), rounds: Number(process.env.BENCH_ROUNDS ?? 3) };
}

/** Measures and prints the three HTTP figures; agentd should hold no sessions yet. */
export async function benchHttpRoutes(agentd: AgentdChild, hello: Child, options: HttpRouteOptions): Promise<void> {
  const client = new HttpClient(agentd.url);
  const sessionIds: string[] = [];
  for (let index = 0; index < SESSIONS_IN_LIST; index++) sessionIds.push((await client.expect(201, 'POST', '/v1/sessions', {})).id);
  client.close();

  const helloUrl = `${hello.url}/`;
  const oneUrl = `${agentd.url}/v1/sessions/${sessionIds[100]}`;
  const listUrl = `${agentd.url}/v1/sessions?limit=50`;
  const createUrl = `${agentd.url}/v1/sessions`;
  const warmUp = { seconds: 2 };
  await Promise.all([runWrk(helloUrl, warmUp)]);
  await runWrk(oneUrl, warmUp);
  await runWrk(listUrl, warmUp);

  const results = { hello: [] as WrkResult[], one: [] as WrkResult[], list: [] as WrkResult[], create: [] as WrkResult[] };
  for (let round = 0; round < options.rounds; round++) {
    results.hello.push(await runWrk(helloUrl, options));
    results.one.push(await runWrk(oneUrl, options));
    results.list.push(await runWrk(listUrl, options));
  }
  // Creating sessions last: it grows the table the reads above measure.
  for (let round = 0; round < options.rounds; round++) results.create.push(await runWrk(createUrl, { ...options, postJson: {} }));

  const rate = (runs: WrkResult[]) => median(runs.map((run) => run.requestsPerSecond));
  const errors = (runs: WrkResult[]) => runs.reduce((sum, run) => sum + run.errors, 0);
  const helloRate = rate(results.hello);
  const rounds = `median of ${options.rounds} × ${options.seconds} s`;
  printFigure({ name: 'Fastify hello, 32 connections', value: `${whole(helloRate)} req/s`, detail: `${rounds}; ${results.hello[0].command.replace(/http\S+/, 'http://127.0.0.1:PORT/')}` });
  const oneRate = rate(results.one);
  printFigure({
    name: 'GET /v1/sessions/:id, 32 connections',
    value: `${whole(oneRate)} req/s = ${fixed((100 * oneRate) / helloRate)}% of hello`,
    target: '≥ 60% of hello',
    met: oneRate >= 0.6 * helloRate && errors(results.one) === 0,
    detail: `${rounds}; ${errors(results.one)} errors`,
  });
  const listRate = rate(results.list);
  printFigure({
    name: `GET /v1/sessions?limit=50 of ${SESSIONS_IN_LIST}, 32 connections`,
    value: `${whole(listRate)} req/s = ${fixed((100 * listRate) / helloRate)}% of hello`,
    target: '≥ 30% of hello',
    met: listRate >= 0.3 * helloRate && errors(results.list) === 0,
    detail: `${rounds}; ${errors(results.list)} errors`,
  });
  const createRate = rate(results.create);
  printFigure({
    name: 'POST /v1/sessions, 32 connections, SQLite',
    value: `${whole(createRate)} req/s`,
    target: '≥ 4,000/s',
    met: createRate >= 4000 && errors(results.create) === 0,
    detail: `${rounds}; ${errors(results.create)} errors; ${results.create[0].command.replace(/http\S+/, 'http://127.0.0.1:PORT/v1/sessions')}`,
  });
}

runIfMain(import.meta.url, async () => {
  const [agentd, hello] = await Promise.all([startAgentd(), startHello()]);
  try {
    await benchHttpRoutes(agentd, hello, httpRouteOptionsFromEnv());
  } finally {
    await Promise.all([agentd.stop(), hello.stop()]);
  }
});

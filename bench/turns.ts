/**
 * Figure 4 of docs/PERFORMANCE.md: turns against a zero-latency fake model, 4 in flight.
 *
 *   node --import tsx bench/turns.ts          (BENCH_TURNS turns, at most BENCH_SECONDS × 4 s)
 *
 * BENCH_AGENTD_ROOT runs agentd from another checkout (before/after comparisons on one machine).
 * BENCH_NODE_FLAGS passes node options to the agentd child, e.g. to profile it:
 *   BENCH_NODE_FLAGS="--cpu-prof --cpu-prof-dir=/tmp/turns-prof" node --import tsx bench/turns.ts
 *
 * Wall time is taken by the client, from sending POST /v1/sessions/:id/turns to reading the
 * turn's terminal event on GET /v1/events. The fake model times each of its responses from the
 * request's headers to the last byte written; server overhead = wall time − that model time.
 *
 * Each run also reports agentd's own CPU time per turn (utime + stime from /proc, the run's delta
 * over its turns): it survives a busy machine far better than wall time. BENCH_SQL_COUNT=1 preloads
 * support/count-statements.mjs into the child and adds SQLite statements and commits per turn,
 * with the statements' breakdown (the count costs a little CPU: take CPU figures without it).
 */
import { readFileSync } from 'node:fs';
import { agentdNodeFlags, agentdRoot, modelsFor, startAgentd, startFakeModel, startTurnCeiling, type AgentdChild, type Child, type FakeModelChild } from './support/children.ts';
import { StatementCounter } from './support/statement-counter.ts';
import { HttpClient } from './support/http-client.ts';
import { fixed, percentile, printFigure, runIfMain, whole } from './support/report.ts';
import { SseSubscriber } from './support/sse-subscriber.ts';
import { runTurns, TurnWatcher, type TurnRun } from './support/turn-driver.ts';

export const TURN_LIMIT_ARGS = ['--max-concurrent-turns', '8', '--max-queued-turns', '1000', '--max-event-subscribers', '400'];
export const IN_FLIGHT = 4;
export const TURNS_PER_SESSION = 10;

export interface TurnBenchOptions {
  turns: number;
  seconds: number;
}

export function turnOptionsFromEnv(): TurnBenchOptions {
  return { turns: Number(process.env.BENCH_TURNS ?? 3000), seconds: Number(process.env.BENCH_SECONDS ?? 5) * 4 };
}

/** Drives turns through one SSE watcher; the caller owns both children. */
export async function driveTurns(
  server: Child,
  run: { turns: number; seconds: number; label: string; inFlight?: number; onTurn?: (finished: number) => void | Promise<void> },
): Promise<TurnRun & { newestEventId: number }> {
  const client = new HttpClient(server.url);
  const watcher = new TurnWatcher();
  const subscriber = await SseSubscriber.connect(server.url, watcher.onFrame);
  try {
    const turnRun = await runTurns({
      client,
      watcher,
      inFlight: run.inFlight ?? IN_FLIGHT,
      turns: run.turns,
      timeLimitMs: run.seconds * 1000,
      turnsPerSession: TURNS_PER_SESSION,
      runLabel: run.label,
      onTurn: run.onTurn,
    });
    return { ...turnRun, newestEventId: watcher.newestId };
  } finally {
    await subscriber.closeAndWait();
    client.close();
  }
}

/** What one server did under the turn load: the 4-in-flight run and the one-at-a-time run. */
interface TurnMeasure {
  run: TurnRun & { cost: RunCost };
  overheads: number[];
  alone: TurnRun & { cost: RunCost };
  aloneOverheads: number[];
  /** completed turns per second of the 4-in-flight run */
  rate: number;
  completed: number;
}

async function measureTurns(server: Child, fake: FakeModelChild, options: TurnBenchOptions, counter?: StatementCounter): Promise<TurnMeasure> {
  await driveTurns(server, { turns: 200, seconds: 30, label: 'warmup' });
  await fake.takeResponseTimes();
  const run = await costed(server, counter, () => driveTurns(server, { turns: options.turns, seconds: options.seconds, label: 'measured' }));
  const overheads = overheadsOf(run, await fake.takeResponseTimes());
  // One turn at a time: what the server adds to a turn when it is not also waiting for others.
  const alone = await costed(server, counter, () => driveTurns(server, { turns: 300, seconds: options.seconds, label: 'alone', inFlight: 1 }));
  const aloneOverheads = overheadsOf(alone, await fake.takeResponseTimes());
  const completed = run.timings.filter((timing) => timing.event === 'turn.completed').length;
  return { run, overheads, alone, aloneOverheads, rate: (completed * 1000) / run.elapsedMs, completed };
}

export async function benchTurns(agentd: AgentdChild, fake: FakeModelChild, options: TurnBenchOptions, counter?: StatementCounter): Promise<void> {
  const { run, overheads, alone, aloneOverheads, rate, completed } = await measureTurns(agentd, fake, options, counter);
  printFigure({
    name: 'Turns against a zero-latency fake model',
    value: `${whole(rate)} completed turns/s`,
    target: '≥ 600/s',
    met: rate >= 600 && completed === run.timings.length,
    detail: `${IN_FLIGHT} in flight, ${TURNS_PER_SESSION} turns per session, ${run.timings.length} turns in ${fixed(run.elapsedMs / 1000)} s; ${run.timings.length - completed} not completed`,
  });
  const p50 = percentile(aloneOverheads, 0.5);
  printFigure({
    name: 'Server overhead per turn, one turn at a time',
    value: `p50 ${fixed(p50, 2)} ms, p99 ${fixed(percentile(aloneOverheads, 0.99), 2)} ms`,
    target: 'p50 ≤ 1 ms',
    met: p50 <= 1,
    detail: `client wall time (POST → terminal SSE event) minus the fake model's response time, ${aloneOverheads.length} turns`,
  });
  printFigure({
    name: `Server overhead per turn, ${IN_FLIGHT} in flight`,
    value: `p50 ${fixed(percentile(overheads, 0.5), 2)} ms, p99 ${fixed(percentile(overheads, 0.99), 2)} ms`,
    detail: `same measure under the throughput run above: includes waiting for the other ${IN_FLIGHT - 1} turns on one core`,
  });
  printCost(`${IN_FLIGHT} in flight`, run);
  printCost('one turn at a time', alone);
  if (process.env.BENCH_TURN_CEILING !== '0') await benchTurnCeiling(fake, options, { rate, p50 });
}

/**
 * The same load against turn-ceiling-server.mjs, right after agentd's: what this machine allows a
 * turn's exchanges at all (two commits, four socket writes, a streamed model request), as the
 * Fastify hello is the ceiling of the request routes. BENCH_TURN_CEILING=0 leaves it out.
 */
async function benchTurnCeiling(fake: FakeModelChild, options: TurnBenchOptions, agentd: { rate: number; p50: number }): Promise<void> {
  const ceiling = await startTurnCeiling(fake);
  try {
    const { run, alone, aloneOverheads, rate } = await measureTurns(ceiling, fake, options);
    printFigure({
      name: 'Turn ceiling (bare node:http + better-sqlite3, the same exchanges), 4 in flight',
      value: `${whole(rate)} completed turns/s`,
      detail: `agentd ${fixed((100 * agentd.rate) / rate)}% of it; ${fixed(run.cost.cpuMs / run.timings.length, 3)} ms of its CPU and ${fixed(run.cost.syscalls.writes / run.timings.length, 2)} write syscalls per turn`,
    });
    const p50 = percentile(aloneOverheads, 0.5);
    printFigure({
      name: 'Turn ceiling, overhead one turn at a time',
      value: `p50 ${fixed(p50, 2)} ms, p99 ${fixed(percentile(aloneOverheads, 0.99), 2)} ms`,
      detail: `agentd adds ${fixed(agentd.p50 - p50, 2)} ms to it; ${fixed(alone.cost.cpuMs / alone.timings.length, 3)} ms of its CPU per turn`,
    });
  } finally {
    await ceiling.stop();
  }
}

interface RunCost {
  cpuMs: number;
  /** read-like and write-like syscalls of the process (/proc/PID/io syscr, syscw): WAL checkpoints move them by about one per turn between runs, CPU time by a fifth */
  syscalls: { reads: number; writes: number };
  statements: { statements: number; commits: number; bySql: Record<string, number> } | null;
}

/** A run with what it cost agentd: CPU time, and statements when counted. */
async function costed<T extends TurnRun>(server: Child, counter: StatementCounter | undefined, run: () => Promise<T>): Promise<T & { cost: RunCost }> {
  const cpuBefore = server.cpuMs();
  const syscallsBefore = readSyscalls(server.pid);
  const statementsBefore = await counter?.read();
  const result = await run();
  const cpuMs = server.cpuMs() - cpuBefore;
  const syscallsAfter = readSyscalls(server.pid);
  const statementsAfter = await counter?.read();
  const statements = statementsBefore && statementsAfter ? StatementCounter.delta(statementsBefore, statementsAfter) : null;
  const syscalls = { reads: syscallsAfter.reads - syscallsBefore.reads, writes: syscallsAfter.writes - syscallsBefore.writes };
  return { ...result, cost: { cpuMs, syscalls, statements } };
}

/** agentd's CPU (and statements) per turn of a run; session creation (one per 10 turns) is included. */
function printCost(label: string, run: TurnRun & { cost: RunCost }): void {
  const turns = run.timings.length;
  const { cpuMs, syscalls, statements } = run.cost;
  const counted = statements
    ? `, ${fixed(statements.statements / turns, 2)} SQLite statements and ${fixed(statements.commits / turns, 2)} commits per turn`
    : '';
  printFigure({
    name: `agentd CPU per turn, ${label}`,
    value: `${fixed(cpuMs / turns, 3)} ms, ${fixed(syscalls.writes / turns, 2)} write and ${fixed(syscalls.reads / turns, 2)} read syscalls${counted}`,
    detail: `utime+stime of the agentd process over the run ÷ ${turns} turns, 10 ms ticks; syscalls from /proc/PID/io (socket and WAL writes alike); includes creating a session every ${TURNS_PER_SESSION} turns`,
  });
  if (!statements) return;
  const rows = Object.entries(statements.bySql).sort((a, b) => b[1] - a[1]);
  for (const [sql, count] of rows) console.log(`  ${fixed(count / turns, 2).padStart(6)}  ${sql.replace(/\s+/g, ' ').slice(0, 150)}`);
}

function readSyscalls(pid: number): { reads: number; writes: number } {
  const io = readFileSync(`/proc/${pid}/io`, 'utf8');
  return { reads: Number(/^syscr: (\d+)$/m.exec(io)?.[1]), writes: Number(/^syscw: (\d+)$/m.exec(io)?.[1]) };
}

function overheadsOf(run: TurnRun, modelMs: Map<string, number>): number[] {
  return run.timings.map((timing) => timing.wallMs - (modelMs.get(timing.marker) ?? Number.NaN)).filter(Number.isFinite);
}

runIfMain(import.meta.url, async () => {
  const fake = await startFakeModel();
  const counter = process.env.BENCH_SQL_COUNT === '1' ? StatementCounter.create() : undefined;
  const agentd = await startAgentd({ models: modelsFor(fake.baseUrl), args: TURN_LIMIT_ARGS, nodeArgs: [...(counter?.nodeArgs ?? []), ...agentdNodeFlags()], root: agentdRoot() });
  counter?.attach(agentd.pid);
  try {
    await benchTurns(agentd, fake, turnOptionsFromEnv(), counter);
  } finally {
    await Promise.all([agentd.stop(), fake.stop()]);
    counter?.dispose();
  }
});

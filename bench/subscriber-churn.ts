/**
 * Figure 6 of docs/PERFORMANCE.md: subscribers that connect and leave must leave nothing behind.
 * Turn throughput (4 in flight, zero-latency model, 32 subscribers reading every event) is
 * measured before and after 1,000 subscribers have each connected, received the stream's
 * headers and disconnected.
 *
 *   node --import tsx bench/subscriber-churn.ts
 */
import { modelsFor, startAgentd, startFakeModel, type AgentdChild } from './support/children.ts';
import { FanoutMeter } from './support/fanout-meter.ts';
import { fixed, median, printFigure, runIfMain, whole } from './support/report.ts';
import { SseSubscriber } from './support/sse-subscriber.ts';
import { driveTurns, TURN_LIMIT_ARGS } from './turns.ts';

export const CYCLES = 1_000;
const CONCURRENT_CYCLES = 8;
const LISTENERS = 32;
const ROUNDS = 3;

interface Throughput {
  turnsPerSecond: number;
  cpuMsPerTurn: number;
}

async function measureThroughput(agentd: AgentdChild, turns: number, label: string): Promise<Throughput> {
  const meter = await FanoutMeter.connect(agentd.url, LISTENERS);
  try {
    const cpuBefore = agentd.cpuMs();
    const run = await driveTurns(agentd, { turns, seconds: 60, label });
    return { turnsPerSecond: (run.timings.length * 1000) / run.elapsedMs, cpuMsPerTurn: (agentd.cpuMs() - cpuBefore) / run.timings.length };
  } finally {
    await meter.close();
  }
}

/** Connects, waits for the 200 and its headers, disconnects and waits for the socket to close. */
export async function churnSubscribers(url: string, cycles: number): Promise<void> {
  let started = 0;
  const worker = async () => {
    while (started < cycles) {
      started += 1;
      const subscriber = await SseSubscriber.connect(url, () => {});
      await subscriber.closeAndWait();
    }
  };
  await Promise.all(Array.from({ length: CONCURRENT_CYCLES }, worker));
}

export async function benchSubscriberChurn(agentd: AgentdChild, turnsPerRound: number): Promise<void> {
  await measureThroughput(agentd, turnsPerRound, 'churn-warmup');
  const before: Throughput[] = [];
  for (let round = 0; round < ROUNDS; round++) before.push(await measureThroughput(agentd, turnsPerRound, `churn-before${round}`));
  const rssBefore = agentd.rssMb();
  const churnStarted = performance.now();
  await churnSubscribers(agentd.url, CYCLES);
  const churnMs = performance.now() - churnStarted;
  const after: Throughput[] = [];
  for (let round = 0; round < ROUNDS; round++) after.push(await measureThroughput(agentd, turnsPerRound, `churn-after${round}`));

  const rateBefore = median(before.map((run) => run.turnsPerSecond));
  const rateAfter = median(after.map((run) => run.turnsPerSecond));
  const change = (100 * (rateAfter - rateBefore)) / rateBefore;
  printFigure({
    name: `Throughput after ${whole(CYCLES)} subscriber connect/disconnect cycles`,
    value: `${whole(rateAfter)} turns/s after vs ${whole(rateBefore)} before (${change >= 0 ? '+' : ''}${fixed(change)}%)`,
    target: 'within 5% of before',
    met: change >= -5,
    detail: `median of ${ROUNDS} runs of ${turnsPerRound} turns each side, ${LISTENERS} subscribers reading; ${CYCLES} cycles took ${fixed(churnMs / 1000)} s`,
  });
  const cpuBefore = median(before.map((run) => run.cpuMsPerTurn));
  const cpuAfter = median(after.map((run) => run.cpuMsPerTurn));
  printFigure({
    name: 'Server CPU per turn before and after the cycles (context)',
    value: `${fixed(cpuBefore, 2)} ms → ${fixed(cpuAfter, 2)} ms; RSS ${fixed(rssBefore)} MB → ${fixed(agentd.rssMb())} MB`,
  });
}

runIfMain(import.meta.url, async () => {
  const fake = await startFakeModel();
  const agentd = await startAgentd({ models: modelsFor(fake.baseUrl), args: TURN_LIMIT_ARGS });
  try {
    await benchSubscriberChurn(agentd, Number(process.env.BENCH_TURNS ?? 1000));
  } finally {
    await Promise.all([agentd.stop(), fake.stop()]);
  }
});

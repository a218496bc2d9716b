/**
 * Figure 5 of docs/PERFORMANCE.md: SSE fan-out to 256 subscribers. Turns whose model streams
 * many words at a steady pace produce the events (one response.text.delta per word), 4 turns at
 * a time; every subscriber must read every event.
 *
 *   node --import tsx bench/sse-fanout.ts     (BENCH_EVENT_RATE events/s offered, BENCH_SECONDS × 2 s)
 */
import { modelsFor, sleep, startAgentd, startFakeModel, type AgentdChild, type FakeModelChild } from './support/children.ts';
import { FanoutMeter } from './support/fanout-meter.ts';
import { fixed, printFigure, runIfMain, whole } from './support/report.ts';
import { driveTurns, IN_FLIGHT, TURN_LIMIT_ARGS } from './turns.ts';

export const SUBSCRIBERS = 256;
/** each paced turn streams for about this long */
const TURN_SECONDS = 2;

export interface FanoutOptions {
  /** events per second offered, across the turns in flight */
  eventRate: number;
  seconds: number;
}

export function fanoutOptionsFromEnv(): FanoutOptions {
  return { eventRate: Number(process.env.BENCH_EVENT_RATE ?? 300), seconds: Number(process.env.BENCH_SECONDS ?? 5) * 2 };
}

export interface FanoutRun {
  deliveredPerSecond: number;
  p99Ms: number;
  lost: number;
  frames: number;
}

/** Offers `eventRate` events/s to `subscribers` subscribers for about `seconds` and measures delivery. */
export async function measureFanout(agentd: AgentdChild, fake: FakeModelChild, subscribers: number, options: FanoutOptions): Promise<FanoutRun> {
  const perTurnRate = options.eventRate / IN_FLIGHT;
  await fake.configure(Math.max(1, Math.round(perTurnRate * TURN_SECONDS)), perTurnRate);
  const meter = await FanoutMeter.connect(agentd.url, subscribers);
  try {
    const turns = Math.max(IN_FLIGHT, Math.round((options.seconds / TURN_SECONDS) * IN_FLIGHT));
    const run = await driveTurns(agentd, { turns, seconds: options.seconds * 3, label: `fanout${options.eventRate}` });
    const finalId = run.newestEventId;
    // Everything has been written once the turns ended; give the subscribers a bounded while to read it.
    const deadline = Date.now() + 10_000;
    while (meter.lowestLastId() < finalId && Date.now() < deadline) await sleep(20);
    const result = meter.result(finalId);
    return {
      deliveredPerSecond: (result.frames * 1000) / result.spanMs,
      p99Ms: result.latencyPercentile(0.99),
      lost: result.lost,
      frames: result.frames,
    };
  } finally {
    await meter.close();
    await fake.configure(8, 0);
  }
}

export async function benchFanout(agentd: AgentdChild, fake: FakeModelChild, options: FanoutOptions): Promise<void> {
  const run = await measureFanout(agentd, fake, SUBSCRIBERS, options);
  printFigure({
    name: `SSE fan-out to ${SUBSCRIBERS} subscribers`,
    value: `${whole(run.deliveredPerSecond)} delivered events/s, p99 delivery ${run.p99Ms} ms, ${run.lost} lost`,
    target: '≥ 50,000/s, p99 ≤ 25 ms, 0 lost',
    met: run.deliveredPerSecond >= 50_000 && run.p99Ms <= 25 && run.lost === 0,
    detail: `${options.eventRate} events/s offered by ${IN_FLIGHT} paced turns for ${options.seconds} s; ${whole(run.frames)} frames read`,
  });
  // Headroom: the same at higher offered rates, until delivery falls behind.
  for (const factor of [2, 4]) {
    const harder = await measureFanout(agentd, fake, SUBSCRIBERS, { ...options, eventRate: options.eventRate * factor, seconds: options.seconds / 2 });
    printFigure({
      name: `SSE fan-out to ${SUBSCRIBERS} subscribers at ${options.eventRate * factor} events/s offered (context)`,
      value: `${whole(harder.deliveredPerSecond)} delivered events/s, p99 delivery ${harder.p99Ms} ms, ${harder.lost} lost`,
      detail: `${fixed(options.seconds / 2)} s`,
    });
  }
}

runIfMain(import.meta.url, async () => {
  const fake = await startFakeModel();
  const agentd = await startAgentd({ models: modelsFor(fake.baseUrl), args: TURN_LIMIT_ARGS });
  try {
    await benchFanout(agentd, fake, fanoutOptionsFromEnv());
  } finally {
    await Promise.all([agentd.stop(), fake.stop()]);
  }
});

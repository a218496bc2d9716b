/**
 * Figure 8 of docs/PERFORMANCE.md (memory): agentd's RSS idle, after the load of the other
 * benchmarks, and over 20,000 turns. RSS is read from /proc/PID/status (VmRSS).
 *
 *   node --import tsx bench/memory.ts         (BENCH_MEMORY_TURNS, default 20,000)
 *
 * BENCH_NODE_FLAGS passes V8 options to the agentd child (e.g. "--max-semi-space-size=4") to see
 * what heap sizing does to the figures; the flags used are printed with them.
 */
import { agentdNodeFlags, modelsFor, sleep, startAgentd, startFakeModel, startHello, type AgentdChild, type FakeModelChild } from './support/children.ts';
import { fixed, printFigure, runIfMain, whole } from './support/report.ts';
import { benchFanout, fanoutOptionsFromEnv } from './sse-fanout.ts';
import { benchSubscriberChurn } from './subscriber-churn.ts';
import { benchTurns, driveTurns, TURN_LIMIT_ARGS, turnOptionsFromEnv } from './turns.ts';

export const SETTLE_MS = 1_000;
const SAMPLE_EVERY = 5_000;

function flagsNote(): string {
  const flags = agentdNodeFlags();
  return flags.length === 0 ? 'default V8 heap settings' : `node ${flags.join(' ')}`;
}

/** RSS once start-up's garbage has had a moment to go. */
export async function printIdleRss(agentd: AgentdChild): Promise<void> {
  await sleep(SETTLE_MS);
  const rss = agentd.rssMb();
  printFigure({ name: 'RSS idle', value: `${fixed(rss)} MB`, target: '≤ 80 MB', met: rss <= 80, detail: `${SETTLE_MS} ms after "listening"; ${flagsNote()}` });
}

/** agentd's second idle collection, which gives the young generation back, comes after 30 s of quiet (src/cli/idle-collection.ts). */
export const IDLE_SETTLE_MS = 31_000;

/** RSS once the load is over: right after it, and once agentd has been idle long enough to give back what the load grew. */
export async function printRssAfterLoad(agentd: AgentdChild, what: string): Promise<void> {
  await sleep(SETTLE_MS);
  const soon = agentd.rssMb();
  await sleep(IDLE_SETTLE_MS - SETTLE_MS);
  const rss = agentd.rssMb();
  printFigure({
    name: 'RSS after the load above',
    value: `${fixed(rss)} MB`,
    target: '≤ 150 MB',
    met: rss <= 150,
    detail: `${IDLE_SETTLE_MS / 1000} s after it (${fixed(soon)} MB after ${SETTLE_MS / 1000} s); ${what}; ${flagsNote()}`,
  });
}

/** Runs `turns` more turns and samples RSS every 5,000; flat = the last sample within 10% of the second. */
export async function benchRssOverTurns(agentd: AgentdChild, turns: number): Promise<void> {
  const samples: string[] = [`0: ${fixed(agentd.rssMb())}`];
  const values: number[] = [agentd.rssMb()];
  const run = await driveTurns(agentd, {
    turns,
    seconds: 600,
    label: 'memory',
    onTurn(finished) {
      if (finished % SAMPLE_EVERY !== 0) return;
      values.push(agentd.rssMb());
      samples.push(`${whole(finished)}: ${fixed(values[values.length - 1])}`);
    },
  });
  const reference = values[1] ?? values[0];
  const last = values[values.length - 1];
  const growth = (100 * (last - reference)) / reference;
  printFigure({
    name: `RSS over ${whole(run.timings.length)} turns`,
    value: `${samples.join(', ')} MB (${growth >= 0 ? '+' : ''}${fixed(growth)}% from ${whole(SAMPLE_EVERY)} to the end)`,
    target: 'flat (≤ +10% after the first 5,000)',
    met: growth <= 10 && run.timings.length === turns,
    detail: `${fixed(run.elapsedMs / 1000)} s at ${whole((run.timings.length * 1000) / run.elapsedMs)} turns/s; ${flagsNote()}`,
  });
}

export async function benchMemory(agentd: AgentdChild, fake: FakeModelChild): Promise<void> {
  await benchTurns(agentd, fake, turnOptionsFromEnv());
  await benchFanout(agentd, fake, fanoutOptionsFromEnv());
  await benchSubscriberChurn(agentd, 1000);
  await printRssAfterLoad(agentd, 'turns, SSE fan-out and subscriber churn');
  await benchRssOverTurns(agentd, Number(process.env.BENCH_MEMORY_TURNS ?? 20_000));
}

runIfMain(import.meta.url, async () => {
  const fake = await startFakeModel();
  const agentd = await startAgentd({ models: modelsFor(fake.baseUrl), args: TURN_LIMIT_ARGS, nodeArgs: agentdNodeFlags() });
  const hello = await startHello();
  try {
    await printIdleRss(agentd);
    await sleep(SETTLE_MS);
    printFigure({ name: 'Bare Fastify hello RSS (context)', value: `${fixed(hello.rssMb())} MB` });
    await benchMemory(agentd, fake);
  } finally {
    await Promise.all([agentd.stop(), fake.stop(), hello.stop()]);
  }
});

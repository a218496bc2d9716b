/**
 * Every figure of docs/PERFORMANCE.md in one run, on one agentd where the order matters: memory
 * "after the load above" is read after the HTTP, turn, fan-out and churn benchmarks have run on
 * the same process.
 *
 *   node --import tsx bench/run.ts            (takes about 5 minutes)
 *
 * Knobs (environment): BENCH_SECONDS, BENCH_ROUNDS, BENCH_TURNS, BENCH_EVENT_RATE,
 * BENCH_MEMORY_TURNS, BENCH_STARTS, BENCH_NODE_FLAGS; see each benchmark's file. BENCH_AGENTD_ROOT
 * runs agentd from another checkout (a before/after pair on one machine).
 */
import { cpus } from 'node:os';
import { benchHistoryPage, historyPageOptionsFromEnv } from './history-page.ts';
import { benchHttpRoutes, httpRouteOptionsFromEnv } from './http-routes.ts';
import { benchMemory, printIdleRss } from './memory.ts';
import { benchStartup } from './startup.ts';
import { agentdNodeFlags, agentdRoot, modelsFor, startAgentd, startFakeModel, startHello } from './support/children.ts';
import { waitForQuietMachine } from './support/quiet.ts';
import { runIfMain } from './support/report.ts';
import { TURN_LIMIT_ARGS } from './turns.ts';

/** Waits for the machine to be nearly idle and says so when it never was. */
async function quietly(section: string, run: () => Promise<void>): Promise<void> {
  const busy = await waitForQuietMachine();
  console.log(`# ${section}${busy > 0.1 ? ` (note: the machine was ${Math.round(busy * 100)}% busy with other work when it started)` : ''}`);
  await run();
}

runIfMain(import.meta.url, async () => {
  console.log(`# agentd benchmarks ${new Date().toISOString()}, node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}`);
  await quietly('start-up', () => benchStartup(Number(process.env.BENCH_STARTS ?? 5)));

  const fake = await startFakeModel();
  const agentd = await startAgentd({ models: modelsFor(fake.baseUrl), args: TURN_LIMIT_ARGS, nodeArgs: agentdNodeFlags(), root: agentdRoot() });
  const hello = await startHello();
  try {
    await quietly('memory, idle', () => printIdleRss(agentd));
    await quietly('HTTP routes (wrk)', () => benchHttpRoutes(agentd, hello, httpRouteOptionsFromEnv()));
    await quietly('turns, fan-out, churn, memory under load', () => benchMemory(agentd, fake));
  } finally {
    await Promise.all([agentd.stop(), fake.stop(), hello.stop()]);
  }
  await quietly('history page', () => benchHistoryPage(historyPageOptionsFromEnv()));
});

/**
 * Live turns per instance (PERFORMANCE.md, "Live turns"): N sessions each stream one turn whose
 * model writes ten text deltas a second for five seconds, every session watched by its own SSE
 * subscriber, the load generator on the same machine. The same load runs against the delta
 * ceiling (bench/support/delta-ceiling-server.mjs, a bare relay of the contract's exchanges), so
 * agentd's CPU per delta is quoted as a ratio of the same run.
 *
 *   node --import tsx bench/capacity.ts
 *     BENCH_LIVE_TURNS=250,1000,2000   the N to run, in order
 *     BENCH_DELTA_RATE=10              text deltas per second per turn
 *     BENCH_TURN_SECONDS=5             how long each turn streams
 *     BENCH_DIALECT=openai-responses   or anthropic-messages, openai-chat
 *     BENCH_TARGETS=agentd,ceiling     which servers to load
 *
 * Latency is the model's write of a delta to the subscriber's read of it: each delta's word is the
 * fake model's wall clock in microseconds at the write (bench/support/paced-model-server.ts).
 */
import { readFileSync } from 'node:fs';
import { agentdNodeFlags, modelsFor, sleep, spawnScript, startAgentd, type Child } from './support/children.ts';
import { inBatches } from './support/batches.ts';
import { clockWordsIn, nowMicros } from './support/clock-words.ts';
import { HttpClient } from './support/http-client.ts';
import { fixed, percentile, printFigure, runIfMain, whole } from './support/report.ts';
import { SseSubscriber, type SseFrame } from './support/sse-subscriber.ts';
import { TERMINAL_EVENTS } from './support/turn-driver.ts';

type Dialect = 'openai-responses' | 'anthropic-messages' | 'openai-chat';
type Target = 'agentd' | 'ceiling';

export interface CapacityOptions {
  liveTurns: number;
  deltaRate: number;
  turnSeconds: number;
  dialect: Dialect;
}

export interface CapacityRun {
  target: Target;
  expected: number;
  delivered: number;
  lost: number;
  outOfOrder: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  cpuPerDeltaUs: number;
  rssPerTurnKb: number;
  peakRssMb: number;
  /** p99 and count of the deltas read while turns were still being admitted, while all streamed, and once the first had ended */
  byPhase: Record<Phase, { p99Ms: number; count: number }>;
}

type Phase = 'admitting' | 'streaming' | 'ending';

/** Every delta read: its latency, and when it was read (ms, performance.now). */
interface DeltaSamples {
  latenciesMs: number[];
  readAtMs: number[];
}

const ADMISSION_CONNECTIONS = 32;

/** One session's subscriber: reads its deltas back, times them, checks ids only ever rise. */
class LiveTurnWatcher {
  deltas = 0;
  outOfOrder = 0;
  ended = false;
  endedAtMs = Number.POSITIVE_INFINITY;
  private lastId = -1;
  constructor(private readonly samples: DeltaSamples) {}

  readonly onFrame = (frame: SseFrame): void => {
    const readAt = nowMicros();
    if (frame.id !== null) {
      if (frame.id <= this.lastId) this.outOfOrder += 1;
      this.lastId = frame.id;
    }
    if (frame.event === 'response.text.delta') {
      for (const { latencyMs } of clockWordsIn(frame.data, readAt)) {
        this.deltas += 1;
        this.samples.latenciesMs.push(latencyMs);
        this.samples.readAtMs.push(performance.now());
      }
    } else if (TERMINAL_EVENTS.has(frame.event)) {
      this.ended = true;
      this.endedAtMs = performance.now();
    }
  };
}

function peakRssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN) / 1024;
}

async function startTarget(target: Target, modelBaseUrl: string, options: CapacityOptions): Promise<Child> {
  if (target === 'ceiling') return spawnScript('delta-ceiling-server.mjs', /delta ceiling listening on (http:\/\/\S+)/, [modelBaseUrl, options.dialect]);
  const models = modelsFor(modelBaseUrl);
  const connections = models.connections.map((connection) => ({ ...connection, dialect: options.dialect }));
  return startAgentd({ models: { ...models, connections }, args: liveTurnArgs(options.liveTurns), nodeArgs: agentdNodeFlags() });
}

/** `agentd serve` sized for `liveTurns` streaming at once, each watched: room for every turn and subscriber. */
export function liveTurnArgs(liveTurns: number): string[] {
  const room = String(liveTurns + 8);
  return ['--log-level', 'warn', '--max-concurrent-turns', room, '--max-queued-turns', room, '--max-event-subscribers', room, '--model-stall-timeout', '600'];
}

/** N live turns against one target; the paced model is its own process, started fresh. */
export async function measureCapacity(target: Target, options: CapacityOptions): Promise<CapacityRun> {
  const deltasPerTurn = options.deltaRate * options.turnSeconds;
  const model = await spawnScript('paced-model-server.ts', /paced model listening on (http:\/\/\S+)/, ['--deltas', String(deltasPerTurn), '--rate', String(options.deltaRate)]);
  const server = await startTarget(target, `${model.url}/v1`, options);
  const client = new HttpClient(server.url, ADMISSION_CONNECTIONS);
  const samples: DeltaSamples = { latenciesMs: [], readAtMs: [] };
  const { latenciesMs } = samples;
  const watchers = Array.from({ length: options.liveTurns }, () => new LiveTurnWatcher(samples));
  const subscribers: SseSubscriber[] = [];
  try {
    await sleep(500);
    const idleRssMb = server.rssMb();
    const sessions = await inBatches(options.liveTurns, ADMISSION_CONNECTIONS, async () => (await client.expect(201, 'POST', '/v1/sessions', {})).id as string);
    subscribers.push(...await inBatches(options.liveTurns, ADMISSION_CONNECTIONS, (index) => SseSubscriber.connect(server.url, watchers[index].onFrame, undefined, sessions[index])));
    const cpuBeforeMs = server.cpuMs();
    await inBatches(options.liveTurns, ADMISSION_CONNECTIONS, (index) => client.expect(202, 'POST', `/v1/sessions/${sessions[index]}/turns`, { input: `live turn ${index}` }));
    const admittedAtMs = performance.now();
    const deadline = Date.now() + (options.turnSeconds + 60) * 1000;
    while (watchers.some((watcher) => !watcher.ended) && Date.now() < deadline) await sleep(50);
    const cpuMs = server.cpuMs() - cpuBeforeMs;
    const delivered = watchers.reduce((sum, watcher) => sum + watcher.deltas, 0);
    const expected = options.liveTurns * deltasPerTurn;
    const peak = peakRssMb(server.pid);
    return {
      target,
      expected,
      delivered,
      lost: watchers.reduce((sum, watcher) => sum + Math.max(0, deltasPerTurn - watcher.deltas), 0),
      outOfOrder: watchers.reduce((sum, watcher) => sum + watcher.outOfOrder, 0),
      p50Ms: percentile(latenciesMs, 0.5),
      p99Ms: percentile(latenciesMs, 0.99),
      maxMs: latenciesMs.reduce((max, value) => Math.max(max, value), 0),
      cpuPerDeltaUs: delivered === 0 ? Number.NaN : (cpuMs * 1000) / delivered,
      rssPerTurnKb: ((peak - idleRssMb) * 1024) / options.liveTurns,
      peakRssMb: peak,
      byPhase: splitByPhase(samples, admittedAtMs, Math.min(...watchers.map((watcher) => watcher.endedAtMs))),
    };
  } finally {
    await Promise.all(subscribers.map((subscriber) => subscriber.closeAndWait()));
    client.close();
    await server.stop();
    await model.stop();
  }
}

/** The deltas read before the last admission, between it and the first end, and after the first end. */
function splitByPhase(samples: DeltaSamples, admittedAtMs: number, firstEndAtMs: number): CapacityRun['byPhase'] {
  const phases: Record<Phase, number[]> = { admitting: [], streaming: [], ending: [] };
  samples.readAtMs.forEach((at, index) => {
    const phase: Phase = at < admittedAtMs ? 'admitting' : at < firstEndAtMs ? 'streaming' : 'ending';
    phases[phase].push(samples.latenciesMs[index]!);
  });
  const summary = (latencies: number[]) => ({ p99Ms: latencies.length ? percentile(latencies, 0.99) : Number.NaN, count: latencies.length });
  return { admitting: summary(phases.admitting), streaming: summary(phases.streaming), ending: summary(phases.ending) };
}

function report(run: CapacityRun, options: CapacityOptions, ceiling?: CapacityRun): void {
  const label = `${run.target}, ${whole(options.liveTurns)} live turns`;
  const sustained = run.lost === 0 && run.p99Ms <= 100;
  printFigure({
    name: `${label}: delivery`,
    value: `${whole(run.delivered)} of ${whole(run.expected)} deltas, ${whole(run.lost)} lost, p50 ${fixed(run.p50Ms)} ms, p99 ${fixed(run.p99Ms)} ms, max ${fixed(run.maxMs)} ms`,
    ...(run.target === 'agentd' ? { target: 'p99 ≤ 100 ms, none lost', met: sustained } : {}),
    detail: `${options.dialect}, ${options.deltaRate} deltas/s for ${options.turnSeconds} s${run.outOfOrder ? `, ${run.outOfOrder} ids out of order` : ''}`,
  });
  const phase = (name: Phase) => `${name} ${fixed(run.byPhase[name].p99Ms)} ms (${whole(run.byPhase[name].count)} deltas)`;
  printFigure({
    name: `${label}: p99 delivery by phase`,
    value: `${phase('admitting')}, ${phase('streaming')}, ${phase('ending')}`,
    detail: 'admitting: until the last turn was admitted; streaming: until the first turn ended; ending: after',
  });
  const ratio = ceiling ? run.cpuPerDeltaUs / ceiling.cpuPerDeltaUs : undefined;
  printFigure({
    name: `${label}: CPU per delta`,
    value: `${fixed(run.cpuPerDeltaUs)} µs${ratio === undefined ? '' : ` (${fixed(ratio, 2)}× the ceiling's ${fixed(ceiling!.cpuPerDeltaUs)} µs)`}`,
    ...(ratio === undefined ? {} : { target: '≤ 3× the delta ceiling', met: ratio <= 3 }),
  });
  printFigure({
    name: `${label}: RSS per live turn above idle`,
    value: `${fixed(run.rssPerTurnKb)} KB (peak ${fixed(run.peakRssMb)} MB)`,
    ...(run.target === 'agentd' ? { target: '≤ 64 KB', met: run.rssPerTurnKb <= 64 } : {}),
  });
}

export function capacityOptionsFromEnv(): { counts: number[]; targets: Target[]; base: Omit<CapacityOptions, 'liveTurns'> } {
  const dialect = (process.env.BENCH_DIALECT ?? 'openai-responses') as Dialect;
  if (!['openai-responses', 'anthropic-messages', 'openai-chat'].includes(dialect)) throw new Error(`BENCH_DIALECT: no dialect ${dialect}`);
  const targets = (process.env.BENCH_TARGETS ?? 'ceiling,agentd').split(',') as Target[];
  if (targets.some((target) => target !== 'agentd' && target !== 'ceiling')) throw new Error('BENCH_TARGETS: agentd and/or ceiling');
  return {
    counts: (process.env.BENCH_LIVE_TURNS ?? '250,1000,2000').split(',').map(Number),
    targets,
    base: { deltaRate: Number(process.env.BENCH_DELTA_RATE ?? 10), turnSeconds: Number(process.env.BENCH_TURN_SECONDS ?? 5), dialect },
  };
}

runIfMain(import.meta.url, async () => {
  const { counts, targets, base } = capacityOptionsFromEnv();
  for (const liveTurns of counts) {
    const options = { ...base, liveTurns };
    const ceiling = targets.includes('ceiling') ? await measureCapacity('ceiling', options) : undefined;
    if (ceiling) report(ceiling, options);
    if (targets.includes('agentd')) report(await measureCapacity('agentd', options), options, ceiling);
  }
});

/**
 * Issue 17 §5, load held: with limits raised by flags, LOAD_SESSIONS sessions (500) each run one
 * streaming turn against a paced fake model (LOAD_TOKENS_PER_SECOND, 20 tokens/s, LOAD_WORDS words
 * per reply, 20) while LOAD_SUBSCRIBERS SSE subscribers (1,000) read every event; meanwhile a probe
 * times real requests. Reports events lost, p99 delivery latency, agentd's peak RSS and CPU.
 *
 *   node --import tsx bench/load-held.ts
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { modelsFor, sleep, startAgentd, startFakeModel } from './support/children.ts';
import { FanoutMeter } from './support/fanout-meter.ts';
import { HttpClient } from './support/http-client.ts';
import { fixed, percentile, printFigure, runIfMain, whole } from './support/report.ts';
import { TurnWatcher } from './support/turn-driver.ts';
import { SseSubscriber } from './support/sse-subscriber.ts';

const SESSIONS = Number(process.env.LOAD_SESSIONS ?? 500);
const SUBSCRIBERS = Number(process.env.LOAD_SUBSCRIBERS ?? 1_000);
const TOKENS_PER_SECOND = Number(process.env.LOAD_TOKENS_PER_SECOND ?? 20);
const WORDS = Number(process.env.LOAD_WORDS ?? 20);

export async function benchLoadHeld(): Promise<void> {
  const fake = await startFakeModel({ words: WORDS, framesPerSecond: TOKENS_PER_SECOND });
  const agentd = await startAgentd({
    models: modelsFor(fake.baseUrl),
    args: [
      '--log-level', 'warn',
      '--max-concurrent-turns', String(SESSIONS), '--max-queued-turns', String(SESSIONS * 2),
      '--max-event-subscribers', String(SUBSCRIBERS + 10), '--event-replay-limit', '100000',
    ],
  });
  const client = new HttpClient(agentd.url, 64);
  try {
    const meter = await FanoutMeter.connect(agentd.url, SUBSCRIBERS);
    const watcher = new TurnWatcher();
    const watch = await SseSubscriber.connect(agentd.url, watcher.onFrame);
    const sessions = await Promise.all(Array.from({ length: SESSIONS }, () => client.expect(201, 'POST', '/v1/sessions', {})));
    let peakRssMb = agentd.rssMb();
    const cpuBefore = agentd.cpuMs();
    const started = performance.now();
    // The probe runs in its own process: this one is busy reading a million frames a second.
    const probe = startProbe(`${agentd.url}/healthz`);
    const rss = setInterval(() => (peakRssMb = Math.max(peakRssMb, agentd.rssMb())), 100);
    const turns = await Promise.all(sessions.map((session) => client.expect(202, 'POST', `/v1/sessions/${session.id}/turns`, { input: 'stream at a steady pace' })));
    const ends = await Promise.all(turns.map((turn) => watcher.wait(turn.id, 300_000)));
    const elapsedMs = performance.now() - started;
    const cpuMs = agentd.cpuMs() - cpuBefore;
    clearInterval(rss);
    const probeLatencies = await probe.stop();
    const finalId = watcher.newestId;
    const deadline = Date.now() + 30_000;
    while (meter.lowestLastId() < finalId && Date.now() < deadline) await sleep(50);
    const result = meter.result(finalId);
    watch.close();
    await meter.close();
    const completed = ends.filter((end) => end.event === 'turn.completed').length;
    const scene = `${SESSIONS} streaming turns (${WORDS} tokens at ${TOKENS_PER_SECOND}/s), ${SUBSCRIBERS} SSE subscribers`;
    console.log(`Load held: ${scene}`);
    printFigure({ name: 'turns completed', value: `${completed} / ${SESSIONS}` });
    printFigure({ name: 'events lost', value: whole(result.lost), target: '0', met: result.lost === 0, detail: `${whole(finalId)} events to each subscriber, ${whole(result.frames)} frames` });
    printFigure({ name: 'delivery latency p50 / p99', value: `${result.latencyPercentile(0.5)} / ${result.latencyPercentile(0.99)} ms`, detail: 'read time minus the event\'s at' });
    printFigure({ name: '/healthz while loaded p50 / p99', value: `${fixed(percentile(probeLatencies, 0.5))} / ${fixed(percentile(probeLatencies, 0.99))} ms` });
    printFigure({ name: 'wall time', value: `${fixed(elapsedMs / 1000)} s` });
    printFigure({ name: 'agentd peak RSS', value: `${whole(peakRssMb)} MB` });
    printFigure({ name: 'agentd CPU', value: `${whole(cpuMs)} ms`, detail: `${fixed((cpuMs / elapsedMs) * 100, 0)} % of one core over the run` });
  } finally {
    client.close();
    await agentd.stop();
    await fake.stop();
  }
}

/** Times GET requests to `url` every 50 ms from a child process until stopped. */
function startProbe(url: string): { stop(): Promise<number[]> } {
  const script = `
    const latencies = [];
    let running = true;
    process.stdin.on('end', () => (running = false)).resume();
    (async () => {
      while (running) {
        const sent = performance.now();
        await fetch(${JSON.stringify(url)}).then((response) => response.text());
        latencies.push(performance.now() - sent);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      process.stdout.write(JSON.stringify(latencies));
    })();`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['pipe', 'pipe', 'inherit'] });
  let output = '';
  child.stdout.on('data', (chunk) => (output += chunk));
  return {
    async stop() {
      child.stdin.end();
      await once(child, 'exit');
      return JSON.parse(output) as number[];
    },
  };
}

runIfMain(import.meta.url, benchLoadHeld);

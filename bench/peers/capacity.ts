/**
 * Live turns per server, measured the same way for every peer (issue 46 item 5): N sessions each
 * stream one turn from the paced model (bench/support/paced-model-server.ts: ten deltas a second
 * for five seconds by default, every word the model's clock at its write), each watched by a
 * subscriber of its own on the peer's own event stream, all at once. The latency of a delta is the
 * model's write to the watcher's first read of its word; a word a watcher never reads is lost.
 * The ladder climbs N until p99 passes a second or a delta is lost, a fresh server for each step.
 *
 * Each peer is sized for the load as its operator would size it: agentd's turn and subscriber
 * limits, LangGraph's workers (`--n-jobs-per-worker`: a run holds one while it streams). opencode
 * has one event stream for every session, so its watchers each read every session's frames and
 * keep their own (what a client of opencode watching one session must do).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { request as httpRequest, type ClientRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createParser } from 'eventsource-parser';
import { inBatches } from '../support/batches.ts';
import { clockWordsIn, nowMicros } from '../support/clock-words.ts';
import { sleep, spawnScript } from '../support/children.ts';
import { HttpClient } from '../support/http-client.ts';
import { fixed, percentile, whole } from '../support/report.ts';
import type { Peer, RunningPeer } from './peer.ts';
import type { Cell } from './table.ts';

export interface LiveTurnsOptions {
  deltaRate: number;
  turnSeconds: number;
  /** the N to climb through, in order */
  ladder: number[];
  /** the p99 a step must stay within to count as sustained */
  p99LimitMs: number;
}

interface LiveTurnsReading {
  liveTurns: number;
  expected: number;
  delivered: number;
  lost: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** turns whose end was not seen before the deadline */
  unfinished: number;
  rssPerTurnKb: number;
}

const ADMISSION_CONNECTIONS = 32;
const RSS_SAMPLE_MS = 250;

/** One session's watcher: the first read of each clock word, and whether its turn has ended. */
class LiveTurnWatcher {
  readonly seen = new Set<string>();
  ended = false;
  private request: ClientRequest | null = null;

  constructor(
    private readonly sessionId: string,
    private readonly sharedStream: boolean,
    private readonly latenciesMs: number[],
    private readonly peer: Pick<RunningPeer, 'isTurnEnd' | 'isTextDelta'>,
  ) {}

  /** Resolves once the stream's 200 has arrived. */
  connect(url: string): Promise<void> {
    const parser = createParser({ onEvent: (message) => this.read(message.event, message.data) });
    return new Promise((resolve, reject) => {
      this.request = httpRequest(url, { headers: { accept: 'text/event-stream' }, agent: false }, (response) => {
        if (response.statusCode !== 200) {
          response.resume();
          return reject(new Error(`watcher: HTTP ${response.statusCode} from ${url}`));
        }
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => parser.feed(chunk));
        response.on('end', () => (this.ended = true));
        response.on('error', () => (this.ended = true));
        resolve();
      });
      this.request.on('error', (error) => (this.ended ? undefined : reject(error)));
      this.request.end();
    });
  }

  close(): void {
    this.request?.destroy();
  }

  private read(event: string | undefined, data: string): void {
    if (this.sharedStream && !data.includes(this.sessionId)) return;
    if (this.peer.isTurnEnd(event, data)) this.ended = true;
    if (!this.peer.isTextDelta(event, data)) return;
    const readAt = nowMicros();
    for (const { word, latencyMs } of clockWordsIn(data, readAt)) {
      if (this.seen.has(word)) continue;
      this.seen.add(word);
      this.latenciesMs.push(latencyMs);
    }
  }
}

/** Turns streaming at once on a running peer, each watched: what they read, once all have ended. */
interface LiveRound {
  watchers: LiveTurnWatcher[];
  latenciesMs: number[];
}

/**
 * Makes `count` sessions and their turns, watches each, then starts them all at once and waits for
 * their ends.
 */
async function streamLiveTurns(running: RunningPeer, count: number, options: LiveTurnsOptions, watchers: LiveTurnWatcher[]): Promise<LiveRound> {
  const admit = new HttpClient(running.url, ADMISSION_CONNECTIONS);
  // every turn's start may hold its connection until the turn ends (opencode's message route)
  const starts = new HttpClient(running.url, count + 8);
  try {
    const sessions = await inBatches(count, ADMISSION_CONNECTIONS, () => running.createSession(admit));
    const turns = await inBatches(count, ADMISSION_CONNECTIONS, (index) => running.prepareLiveTurn(admit, sessions[index], `live turn ${index}`, count));
    const latenciesMs: number[] = [];
    const own = turns.map((turn, index) => new LiveTurnWatcher(sessions[index], turn.sharedStream, latenciesMs, running));
    watchers.push(...own);
    await inBatches(count, ADMISSION_CONNECTIONS, (index) => own[index].connect(running.url + turns[index].subscribePath));
    // a start the peer refuses ends that turn at once: its deltas count as lost
    const started = turns.map((turn, index) =>
      turn.start(starts).then(
        () => void (turn.endsWhenStarted && (own[index].ended = true)),
        () => void (own[index].ended = true),
      ),
    );
    const deadline = Date.now() + (options.turnSeconds + 60 + count / 50) * 1000;
    while (own.some((watcher) => !watcher.ended) && Date.now() < deadline) await sleep(100);
    await Promise.race([Promise.allSettled(started), sleep(5_000)]);
    // the last frames of a turn may trail its end on another connection
    await sleep(500);
    return { watchers: own, latenciesMs };
  } finally {
    admit.close();
    starts.close();
  }
}

/**
 * N live turns on a fresh `peer`, with a fresh paced model of its own, after one live turn alone
 * that warms the server up (opencode loads its plugins at its first turn; JIT everywhere).
 */
async function measureLiveTurns(peer: Peer, liveTurns: number, options: LiveTurnsOptions): Promise<LiveTurnsReading> {
  const deltasPerTurn = options.deltaRate * options.turnSeconds;
  const model = await spawnScript('paced-model-server.ts', /paced model listening on (http:\/\/\S+)/, ['--deltas', String(deltasPerTurn), '--rate', String(options.deltaRate)]);
  const scratch = mkdtempSync(join(tmpdir(), 'agentd-bench-live-'));
  let server: RunningPeer | null = null;
  const watchers: LiveTurnWatcher[] = [];
  try {
    server = await peer.start(`${model.url}/v1`, scratch, liveTurns);
    const running = server;
    await streamLiveTurns(running, 1, options, watchers);
    await sleep(500);
    const idleRssMb = running.rssMb();
    let peakRssMb = idleRssMb;
    const sampler = setInterval(() => (peakRssMb = Math.max(peakRssMb, running.rssMb())), RSS_SAMPLE_MS);
    const round = await streamLiveTurns(running, liveTurns, options, watchers).finally(() => clearInterval(sampler));
    const { latenciesMs } = round;
    return {
      liveTurns,
      expected: liveTurns * deltasPerTurn,
      delivered: round.watchers.reduce((sum, watcher) => sum + Math.min(deltasPerTurn, watcher.seen.size), 0),
      lost: round.watchers.reduce((sum, watcher) => sum + Math.max(0, deltasPerTurn - watcher.seen.size), 0),
      p50Ms: percentile(latenciesMs, 0.5),
      p99Ms: percentile(latenciesMs, 0.99),
      maxMs: latenciesMs.reduce((max, value) => Math.max(max, value), 0),
      unfinished: round.watchers.filter((watcher) => !watcher.ended).length,
      rssPerTurnKb: ((peakRssMb - idleRssMb) * 1024) / liveTurns,
    };
  } finally {
    for (const watcher of watchers) watcher.close();
    await server?.stop();
    await model.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
}

function sustained(reading: LiveTurnsReading, options: LiveTurnsOptions): boolean {
  return reading.lost === 0 && reading.unfinished === 0 && reading.p99Ms <= options.p99LimitMs;
}

function describeReading(reading: LiveTurnsReading): string {
  return `${whole(reading.liveTurns)} live turns: ${whole(reading.delivered)} of ${whole(reading.expected)} deltas, ${whole(reading.lost)} lost, p50 ${fixed(reading.p50Ms)} ms, p99 ${fixed(reading.p99Ms)} ms, max ${fixed(reading.maxMs)} ms${reading.unfinished ? `, ${whole(reading.unfinished)} turns unfinished` : ''}, RSS ${fixed(reading.rssPerTurnKb)} KB per turn`;
}

/**
 * Climbs the ladder until a step is not sustained; the cell is the largest N that was, with its
 * p99, and what the next step read. A peer that fails a step outright (an error) stops there too.
 */
export async function measureCapacity(peer: Peer, options: LiveTurnsOptions, log: (line: string) => void): Promise<Cell> {
  let best: LiveTurnsReading | null = null;
  let beyond = '';
  for (const liveTurns of options.ladder) {
    let reading: LiveTurnsReading;
    try {
      reading = await measureLiveTurns(peer, liveTurns, options);
    } catch (error) {
      beyond = `${whole(liveTurns)} failed: ${String(error instanceof Error ? error.message : error).split('\n')[0].slice(0, 100)}`;
      log(`${peer.name} · capacity: ${beyond}`);
      break;
    }
    log(`${peer.name} · capacity: ${describeReading(reading)}`);
    if (!sustained(reading, options)) {
      beyond = `at ${whole(liveTurns)}: p99 ${fixed(reading.p99Ms)} ms, ${whole(reading.lost)} lost`;
      break;
    }
    best = reading;
  }
  if (best === null) return { unavailable: `none sustained (${beyond || 'no step ran'})` };
  const top = best.liveTurns === options.ladder.at(-1) ? '≥ ' : '';
  return { value: best.liveTurns, text: `${top}${whole(best.liveTurns)} (p99 ${fixed(best.p99Ms)} ms${beyond ? `; ${beyond}` : ''})` };
}

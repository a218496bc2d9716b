/**
 * One peer's figures, each taken the same way for every server: start-up (three fresh starts),
 * RSS, the three HTTP routes under wrk, turns against the zero-latency model, SSE fan-out, RSS
 * after all that. A figure the peer cannot give becomes "n/a" with the reason, never a guess.
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sleep, type FakeModelChild } from '../support/children.ts';
import { HttpClient } from '../support/http-client.ts';
import { fixed, median, percentile, whole } from '../support/report.ts';
import { runWrk, type WrkResult } from '../support/wrk.ts';
import { FanoutMeter } from './fanout.ts';
import type { LoadTarget, Peer, RunningPeer } from './peer.ts';
import { FIGURES, megabytes, milliseconds, perSecond, type Cell, type Column, type FigureKey } from './table.ts';

export interface PeerBenchOptions {
  /** seconds per wrk run; each route gets `rounds` runs after a 1 s warm-up */
  seconds: number;
  rounds: number;
  /** the turn runs stop after this long (or their turn count) */
  turnSeconds: number;
  subscribers: number;
}

const STARTS = 3;
const SESSIONS_IN_LIST = 200;
const TURNS_PER_SESSION = 10;
const IN_FLIGHT = 4;
const SETTLE_MS = 1_000;
/** The streamed turn: this many words (one text delta each) at this pace. */
const FANOUT_WORDS = 600;
const FANOUT_WORDS_PER_SECOND = 200;

export async function measurePeer(peer: Peer, fake: FakeModelChild, options: PeerBenchOptions): Promise<Column> {
  const cells: Partial<Record<FigureKey, Cell>> = {};
  const scratch = mkdtempSync(join(tmpdir(), 'agentd-bench-peer-'));
  const readyTimes: number[] = [];
  let running: RunningPeer | null = null;
  try {
    for (let start = 0; start < STARTS; start++) {
      await running?.stop();
      running = null;
      const startScratch = join(scratch, `start${start}`);
      mkdirSync(startScratch);
      running = await peer.start(fake.baseUrl, startScratch);
      readyTimes.push(running.readyMs);
    }
    cells.ready = milliseconds(median(readyTimes));
    const server = running!;
    await sleep(SETTLE_MS);
    cells.rssIdle = megabytes(server.rssMb());

    const client = new HttpClient(server.url);
    try {
      Object.assign(cells, await measureRoutes(server, client, options));
      Object.assign(cells, await measureTurns(server, client, fake, options));
      cells.fanout = await figure(() => measureFanout(server, client, fake, options.subscribers));
    } finally {
      client.close();
    }
    await sleep(SETTLE_MS);
    cells.rssLoaded = megabytes(server.rssMb());
  } catch (error) {
    // A server that never got going (or died) gives no figure at all, and says why.
    const reason = String(error instanceof Error ? error.message : error).split('\n')[0].slice(0, 160);
    for (const { key } of FIGURES) cells[key] ??= { unavailable: reason };
  } finally {
    for (const [key, cell] of Object.entries(cells)) console.log(`${peer.name} · ${key}: ${'text' in cell ? cell.text : `n/a (${cell.unavailable})`}`);
    await running?.stop();
    rmSync(scratch, { recursive: true, force: true });
  }
  return { name: peer.name, cells };
}

/** A failed figure is reported with its reason; the others go on. */
async function figure(measure: () => Promise<Cell>): Promise<Cell> {
  try {
    return await measure();
  } catch (error) {
    return { unavailable: String(error instanceof Error ? error.message : error).split('\n')[0].slice(0, 160) };
  }
}

async function measureRoutes(server: RunningPeer, client: HttpClient, options: PeerBenchOptions): Promise<Partial<Record<FigureKey, Cell>>> {
  const ids: string[] = [];
  for (let index = 0; index < SESSIONS_IN_LIST; index++) ids.push(await server.createSession(client));
  const listed = await server.countListed(client);
  const wrk = async (target: LoadTarget): Promise<Cell> => {
    const url = server.url + target.path;
    await runWrk(url, { seconds: 1, postJson: target.postJson });
    const runs: WrkResult[] = [];
    for (let round = 0; round < options.rounds; round++) runs.push(await runWrk(url, { seconds: options.seconds, postJson: target.postJson }));
    const errors = runs.reduce((sum, run) => sum + run.errors, 0);
    const cell = perSecond(median(runs.map((run) => run.requestsPerSecond)));
    if (errors > 0) cell.text += ` (${errors} errors in ${whole(runs.reduce((sum, run) => sum + run.requests, 0))} requests)`;
    return cell;
  };
  const get = await figure(() => wrk(server.getSession(ids[SESSIONS_IN_LIST / 2])));
  const list = await figure(() => wrk(server.listSessions));
  if ('text' in list && listed !== 50) list.text += ` (returns ${listed})`;
  // Creating last: it grows what the list reads.
  const create = await figure(() => wrk(server.createSessionLoad));
  return { get, list, create };
}

async function measureTurns(server: RunningPeer, client: HttpClient, fake: FakeModelChild, options: PeerBenchOptions): Promise<Partial<Record<FigureKey, Cell>>> {
  const runner = await server.openTurnRunner(client);
  const drive = async (label: string, inFlight: number, maxTurns: number, seconds: number) => {
    const wallMs = new Map<string, number>();
    const deadline = performance.now() + seconds * 1000;
    const startedMs = performance.now();
    let started = 0;
    const worker = async (workerIndex: number) => {
      let sessionId = '';
      let turnsInSession = TURNS_PER_SESSION;
      while (started < maxTurns && performance.now() < deadline) {
        const number = started++;
        if (turnsInSession === TURNS_PER_SESSION) {
          sessionId = await server.createSession(client);
          turnsInSession = 0;
        }
        turnsInSession += 1;
        const marker = `bench-turn-peers-${label}-${workerIndex}-${number}`;
        const sentMs = performance.now();
        await runner.runTurn(sessionId, marker);
        wallMs.set(marker, performance.now() - sentMs);
      }
    };
    await Promise.all(Array.from({ length: inFlight }, (_, index) => worker(index)));
    return { wallMs, elapsedMs: performance.now() - startedMs };
  };
  try {
    await fake.configure(8, 0);
    await drive('warmup', 1, 20, options.turnSeconds);
    await fake.takeResponseTimes();
    const turns = await figure(async () => {
      const run = await drive('throughput', IN_FLIGHT, 5_000, options.turnSeconds);
      return perSecond((run.wallMs.size * 1000) / run.elapsedMs);
    });
    await fake.takeResponseTimes();
    const overhead = await figure(async () => {
      const run = await drive('alone', 1, 300, options.turnSeconds);
      const modelMs = await fake.takeResponseTimes();
      // What the server adds: the client's wall time less the model's own time on the turn's requests.
      const overheads = [...run.wallMs].map(([marker, wall]) => wall - (modelMs.get(marker) ?? Number.NaN)).filter(Number.isFinite);
      if (overheads.length === 0) throw new Error('the fake model saw none of the turns');
      const p50 = percentile(overheads, 0.5);
      return { value: p50, text: `${milliseconds(p50).text} (${overheads.length} turns)` } satisfies Cell;
    });
    return { turns, overhead };
  } catch (error) {
    const unavailable = String(error instanceof Error ? error.message : error).split('\n')[0].slice(0, 160);
    return { turns: { unavailable }, overhead: { unavailable } };
  } finally {
    await runner.close();
  }
}

async function measureFanout(server: RunningPeer, client: HttpClient, fake: FakeModelChild, subscribers: number): Promise<Cell> {
  const sessionId = await server.createSession(client);
  await fake.configure(FANOUT_WORDS, FANOUT_WORDS_PER_SECOND);
  let meter: FanoutMeter | null = null;
  try {
    const turn = await server.prepareStreamingTurn(client, sessionId, 'bench-turn-peers-fanout');
    meter = await FanoutMeter.connect(server.url + turn.subscribePath, subscribers, server.isOwnFrame);
    meter.startCounting();
    await turn.run();
    await meter.settle(500, 10_000);
    const reading = meter.reading();
    if (reading.frames === 0) throw new Error('no events reached the subscribers');
    const readersPerEvent = reading.frames / reading.events;
    return {
      value: reading.deliveredPerSecond,
      text: `${whole(reading.deliveredPerSecond)}/s, ${whole(reading.lost)} of ${whole(reading.events * subscribers)} lost, p99 spread ${reading.p99SpreadMs} ms`,
      // A server that hands each event to one subscriber is not fanning out; its rate is no match for one that is.
      instead: readersPerEvent < subscribers / 2 ? `not a broadcast: an event reached ${fixed(readersPerEvent)} of ${subscribers} subscribers on average` : undefined,
    };
  } finally {
    meter?.close();
    await fake.configure(8, 0);
  }
}

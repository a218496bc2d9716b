/**
 * agentd beside its peers in one run: opencode (`opencode serve`) and the LangGraph JS agent
 * server (`langgraphjs dev`), installed on demand at pinned versions into a cache outside the
 * repository (bench/peers/install.ts), each started on a free loopback port with fresh state and
 * pointed at the same zero-latency fake model, then driven with the same operations. Prints one
 * table with every peer's ratio to agentd. Never part of `npm test` or CI.
 *
 *   node --import tsx bench/peers.ts          (about 4 minutes of figures and 6 of capacity; the first run installs ≈ 550 MB)
 *
 * Knobs (environment): BENCH_SECONDS (per wrk run, default 3), BENCH_ROUNDS (wrk runs per route,
 * default 3), BENCH_TURN_SECONDS (per turn run, default 6), BENCH_SUBSCRIBERS (default 256),
 * BENCH_PEERS (which columns, default "agentd,opencode,langgraph"), BENCH_PEERS_DIR (the cache),
 * BENCH_PARTS ("figures,capacity" by default: the figures above, then the live-turn capacity),
 * BENCH_CAPACITY_LADDER (the N of live turns to climb, default "10,25,50,100,250,500,1000,2000"),
 * BENCH_DELTA_RATE and BENCH_LIVE_SECONDS (each live turn's deltas per second and length, 10 and 5).
 */
import { cpus, loadavg } from 'node:os';
import { agentdPeer } from './peers/agentd.ts';
import { measureCapacity, type LiveTurnsOptions } from './peers/capacity.ts';
import { ensurePeersInstalled } from './peers/install.ts';
import { langgraphPeer } from './peers/langgraph.ts';
import { measurePeer, type PeerBenchOptions } from './peers/measure.ts';
import { opencodePeer } from './peers/opencode.ts';
import type { Peer } from './peers/peer.ts';
import { printTable, type Column } from './peers/table.ts';
import { startFakeModel, startHello } from './support/children.ts';
import { waitForQuietMachine } from './support/quiet.ts';
import { fixed, median, runIfMain, whole } from './support/report.ts';
import { runWrk } from './support/wrk.ts';

const PEERS: Record<string, Peer> = { agentd: agentdPeer, opencode: opencodePeer, langgraph: langgraphPeer };
const QUIET_WAIT_MS = 30_000;

function optionsFromEnv(): PeerBenchOptions {
  return {
    seconds: Number(process.env.BENCH_SECONDS ?? 3),
    rounds: Number(process.env.BENCH_ROUNDS ?? 3),
    turnSeconds: Number(process.env.BENCH_TURN_SECONDS ?? 6),
    subscribers: Number(process.env.BENCH_SUBSCRIBERS ?? 256),
  };
}

function capacityOptionsFromEnv(): LiveTurnsOptions {
  return {
    deltaRate: Number(process.env.BENCH_DELTA_RATE ?? 10),
    turnSeconds: Number(process.env.BENCH_LIVE_SECONDS ?? 5),
    ladder: (process.env.BENCH_CAPACITY_LADDER ?? '10,25,50,100,250,500,1000,2000').split(',').map(Number),
    p99LimitMs: 1_000,
  };
}

function selectedPeers(): Peer[] {
  const names = (process.env.BENCH_PEERS ?? 'agentd,opencode,langgraph').split(',').map((name) => name.trim());
  if (names[0] !== 'agentd') names.unshift('agentd');
  return names.map((name) => {
    const peer = PEERS[name];
    if (!peer) throw new Error(`BENCH_PEERS: no peer "${name}" (known: ${Object.keys(PEERS).join(', ')})`);
    return peer;
  });
}

/** Waits (boundedly) for the machine to be nearly idle and prints how busy it was. */
async function quietly<T>(section: string, run: () => Promise<T>): Promise<T> {
  const busy = await waitForQuietMachine(QUIET_WAIT_MS);
  const load = loadavg().map((value) => fixed(value, 2)).join(' ');
  console.log(`# ${section}: machine ${Math.round(busy * 100)}% busy${busy > 0.1 ? ' (never got quiet)' : ''}, load average ${load}`);
  return run();
}

runIfMain(import.meta.url, async () => {
  const peers = selectedPeers();
  if (peers.some((peer) => peer !== agentdPeer)) ensurePeersInstalled();
  const options = optionsFromEnv();
  console.log(`# agentd against its peers ${new Date().toISOString()}, node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}`);
  console.log(`# wrk: median of ${options.rounds} × ${options.seconds} s per route; turns: ${options.turnSeconds} s per run; fan-out: ${options.subscribers} subscribers`);
  const parts = new Set((process.env.BENCH_PARTS ?? 'figures,capacity').split(','));
  const capacity = capacityOptionsFromEnv();
  const fake = await startFakeModel();
  const columns: Column[] = peers.map((peer) => ({ name: peer.name, cells: {} }));
  try {
    if (parts.has('figures')) await quietly('Fastify hello ceiling', async () => {
      const hello = await startHello();
      try {
        await runWrk(`${hello.url}/`, { seconds: 1 });
        const runs = [];
        for (let round = 0; round < options.rounds; round++) runs.push(await runWrk(`${hello.url}/`, options));
        console.log(`Fastify hello, 32 connections: ${whole(median(runs.map((run) => run.requestsPerSecond)))} req/s  (median of ${options.rounds} × ${options.seconds} s; ${runs[0].command.replace(/http\S+/, 'http://127.0.0.1:PORT/')})`);
      } finally {
        await hello.stop();
      }
    });
    for (const [index, peer] of peers.entries()) {
      if (parts.has('figures')) columns[index] = await quietly(peer.name, () => measurePeer(peer, fake, options));
      if (parts.has('capacity')) columns[index].cells.capacity = await quietly(`${peer.name}, live turns`, () => measureCapacity(peer, capacity, console.log));
    }
  } finally {
    await fake.stop();
  }
  printTable(columns);
});

/**
 * What a turn costs through each way in (issue 42 item 6, CONTRACT.md §22): the HTTP API through
 * the SDK, ACP over stdio (`agentd acp --url`, a child process), ACP over HTTP (/acp) and MCP
 * (/mcp `start_turn`), one turn after another in one session each, against the zero-latency fake
 * model. agentd runs in its own child (bin/agentd.js serve), so its CPU is read from /proc; the
 * caller's CPU is this process's (plus the `agentd acp` child's for acp-stdio). The ways run
 * interleaved, round after round, so a loaded machine weighs on each alike.
 *
 *   node --import tsx bench/protocols.ts
 *     BENCH_PROTOCOL_TURNS=200    measured turns per way and round (after 20 unmeasured)
 *     BENCH_PROTOCOLS=http,acp-stdio,acp-http,mcp
 *     BENCH_ROUNDS=1              rounds of all the ways; with more, the median of each way closes
 *     BENCH_WARMUP_ROUNDS=1       rounds run first and left out of the figures: in every run so far
 *                                 the first round read each way dearer than the later ones
 *     BENCH_NODE_FLAGS="--cpu-prof --cpu-prof-dir=DIR"   node options for the agentd child
 */
import { spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { client as acpClient, ndJsonStream, PROTOCOL_VERSION, type Stream } from '@agentclientprotocol/sdk';
import { createHttpStream } from '@agentclientprotocol/sdk/experimental/http-client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createClient } from '../src/client/index.ts';
import { agentdNodeFlags, modelsFor, readCpuMs, REPO_ROOT, startAgentd, startFakeModel, type AgentdChild } from './support/children.ts';
import { fixed, printFigure, runIfMain } from './support/report.ts';

const WARMUP = 20;
type Way = 'http' | 'acp-stdio' | 'acp-http' | 'mcp';

interface Figures {
  turnsPerSecond: number;
  serverCpuMsPerTurn: number;
  /** this process (the protocol's client) */
  callerCpuMsPerTurn: number;
  /** the `agentd acp` child, for acp-stdio */
  helperCpuMsPerTurn: number | null;
}

const ownCpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

/** Runs `turn` WARMUP times, then `count` times measured: turns/s and the CPU per turn of agentd and of its caller. */
async function measure(agentd: AgentdChild, count: number, turn: () => Promise<unknown>, helperPid?: number): Promise<Figures> {
  for (let index = 0; index < WARMUP; index++) await turn();
  const cpuBefore = agentd.cpuMs();
  const callerBefore = ownCpuMs();
  const helperBefore = helperPid ? readCpuMs(helperPid) : 0;
  const started = performance.now();
  for (let index = 0; index < count; index++) await turn();
  const seconds = (performance.now() - started) / 1000;
  return {
    turnsPerSecond: count / seconds,
    serverCpuMsPerTurn: (agentd.cpuMs() - cpuBefore) / count,
    callerCpuMsPerTurn: (ownCpuMs() - callerBefore) / count,
    helperCpuMsPerTurn: helperPid ? (readCpuMs(helperPid) - helperBefore) / count : null,
  };
}

async function overHttpApi(agentd: AgentdChild, count: number) {
  const api = createClient({ baseUrl: agentd.url });
  const session = await api.createSession({ body: { cwd: agentd.workspace } });
  return measure(agentd, count, async () => {
    const turn = await api.submitTurn(session.id, 'hello');
    await api.waitForTurn(turn.id);
  });
}

async function overAcp(agentd: AgentdChild, count: number, stream: Stream, helperPid?: number) {
  const connection = acpClient({ name: 'bench' }).connect(stream);
  await connection.agent.request('initialize', { protocolVersion: PROTOCOL_VERSION, clientCapabilities: {} });
  const { sessionId } = await connection.agent.request('session/new', { cwd: agentd.workspace, mcpServers: [] });
  try {
    return await measure(agentd, count, () => connection.agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text: 'hello' }] }), helperPid);
  } finally {
    connection.close();
  }
}

async function overAcpStdio(agentd: AgentdChild, count: number) {
  const child = spawn(process.execPath, [join(REPO_ROOT, 'bin', 'agentd.js'), 'acp', '--url', agentd.url], { stdio: ['pipe', 'pipe', 'inherit'] });
  try {
    const stream = ndJsonStream(Writable.toWeb(child.stdin) as WritableStream<Uint8Array>, Readable.toWeb(child.stdout) as ReadableStream<Uint8Array>);
    return await overAcp(agentd, count, stream, child.pid);
  } finally {
    child.kill();
  }
}

async function overMcp(agentd: AgentdChild, count: number) {
  const mcp = new Client({ name: 'bench', version: '1.0.0' });
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${agentd.url}/mcp`)));
  const first = (await mcp.callTool({ name: 'start_turn', arguments: { prompt: 'hello', cwd: agentd.workspace } })) as unknown as { structuredContent: { sessionId: string } };
  const { sessionId } = first.structuredContent;
  try {
    return await measure(agentd, count, () => mcp.callTool({ name: 'start_turn', arguments: { prompt: 'hello', sessionId } }));
  } finally {
    await mcp.close();
  }
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const load = () => loadavg().map((value) => value.toFixed(1)).join(' ');

function print(way: string, result: Figures, detail: string): void {
  const helper = result.helperCpuMsPerTurn === null ? '' : ` (+ agentd acp process ${fixed(result.helperCpuMsPerTurn, 2)})`;
  printFigure({ name: `turns over ${way}`, value: `${fixed(result.turnsPerSecond)} turns/s, CPU per turn: agentd server ${fixed(result.serverCpuMsPerTurn, 2)} ms, caller ${fixed(result.callerCpuMsPerTurn, 2)} ms${helper}`, detail });
}

async function main(): Promise<void> {
  const count = Number(process.env.BENCH_PROTOCOL_TURNS ?? 200);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 1);
  const warmupRounds = Number(process.env.BENCH_WARMUP_ROUNDS ?? 1);
  const ways = (process.env.BENCH_PROTOCOLS ?? 'http,acp-stdio,acp-http,mcp').split(',') as Way[];
  const fake = await startFakeModel({ words: 8 });
  const agentd = await startAgentd({ models: modelsFor(fake.baseUrl), nodeArgs: agentdNodeFlags() });
  const results = new Map<Way, Figures[]>(ways.map((way) => [way, []]));
  try {
    for (let round = 1 - warmupRounds; round <= rounds; round++) {
      for (const way of ways) {
        const result =
          way === 'http' ? await overHttpApi(agentd, count)
          : way === 'acp-stdio' ? await overAcpStdio(agentd, count)
          : way === 'acp-http' ? await overAcp(agentd, count, createHttpStream(`${agentd.url}/acp`))
          : await overMcp(agentd, count);
        if (round >= 1) results.get(way)!.push(result);
        const which = round >= 1 ? `round ${round}/${rounds}` : 'warm-up round, not counted';
        print(way, result, `${which}, ${count} sequential turns in one session, 8-word replies from the zero-latency fake; load average ${load()}`);
      }
    }
    if (rounds > 1) {
      for (const [way, runs] of results) {
        const of = (pick: (figures: Figures) => number | null) => median(runs.map((run) => pick(run) ?? 0));
        print(way, { turnsPerSecond: of((run) => run.turnsPerSecond), serverCpuMsPerTurn: of((run) => run.serverCpuMsPerTurn), callerCpuMsPerTurn: of((run) => run.callerCpuMsPerTurn), helperCpuMsPerTurn: runs[0].helperCpuMsPerTurn === null ? null : of((run) => run.helperCpuMsPerTurn) }, `median of ${rounds} interleaved rounds`);
      }
    }
  } finally {
    await agentd.stop();
    await fake.stop();
  }
}

runIfMain(import.meta.url, main);

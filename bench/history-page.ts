/**
 * The history-page figure of docs/PERFORMANCE.md: latency of GET /v1/sessions/:id/history in a
 * 10-turn and a 10,000-turn session, and their ratio (target ≤ 1.3). Both pages hold 10 turns
 * (limit=10), so the ratio shows what the session's length costs, not the page's size. A cursor
 * page from the middle of the long session and a default page (limit 50) are measured too.
 *
 *   node --import tsx bench/history-page.ts                 (SQLite in a temporary state dir)
 *   BENCH_DATABASE_URL=postgres://… node --import tsx bench/history-page.ts
 *   BENCH_REQUESTS=2000 …                                    (requests per figure, default 1000)
 *
 * The server runs in this process on a free loopback port; requests go one at a time over one
 * keep-alive connection, alternating between the sessions so drift affects both alike.
 */
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig } from '../src/config/config.ts';
import { startServer, type RunningServer } from '../src/server.ts';
import type { HistoryEntry } from '../src/domain/history-entry.ts';
import { insertHistoryEntry } from '../src/store/history.ts';
import { fixed, median, percentile, printFigure, runIfMain } from './support/report.ts';

export interface HistoryPageOptions {
  /** timed requests per page kind */
  requests: number;
  /** PostgreSQL instead of a temporary SQLite file */
  databaseUrl: string | null;
}

export function historyPageOptionsFromEnv(): HistoryPageOptions {
  return { requests: Number(process.env.BENCH_REQUESTS ?? 1000), databaseUrl: process.env.BENCH_DATABASE_URL ?? null };
}

const WARM_UP = 200;
const SHORT = 10;
const LONG = 10_000;

const MODELS = {
  defaultModel: 'bench',
  connections: [{ id: 'none', provider: 'none', dialect: 'openai-responses', baseUrl: 'http://127.0.0.1:9/v1', apiKeyEnv: null }],
  models: [{ id: 'bench', connection: 'none', transportModel: 'bench', contextWindow: 128_000 }],
};

/** A turn of realistic shape: a prompt, reasoning, a tool round trip and an answer (about 2 KB). */
function benchTurn(index: number): HistoryEntry {
  const items = [
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: `Please look at module ${index} and fix the failing test.` }] },
    { type: 'reasoning', summary: [{ type: 'summary_text', text: 'Reading the module first. '.repeat(8) }], encrypted_content: 'gAAAA'.repeat(60) },
    { type: 'function_call', call_id: `call_${index}`, name: 'read_file', arguments: JSON.stringify({ path: `src/module-${index}.ts` }) },
    { type: 'function_call_output', call_id: `call_${index}`, output: 'export function answer() {\n  return 42;\n}\n'.repeat(10) },
    { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Fixed: the test expected 42 and now gets it. '.repeat(4) }] },
  ];
  return {
    index,
    turnId: null,
    at: new Date(Date.UTC(2026, 0, 1) + index * 1000).toISOString(),
    userText: `Please look at module ${index} and fix the failing test.`,
    assistantText: 'Fixed: the test expected 42 and now gets it.',
    error: null,
    responseId: `resp_${index}`,
    effect: 'append',
    items,
    displayItems: items,
    usage: { input: 1200, output: 300, cached: 800 },
    providerTelemetry: [{ duration_ms: 1500, api_duration_ms: 1200, cost_usd: null, stop_reason: 'end_turn', provider_turns: 2, structured_output: null, models: {} }],
  };
}

async function fill(server: RunningServer, sessionId: string, turns: number): Promise<void> {
  for (let from = 0; from < turns; from += 500) {
    await server.store.db.transaction().execute(async (trx) => {
      for (let index = from; index < Math.min(turns, from + 500); index++) await insertHistoryEntry(trx, sessionId, benchTurn(index));
    });
  }
}

function get(agent: Agent, url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    request(url, { agent }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
      response.on('error', reject);
    })
      .on('error', reject)
      .end();
  });
}

function post(agent: Agent, url: string, body: unknown): Promise<any> {
  return new Promise((resolve, reject) => {
    const payload = JSON.stringify(body);
    const req = request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('end', () => resolve(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
    });
    req.on('error', reject);
    req.end(payload);
  });
}

async function timeOnce(agent: Agent, url: string): Promise<number> {
  const started = performance.now();
  const response = await get(agent, url);
  const elapsed = performance.now() - started;
  if (response.status !== 200) throw new Error(`${url}: HTTP ${response.status} ${response.body.slice(0, 200)}`);
  return elapsed;
}

const ms = (value: number) => `${fixed(value, 3)} ms`;

/** Measures and prints the history-page figures. */
export async function benchHistoryPage(options: HistoryPageOptions): Promise<void> {
  const stateDir = mkdtempSync(join(tmpdir(), 'agentd-bench-history-'));
  const workspace = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-bench-ws-')));
  writeFileSync(join(stateDir, 'models.json'), JSON.stringify(MODELS));
  const databaseUrl = options.databaseUrl;
  const args = ['--port', '0', '--state-dir', stateDir, '--workspace-root', workspace, '--models-file', join(stateDir, 'models.json')];
  if (databaseUrl) args.push('--database-url', databaseUrl);
  const server = await startServer(await loadConfig(args, {}, workspace), {}, pino({ level: 'silent' }));
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const short = await post(agent, `${server.url}/v1/sessions`, { title: 'short' });
    const long = await post(agent, `${server.url}/v1/sessions`, { title: 'long' });
    await fill(server, short.id, SHORT);
    await fill(server, long.id, LONG);
    const urls = {
      short: `${server.url}/v1/sessions/${short.id}/history?limit=${SHORT}`,
      long: `${server.url}/v1/sessions/${long.id}/history?limit=${SHORT}`,
      middle: `${server.url}/v1/sessions/${long.id}/history?limit=${SHORT}&cursor=${LONG / 2}`,
      fifty: `${server.url}/v1/sessions/${long.id}/history`,
    };
    const samples = { short: [] as number[], long: [] as number[], middle: [] as number[], fifty: [] as number[] };
    for (let round = 0; round < WARM_UP + options.requests; round++) {
      for (const name of ['short', 'long', 'middle', 'fifty'] as const) {
        const elapsed = await timeOnce(agent, urls[name]);
        if (round >= WARM_UP) samples[name].push(elapsed);
      }
    }
    const backend = databaseUrl ? 'postgres' : 'sqlite';
    const figure = (label: string, name: keyof typeof samples) =>
      printFigure({ name: `history page (${backend}), ${label}`, value: `median ${ms(median(samples[name]))}, p90 ${ms(percentile(samples[name], 0.9))}` });
    figure(`${SHORT}-turn session, newest ${SHORT}`, 'short');
    figure(`${LONG}-turn session, newest ${SHORT}`, 'long');
    figure(`${LONG}-turn session, ${SHORT} below cursor ${LONG / 2}`, 'middle');
    figure(`${LONG}-turn session, newest 50 (default limit)`, 'fifty');
    const ratio = median(samples.long) / median(samples.short);
    printFigure({ name: `history page (${backend}), ${LONG} vs ${SHORT} turns`, value: `ratio ${fixed(ratio, 2)}`, target: '≤ 1.3', met: ratio <= 1.3, detail: 'median latency, 10-turn pages' });
  } finally {
    agent.destroy();
    await server.close();
    rmSync(stateDir, { recursive: true, force: true });
    rmSync(workspace, { recursive: true, force: true });
  }
}

runIfMain(import.meta.url, () => benchHistoryPage(historyPageOptionsFromEnv()));

/**
 * Every Node 24 / Node 20 pair of docs/BENCHMARKS.md ("Rerunning every figure on Node 24 and Node
 * 20"), back to back, then one summary table: each figure line a benchmark printed, Node 24 beside
 * Node 20. Meant for one run on a quiet machine; it prints its estimated duration first.
 *
 *   node --import tsx bench/node-pairs.ts
 *
 * Knobs (environment):
 *   BENCH_PAIRS_SHORT=1   every piece with tiny counts and no wait for a quiet machine (about 8
 *                         minutes): checks that each piece starts and prints, measures nothing
 *   BENCH_PAIRS=a,b       only the pieces named (names as in the table it prints first)
 *   BENCH_NODE20_ROOT     the Node 20 build (default /tmp/agentd-node20, built as BENCHMARKS.md says)
 *   BENCH_NODE20_NODE     Node 20's binary (default /usr/bin/node)
 *   BENCH_PAIRS_LOG       where each piece's whole output goes (default a temporary directory)
 *   BENCH_DATABASE_URL    PostgreSQL for the history page's second pair (default the local server)
 *
 * The benchmarks that run agentd as a child run from this checkout on Node 24 with
 * BENCH_AGENTD_ROOT/BENCH_AGENTD_NODE naming the Node 20 build (only the server changes); those that
 * run agentd's code in their own process run from each checkout on its own node.
 * bench/peers.ts and bench/turn-profile.ts are not pairs and are not run here.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, mkdtempSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from './support/children.ts';

const NODE24 = process.execPath;
const NODE20 = process.env.BENCH_NODE20_NODE || '/usr/bin/node';
const ROOT20 = process.env.BENCH_NODE20_ROOT || '/tmp/agentd-node20';
const SHORT = process.env.BENCH_PAIRS_SHORT === '1';
const DATABASE_URL = process.env.BENCH_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/bench_history';
const LOG_DIR = process.env.BENCH_PAIRS_LOG || mkdtempSync(join(tmpdir(), 'agentd-node-pairs-'));

/** Tiny counts for the short mode; every benchmark reads its own (see each file's header). */
const SHORT_ENV: Record<string, string> = {
  BENCH_SECONDS: '1', BENCH_ROUNDS: '1', BENCH_TURNS: '200', BENCH_MEMORY_TURNS: '500', BENCH_STARTS: '1',
  BENCH_RUNS: '3', BENCH_REQUESTS: '50', BENCH_ITERATIONS: '2000', BENCH_TENANTS: '2', BENCH_LARGE_TURNS: '1',
  BENCH_LARGE_MB: '1', BENCH_EVENT_RATE: '100', LOAD_SESSIONS: '20', LOAD_SUBSCRIBERS: '40', BENCH_QUIET_WAIT_MS: '0',
};

interface Side {
  node: string;
  cwd: string;
  env?: Record<string, string>;
}

interface Piece {
  name: string;
  /** bench/<file>.ts */
  file: string;
  /** the Node 24 side, then the Node 20 side; one side only when the benchmark alternates both itself */
  sides: { n24: Side; n20?: Side };
  /** estimated minutes of the whole piece (both sides) at default counts on a quiet machine */
  minutes: number;
  short_minutes: number;
}

const onNode24: Side = { node: NODE24, cwd: REPO_ROOT };
const serverOnNode20: Side = { node: NODE24, cwd: REPO_ROOT, env: { BENCH_AGENTD_ROOT: ROOT20, BENCH_AGENTD_NODE: NODE20 } };
const inProcessOnNode20: Side = { node: NODE20, cwd: ROOT20 };

const childPair = (name: string, minutes: number, shortMinutes: number): Piece => ({ name, file: name, sides: { n24: onNode24, n20: serverOnNode20 }, minutes, short_minutes: shortMinutes });
const inProcessPair = (name: string, minutes: number, shortMinutes: number, env: Record<string, string> = {}, file = name): Piece => ({
  name,
  file,
  sides: { n24: { ...onNode24, env }, n20: { ...inProcessOnNode20, env } },
  minutes,
  short_minutes: shortMinutes,
});

const PIECES: Piece[] = [
  // figures 1-3: one run that alternates Node 24 (this checkout) and Node 20 (the "before") round by round
  { name: 'http-routes', file: 'http-routes', sides: { n24: { ...onNode24, env: { BENCH_BEFORE_ROOT: ROOT20, BENCH_BEFORE_NODE: NODE20 } } }, minutes: 3, short_minutes: 0.5 },
  childPair('turns', 1.5, 0.4),
  childPair('sse-fanout', 1, 0.3),
  childPair('subscriber-churn', 1, 0.3),
  childPair('memory', 5, 2),
  childPair('startup', 0.5, 0.2),
  childPair('large-inputs', 1, 0.2),
  childPair('load-held', 2, 0.4),
  // in process: the harness itself on Node 20 for the Node 20 side
  { name: 'store-statements', file: 'store-statements', sides: { n24: onNode24, n20: { node: NODE20, cwd: REPO_ROOT, env: { BENCH_AGENTD_ROOT: ROOT20 } } }, minutes: 1, short_minutes: 0.3 },
  inProcessPair('history-page', 1, 0.3),
  // a database for each side: the older build refuses one migrated by the newer
  {
    name: 'history-page-pg',
    file: 'history-page',
    sides: { n24: { ...onNode24, env: { BENCH_DATABASE_URL: DATABASE_URL } }, n20: { ...inProcessOnNode20, env: { BENCH_DATABASE_URL: `${DATABASE_URL}_node20` } } },
    minutes: 1.5,
    short_minutes: 0.4,
  },
  inProcessPair('provider-transport', 1, 0.3),
  inProcessPair('telemetry-recording', 0.5, 0.2),
  inProcessPair('sandbox', 1.5, 0.3),
  inProcessPair('confinement', 1, 0.3),
  inProcessPair('tenants', 3, 0.6),
  // a tenant runtime's start, hundreds of times: alternates this checkout and the Node 20 build itself
  { name: 'tenant-reopen', file: 'tenant-reopen', sides: { n24: { ...onNode24, env: { BENCH_BEFORE_ROOT: ROOT20, BENCH_BEFORE_NODE: NODE20 } } }, minutes: 1.5, short_minutes: 0.4 },
];

interface Result {
  piece: string;
  side: 'n24' | 'n20' | 'both';
  status: number | null;
  seconds: number;
  figures: Map<string, string>;
}

/** A benchmark's figure lines are `Name: value  [target …]  (detail)`; the value is what the table shows. */
function figuresOf(output: string): Map<string, string> {
  const figures = new Map<string, string>();
  for (const line of output.split('\n')) {
    const match = /^([A-Za-z][^#]{2,90}?): (.+)$/.exec(line.trim());
    if (!match) continue;
    const value = match[2].split(/ {2}[[(]/)[0].trim();
    const verdict = /\[target [^\]]*: (met|MISSED)\]/.exec(match[2]);
    figures.set(match[1], verdict ? `${value} (${verdict[1]})` : value);
  }
  return figures;
}

/** The history page's PostgreSQL pair needs its database; it may exist already (psql says so and nothing changes). */
function ensureDatabase(url: string): void {
  const name = new URL(url).pathname.slice(1);
  const admin = new URL(url);
  admin.pathname = '/postgres';
  spawnSync('psql', [admin.href, '-c', `CREATE DATABASE "${name}"`], { stdio: 'ignore' });
}

async function runSide(piece: Piece, label: Result['side'], side: Side): Promise<Result> {
  if (side.env?.BENCH_DATABASE_URL) ensureDatabase(side.env.BENCH_DATABASE_URL);
  const log = join(LOG_DIR, `${piece.name}.${label}.log`);
  const out = createWriteStream(log);
  const startedAt = performance.now();
  const env = { ...process.env, ...(SHORT ? SHORT_ENV : {}), ...side.env };
  const child = spawn(side.node, ['--import', 'tsx', join('bench', `${piece.file}.ts`)], { cwd: side.cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const collect = (chunk: Buffer) => {
    output += chunk.toString('utf8');
    out.write(chunk);
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  const status = await new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  out.end();
  const seconds = (performance.now() - startedAt) / 1000;
  const figures = figuresOf(output);
  console.log(`  ${piece.name} on ${label === 'both' ? 'Node 24 and Node 20, alternating' : label === 'n24' ? 'Node 24' : 'Node 20'}: ${status === 0 ? 'ok' : `EXIT ${status}`}, ${figures.size} figures, ${seconds.toFixed(0)} s  (${log})`);
  if (status !== 0) console.log(output.split('\n').slice(-8).map((line) => `    | ${line}`).join('\n'));
  return { piece: piece.name, side: label, status, seconds, figures };
}

function cell(text: string | undefined): string {
  return (text ?? '—').replaceAll('|', '\\|');
}

function printSummary(results: Result[], totalSeconds: number): void {
  console.log(`\n# Node 24 (${process.version}) against Node 20 (${ROOT20} on ${NODE20}), ${SHORT ? 'SHORT mode (counts too small to read)' : 'default counts'}; ${(totalSeconds / 60).toFixed(1)} min; load average at the end ${loadavg().map((value) => value.toFixed(2)).join(' ')}`);
  console.log('| Piece | Figure | Node 24 | Node 20 |');
  console.log('|---|---|---|---|');
  for (const piece of PIECES) {
    const mine = results.filter((result) => result.piece === piece.name);
    if (mine.length === 0) continue;
    const n24 = mine.find((result) => result.side !== 'n20');
    const n20 = mine.find((result) => result.side === 'n20');
    const failed = mine.filter((result) => result.status !== 0).map((result) => result.side);
    if (failed.length > 0) console.log(`| ${piece.name} | failed (${failed.join(', ')}), see its log | | |`);
    if (n24?.side === 'both') {
      // http-routes prints each figure for both builds itself, Node 20's as "<figure> (before)"
      for (const [name, value] of n24.figures) {
        if (name.endsWith(' (before)')) continue;
        console.log(`| ${piece.name} | ${cell(name)} | ${cell(value)} | ${cell(n24.figures.get(`${name} (before)`))} |`);
      }
      continue;
    }
    const names = [...new Set([...(n24?.figures.keys() ?? []), ...(n20?.figures.keys() ?? [])])];
    for (const name of names) console.log(`| ${piece.name} | ${cell(name)} | ${cell(n24?.figures.get(name))} | ${cell(n20?.figures.get(name))} |`);
  }
}

async function main(): Promise<void> {
  const only = process.env.BENCH_PAIRS?.split(',').map((name) => name.trim()).filter(Boolean);
  const pieces = only ? PIECES.filter((piece) => only.includes(piece.name)) : PIECES;
  if (only && pieces.length !== only.length) throw new Error(`unknown piece in BENCH_PAIRS; pieces: ${PIECES.map((piece) => piece.name).join(', ')}`);
  if (!existsSync(join(ROOT20, 'dist'))) throw new Error(`no Node 20 build at ${ROOT20} (docs/BENCHMARKS.md, "Rerunning every figure on Node 24 and Node 20", says how to make one)`);
  mkdirSync(LOG_DIR, { recursive: true });
  const estimate = pieces.reduce((sum, piece) => sum + (SHORT ? piece.short_minutes : piece.minutes), 0);
  console.log(`# ${pieces.length} pieces: ${pieces.map((piece) => piece.name).join(', ')}`);
  console.log(`# estimated ${estimate.toFixed(0)} minutes on a quiet machine${SHORT ? ' (short mode)' : ''}; logs in ${LOG_DIR}; load average now ${loadavg().map((value) => value.toFixed(2)).join(' ')}`);
  const startedAt = performance.now();
  const results: Result[] = [];
  for (const piece of pieces) {
    if (!piece.sides.n20) {
      results.push(await runSide(piece, 'both', piece.sides.n24));
      continue;
    }
    results.push(await runSide(piece, 'n24', piece.sides.n24));
    results.push(await runSide(piece, 'n20', piece.sides.n20));
  }
  printSummary(results, (performance.now() - startedAt) / 1000);
  if (results.some((result) => result.status !== 0)) process.exitCode = 1;
}

await main();

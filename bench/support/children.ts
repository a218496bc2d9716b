/**
 * The processes a benchmark measures, each in its own child so the load generator never shares
 * their event loop: agentd itself (through bin/agentd.js, exactly as users start it), a bare
 * Fastify hello server (the ceiling), and a zero-latency fake model.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, readdirSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { HttpClient } from './http-client.ts';

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const STARTUP_TIMEOUT_MS = 20_000;

export interface Child {
  readonly process: ChildProcess;
  readonly pid: number;
  /** http://127.0.0.1:PORT */
  readonly url: string;
  readonly port: number;
  /** Resident set size in MB, read from /proc. */
  rssMb(): number;
  /** CPU time (user + system) used so far in ms, read from /proc (10 ms resolution). */
  cpuMs(): number;
  stop(): Promise<void>;
}

export interface AgentdOptions {
  /** extra `agentd serve` arguments (limits, --log-level …) */
  args?: string[];
  /** the models file; by default one model whose provider cannot be reached */
  models?: unknown;
  /** node options for the child, e.g. ['--cpu-prof', '--cpu-prof-dir=/tmp/prof'] */
  nodeArgs?: string[];
  /** another checkout to run, for before/after comparisons (default: agentdRoot()) */
  root?: string;
  /** the node binary that runs agentd (default: agentdNode()) */
  node?: string;
}

export interface AgentdChild extends Child {
  readonly stateDir: string;
  readonly workspace: string;
  /** ms from spawn until the "listening on" line was seen */
  readonly msToListening: number;
}

/** BENCH_AGENTD_ROOT: another checkout to run as agentd (a before/after pair on one machine); this one by default. */
export function agentdRoot(): string {
  return process.env.BENCH_AGENTD_ROOT || REPO_ROOT;
}

/**
 * BENCH_AGENTD_NODE: the node binary that runs agentd, e.g. /usr/bin/node (Node 20) with
 * BENCH_AGENTD_ROOT naming a checkout built on it; the node running the benchmark by default. The
 * load generators, the fake model and the hello ceiling stay on the benchmark's own node, so two
 * runs differ only in the server's runtime.
 */
export function agentdNode(): string {
  return process.env.BENCH_AGENTD_NODE || process.execPath;
}

/** BENCH_NODE_FLAGS: node options for the agentd child, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof". */
export function agentdNodeFlags(): string[] {
  return (process.env.BENCH_NODE_FLAGS ?? '').split(/\s+/).filter(Boolean);
}

export function modelsFor(fakeBaseUrl: string) {
  return {
    defaultModel: 'bench',
    connections: [{ id: 'fake', provider: 'fake', dialect: 'openai-responses', baseUrl: fakeBaseUrl, apiKeyEnv: null }],
    models: [{ id: 'bench', connection: 'fake', transportModel: 'fake-model' }],
  };
}

/**
 * bin/agentd.js runs the bundle in dist/; a benchmark of stale JavaScript would measure the wrong
 * code, so dist/ is rebuilt (tsc, the contract and the bundle, as `npm run build` does) when any
 * source is newer than it.
 */
export function ensureBuilt(root = REPO_ROOT): void {
  const newestSource = newestMtime(join(root, 'src'));
  const dist = join(root, 'dist');
  // an older checkout (BENCH_AGENTD_ROOT) may predate the contract file or the bundle
  const steps = ['emit-contract.mjs', 'bundle.mjs'].filter((step) => existsSync(join(root, 'scripts', step)));
  const entry = steps.includes('bundle.mjs') ? join(dist, 'bundle', 'agentd.js') : join(dist, 'cli', 'main.js');
  if (existsSync(entry) && newestMtime(dist) >= newestSource) return;
  execFileSync(join(root, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
  for (const step of steps) execFileSync(process.execPath, [join(root, 'scripts', step)], { cwd: root, stdio: 'inherit' });
}

function newestMtime(directory: string): number {
  let newest = 0;
  for (const entry of readdirSync(directory, { withFileTypes: true })) {
    const path = join(directory, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

/** Starts `node bin/agentd.js serve --port 0` on a fresh SQLite state dir; its output goes to a log file. */
export async function startAgentd(options: AgentdOptions = {}): Promise<AgentdChild> {
  const root = options.root ?? agentdRoot();
  ensureBuilt(root);
  const stateDir = mkdtempSync(join(tmpdir(), 'agentd-bench-state-'));
  const workspace = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-bench-ws-')));
  const modelsFile = join(stateDir, 'models.json');
  writeFileSync(modelsFile, JSON.stringify(options.models ?? modelsFor('http://127.0.0.1:9/v1')));
  const args = [
    ...(options.nodeArgs ?? []),
    join(root, 'bin', 'agentd.js'),
    'serve', '--port', '0', '--state-dir', stateDir, '--workspace-root', workspace, '--models-file', modelsFile,
    ...(options.args ?? []),
  ];
  const spawnedAt = performance.now();
  const child = await spawnListening(args, /agentd listening on (http:\/\/\S+)/, join(stateDir, 'agentd.log'), options.node ?? agentdNode());
  const msToListening = performance.now() - spawnedAt;
  return {
    ...child,
    stateDir,
    workspace,
    msToListening,
    async stop() {
      await child.stop();
      rmSync(stateDir, { recursive: true, force: true });
      rmSync(workspace, { recursive: true, force: true });
    },
  };
}

/** The ceiling: Fastify with one JSON route and nothing else, plain JavaScript in its own process. */
export function startHello(): Promise<Child> {
  return spawnScript('hello-server.mjs', /hello listening on (http:\/\/\S+)/);
}

/**
 * The ceiling of the turn figure: the contract's exchanges for a turn and nothing else, in bare
 * node:http and better-sqlite3, against the given fake model (turn-ceiling-server.mjs).
 */
export function startTurnCeiling(fake: FakeModelChild): Promise<Child> {
  return spawnScript('turn-ceiling-server.mjs', /turn ceiling listening on (http:\/\/\S+)/, [fake.baseUrl]);
}

export interface FakeModelChild extends Child {
  /** the base URL to put in a models file */
  readonly baseUrl: string;
  /** Response times (ms) by turn marker since the last call; the fake forgets them once taken. */
  takeResponseTimes(): Promise<Map<string, number>>;
  /** Words (text deltas) per reply, and frames per second per reply (0 = all at once). */
  configure(words: number, framesPerSecond?: number): Promise<void>;
}

/** The zero-latency fake model of fake-model-server.ts; `words` text deltas per reply. */
export async function startFakeModel(options: { words?: number; framesPerSecond?: number } = {}): Promise<FakeModelChild> {
  const args = ['--words', String(options.words ?? 8), '--frames-per-second', String(options.framesPerSecond ?? 0)];
  const child = await spawnScript('fake-model-server.ts', /fake model listening on (http:\/\/\S+)/, args);
  const client = new HttpClient(child.url, 1);
  return {
    ...child,
    baseUrl: `${child.url}/v1`,
    async takeResponseTimes() {
      const stats = await client.expect(200, 'GET', '/stats');
      return new Map(Object.entries(stats.responseMs as Record<string, number>));
    },
    async configure(words, framesPerSecond = 0) {
      await client.expect(204, 'POST', '/config', { words, framesPerSecond });
    },
    async stop() {
      client.close();
      await child.stop();
    },
  };
}

/** A script of bench/support run in a child (TypeScript through tsx); it prints `… listening on URL`. */
export async function spawnScript(name: string, pattern: RegExp, scriptArgs: string[] = []): Promise<Child> {
  const logDir = mkdtempSync(join(tmpdir(), 'agentd-bench-child-'));
  const loader = name.endsWith('.ts') ? ['--import', 'tsx'] : [];
  const args = [...loader, join(REPO_ROOT, 'bench', 'support', name), ...scriptArgs];
  const child = await spawnListening(args, pattern, join(logDir, 'child.log'));
  return {
    ...child,
    async stop() {
      await child.stop();
      rmSync(logDir, { recursive: true, force: true });
    },
  };
}

/**
 * Spawns node with stdout and stderr going to a file (never a pipe the parent must drain under load)
 * and waits for the line that carries the URL.
 */
export async function spawnListening(nodeArgs: string[], pattern: RegExp, logFile: string, node = process.execPath): Promise<Child> {
  mkdirSync(dirname(logFile), { recursive: true });
  const fd = openSync(logFile, 'w');
  const child = spawn(node, nodeArgs, { cwd: REPO_ROOT, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  let exited: string | null = null;
  child.once('exit', (code, signal) => (exited = `exited with ${signal ?? `code ${code}`}`));
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  let url: string | null = null;
  while (url === null) {
    const match = pattern.exec(readFileSync(logFile, 'utf8'));
    if (match) url = match[1];
    else if (exited || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`child ${nodeArgs.join(' ')} did not start (${exited ?? 'timed out'}):\n${readFileSync(logFile, 'utf8').slice(-2000)}`);
    } else await sleep(2);
  }
  const pid = child.pid!;
  return {
    process: child,
    pid,
    url,
    port: Number(new URL(url).port),
    rssMb: () => readRssMb(pid),
    cpuMs: () => readCpuMs(pid),
    stop: () => stopChild(child),
  };
}

export function readRssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kilobytes = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? Number.NaN);
  return kilobytes / 1024;
}

export function readCpuMs(pid: number): number {
  // Fields after the parenthesised command name: state is the first, utime the 12th, stime the 13th.
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  const ticksPerSecond = 100;
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / ticksPerSecond;
}

/** SIGTERM, then SIGKILL if the child has not gone within five seconds. */
export function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Runs wrk (apt-get install wrk) against a loopback URL and reads its summary. */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface WrkOptions {
  connections?: number;
  threads?: number;
  seconds: number;
  /** a POST with this JSON body (sent with Content-Type application/json) */
  postJson?: unknown;
  /** a Lua script of its own instead (it may hold credentials: written 0600, removed afterwards) */
  luaScript?: string;
  /** ask wrk for its latency distribution and read p99Ms */
  latency?: boolean;
}

export interface WrkResult {
  requestsPerSecond: number;
  requests: number;
  /** responses outside 2xx/3xx plus socket errors: must be 0 for a fair figure */
  errors: number;
  /** the command line, for docs/BENCHMARKS.md (temporary script paths shortened) */
  command: string;
  /** with `latency`: the 99th percentile in ms */
  p99Ms?: number;
}

export async function runWrk(url: string, options: WrkOptions): Promise<WrkResult> {
  if (!/^http:\/\/127\.0\.0\.1:\d+\//.test(url)) throw new Error(`wrk runs against loopback only, not ${url}`);
  const args = ['-t', String(options.threads ?? 1), '-c', String(options.connections ?? 32), '-d', `${options.seconds}s`];
  let scriptDir: string | null = null;
  if (options.latency) args.push('--latency');
  const lua = options.luaScript ?? (options.postJson !== undefined ? postScript(JSON.stringify(options.postJson)) : null);
  if (lua !== null) {
    scriptDir = mkdtempSync(join(tmpdir(), 'agentd-bench-wrk-'));
    const script = join(scriptDir, options.luaScript ? 'script.lua' : 'post.lua');
    writeFileSync(script, lua, { mode: 0o600 });
    args.push('-s', script);
  }
  args.push(url);
  try {
    const { stdout } = await run('wrk', args, { timeout: (options.seconds + 30) * 1000 });
    return parseSummary(stdout, `wrk ${args.join(' ').replace(/\S*\/(post|script)\.lua/, '$1.lua')}`);
  } finally {
    if (scriptDir) rmSync(scriptDir, { recursive: true, force: true });
  }
}

function postScript(body: string): string {
  return [
    'wrk.method = "POST"',
    `wrk.body = ${JSON.stringify(body)}`,
    'wrk.headers["Content-Type"] = "application/json"',
    '',
  ].join('\n');
}

function parseSummary(stdout: string, command: string): WrkResult {
  const requestsPerSecond = Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1]);
  const requests = Number(/(\d+) requests in/.exec(stdout)?.[1]);
  if (!Number.isFinite(requestsPerSecond) || !Number.isFinite(requests)) throw new Error(`cannot read wrk output:\n${stdout}`);
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(stdout)?.[1] ?? 0);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(stdout);
  const socketErrors = socket ? socket.slice(1).reduce((sum, value) => sum + Number(value), 0) : 0;
  return { requestsPerSecond, requests, errors: non2xx + socketErrors, command, p99Ms: percentile99Ms(stdout) };
}

/** "99%   12.34ms" of `--latency`'s distribution, in ms; undefined without it. */
function percentile99Ms(stdout: string): number | undefined {
  const match = /^\s*99%\s+([\d.]+)(us|ms|s)\s*$/m.exec(stdout);
  if (!match) return undefined;
  const scale = { us: 0.001, ms: 1, s: 1000 }[match[2] as 'us' | 'ms' | 's'];
  return Number(match[1]) * scale;
}

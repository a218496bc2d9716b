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
}

export interface WrkResult {
  requestsPerSecond: number;
  requests: number;
  /** responses outside 2xx/3xx plus socket errors: must be 0 for a fair figure */
  errors: number;
  /** the command line, for docs/BENCHMARKS.md (temporary script paths shortened) */
  command: string;
}

export async function runWrk(url: string, options: WrkOptions): Promise<WrkResult> {
  if (!/^http:\/\/127\.0\.0\.1:\d+\//.test(url)) throw new Error(`wrk runs against loopback only, not ${url}`);
  const args = ['-t', String(options.threads ?? 1), '-c', String(options.connections ?? 32), '-d', `${options.seconds}s`];
  let scriptDir: string | null = null;
  if (options.postJson !== undefined) {
    scriptDir = mkdtempSync(join(tmpdir(), 'agentd-bench-wrk-'));
    const script = join(scriptDir, 'post.lua');
    writeFileSync(script, postScript(JSON.stringify(options.postJson)));
    args.push('-s', script);
  }
  args.push(url);
  try {
    const { stdout } = await run('wrk', args, { timeout: (options.seconds + 30) * 1000 });
    return parseSummary(stdout, `wrk ${args.join(' ').replace(/\S*post\.lua/, 'post.lua')}`);
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
  return { requestsPerSecond, requests, errors: non2xx + socketErrors, command };
}

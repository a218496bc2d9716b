/**
 * A helper program of the runner's start-up, run to its end without blocking the event loop (as
 * spawnSync would), so the start-up's independent steps overlap: its exit status and stderr.
 */
import { spawn } from 'node:child_process';

export interface RunOptions {
  env: NodeJS.ProcessEnv;
  timeoutMs: number;
  /** written to its stdin, which is then closed */
  input?: string;
  uid?: number;
  gid?: number;
  /** keep its stdout (else discarded) */
  stdout?: boolean;
}

export interface RunResult {
  status: number | null;
  stderr: string;
  /** empty unless asked for */
  stdout: string;
  error?: Error;
}

export function runToEnd(command: string, args: readonly string[], options: RunOptions): Promise<RunResult> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: [options.input === undefined ? 'ignore' : 'pipe', options.stdout ? 'pipe' : 'ignore', 'pipe'], env: options.env, timeout: options.timeoutMs, uid: options.uid, gid: options.gid });
    let stderr = '';
    let stdout = '';
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    let error: Error | undefined;
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.once('error', (failure) => (error = failure));
    child.once('close', (status) => resolve({ status, stderr, stdout, error }));
    if (options.input !== undefined) child.stdin!.on('error', () => {}).end(options.input);
  });
}

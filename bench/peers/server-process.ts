/**
 * A peer server as its users start it: a command with its own process group (launchers such as
 * `langgraphjs dev` run the server in a grandchild), output to a log file, ready once a URL answers
 * 200. RSS counts the whole tree, since that is what running the peer costs.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync, readdirSync } from 'node:fs';
import { get as httpGet } from 'node:http';
import { createServer } from 'node:net';
import { readRssMb, sleep } from '../support/children.ts';

const READY_TIMEOUT_MS = 60_000;
const PROBE_TIMEOUT_MS = 1_000;

/** Process groups still running: a benchmark stopped by a signal must not leave servers behind. */
const liveGroups = new Set<number>();
process.once('exit', () => liveGroups.forEach((pid) => signalGroup(pid, 'SIGKILL')));
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => process.exit(130));

export interface ServerProcess {
  readonly pid: number;
  /** spawn → first 200 from the ready URL */
  readonly readyMs: number;
  /** VmRSS of the process and all its descendants, MB */
  rssMb(): number;
  stop(): Promise<void>;
}

export interface ServerCommand {
  command: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
  logFile: string;
  /** polled until it answers 200 */
  readyUrl: string;
}

export async function startServerProcess(server: ServerCommand): Promise<ServerProcess> {
  const log = openSync(server.logFile, 'w');
  const spawnedAt = performance.now();
  const child = spawn(server.command, server.args, { cwd: server.cwd, env: server.env, stdio: ['ignore', log, log], detached: true });
  closeSync(log);
  liveGroups.add(child.pid!);
  const stop = () => stopGroup(child);
  try {
    await waitUntilReady(child, server);
  } catch (error) {
    await stop();
    throw error;
  }
  const readyMs = performance.now() - spawnedAt;
  const pid = child.pid!;
  return { pid, readyMs, rssMb: () => treeRssMb(pid), stop };
}

async function waitUntilReady(child: ChildProcess, server: ServerCommand): Promise<void> {
  for (const deadline = Date.now() + READY_TIMEOUT_MS; ; ) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${server.command} exited before ready:\n${tail(server.logFile)}`);
    if ((await probe(server.readyUrl)) === 200) return;
    if (Date.now() > deadline) throw new Error(`${server.readyUrl} did not answer 200 within ${READY_TIMEOUT_MS} ms:\n${tail(server.logFile)}`);
    await sleep(5);
  }
}

/** The status of one GET on a fresh connection, 0 when refused or unanswered: a server starting up may accept and stay silent. */
function probe(url: string): Promise<number> {
  return new Promise((resolve) => {
    const request = httpGet(url, { agent: false, timeout: PROBE_TIMEOUT_MS }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    });
    request.on('timeout', () => request.destroy());
    request.on('error', () => resolve(0));
  });
}

/** SIGTERM to the child's own process group, SIGKILL after five seconds. */
function stopGroup(child: ChildProcess): Promise<void> {
  const pid = child.pid!;
  const exited = child.exitCode !== null || child.signalCode !== null;
  const ended = exited
    ? Promise.resolve()
    : new Promise<void>((resolve) => {
        const timer = setTimeout(() => signalGroup(pid, 'SIGKILL'), 5_000);
        child.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
        signalGroup(pid, 'SIGTERM');
      });
  return ended.then(() => {
    signalGroup(pid, 'SIGKILL'); // grandchildren that outlived their launcher
    liveGroups.delete(pid);
  });
}

function signalGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // the group has already gone
  }
}

function treeRssMb(rootPid: number): number {
  const childrenOf = new Map<number, number[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const parent = Number(readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1].split(' ')[1]);
      childrenOf.set(parent, [...(childrenOf.get(parent) ?? []), Number(entry)]);
    } catch {
      // the process ended while we looked
    }
  }
  let total = 0;
  const pending = [rootPid];
  while (pending.length > 0) {
    const pid = pending.pop()!;
    try {
      total += readRssMb(pid);
    } catch {
      continue;
    }
    pending.push(...(childrenOf.get(pid) ?? []));
  }
  return total;
}

/** A loopback port nobody listens on right now, for peers that want a port named up front. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').slice(-2000);
  } catch {
    return '';
  }
}

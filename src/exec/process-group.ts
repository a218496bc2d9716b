/**
 * Runs one command as the leader of its own process group, so that a timeout, an abort, or the
 * leader's exit can end everything it started (pipelines, `&` background jobs, grandchildren):
 * SIGTERM to the whole group, then SIGKILL after a short grace. The promise settles only once the
 * group is gone, so "the call returned" means "nothing it started still runs". A process that
 * leaves the group on purpose (setsid) escapes this; the sandbox's cgroup is the backstop for that,
 * and the call stops reading the output such a process still holds a moment after the group ends.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { toolEnvironment } from './tool-environment.ts';
import { HeadTailBuffer, MODEL_OUTPUT_LIMIT } from './output.ts';

export interface CommandRequest {
  argv: string[];
  cwd: string;
  /** only its allowlisted variables reach the command (see tool-environment.ts), whatever the caller put in */
  env: Record<string, string>;
  /**
   * What the command may see and change. The host runner cannot enforce it (it is the fallback
   * without bubblewrap, where the policy lets only a strict read-only set run unasked); the
   * confined runner (confined-runner.ts) enforces it.
   */
  view?: CommandView;
  timeoutMs: number;
  signal: AbortSignal;
  onOutput(chunk: string): void;
}

export interface CommandResult {
  /** null when the process was killed by a signal or never started */
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  aborted: boolean;
  /** background processes were still running when the leader exited, and were stopped */
  strayProcessesStopped: boolean;
  /** the process could not be started (e.g. command not found) */
  spawnError: string | null;
  /** stdout and stderr interleaved in arrival order, head and tail kept */
  output: string;
  truncated: boolean;
  durationMs: number;
}

export interface CommandView {
  /** false: the file system is read-only and only the system directories and `roots` are visible */
  writable: boolean;
  /** the workspace roots, canonical */
  roots: readonly string[];
}

/** How commands are executed; the sandbox runner provides another implementation. */
export type CommandRunner = (request: CommandRequest) => Promise<CommandResult>;

export interface ProcessGroupOptions {
  killGraceMs?: number;
  outputLimit?: number;
  /** streaming to onOutput stops after this many characters; the capped output still records the rest */
  streamLimit?: number;
}

const GROUP_POLL_MS = 20;
/**
 * How long the output pipes may stay open once the leader has exited and its group is gone. Only a
 * process that left the group (setsid, a daemon) can still hold them; past this the call stops
 * reading instead of waiting on it, which could be forever (its timeout has nothing left to kill).
 */
const OUTPUT_DRAIN_MS = 1000;

export function createProcessGroupRunner(options: ProcessGroupOptions = {}): CommandRunner {
  return (request) => runInProcessGroup(request, options);
}

export function runInProcessGroup(request: CommandRequest, options: ProcessGroupOptions = {}): Promise<CommandResult> {
  const killGraceMs = options.killGraceMs ?? 2000;
  const streamLimit = options.streamLimit ?? 1024 * 1024;
  const buffer = new HeadTailBuffer(options.outputLimit ?? MODEL_OUTPUT_LIMIT);
  const started = performance.now();
  let streamed = 0;
  let timedOut = false;
  let aborted = false;
  let strayProcessesStopped = false;
  let spawnError: string | null = null;
  let terminating = false;
  let killTimer: NodeJS.Timeout | undefined;
  let drainTimer: NodeJS.Timeout | undefined;
  let closed = false;

  const record = (text: string) => {
    if (text === '') return;
    buffer.append(text);
    if (streamed < streamLimit) {
      request.onOutput(text.slice(0, streamLimit - streamed));
      streamed += text.length;
      if (streamed >= streamLimit) request.onOutput('\n[… live output stopped; the final output is capped …]\n');
    }
  };

  return new Promise((resolve) => {
    const [program, ...args] = request.argv;
    const child = spawn(program, args, {
      cwd: request.cwd,
      env: toolEnvironment(request.env),
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const pgid = child.pid;
    const terminate = () => {
      if (terminating || pgid === undefined) return;
      terminating = true;
      // Groups its descendants made of their own (setsid; bubblewrap's namespace init) are not
      // reached through the leader's group; they are named now, while the tree still leads to them,
      // and stopped first, so none can leave between the walk and the signal (then CONT, to let
      // each handle its TERM).
      const groups = stopTree(pgid);
      for (const group of groups) signalGroup(group, 'SIGTERM');
      for (const group of groups) signalGroup(group, 'SIGCONT');
      killTimer = setTimeout(() => {
        for (const group of new Set([...groups, ...groupsThatLeft(pgid)])) signalGroup(group, 'SIGKILL');
      }, killGraceMs);
    };
    const onAbort = () => {
      aborted = true;
      terminate();
    };
    const timeout = setTimeout(() => {
      timedOut = true;
      terminate();
    }, request.timeoutMs);
    if (request.signal.aborted) onAbort();
    else request.signal.addEventListener('abort', onAbort, { once: true });

    for (const stream of [child.stdout, child.stderr]) {
      const decoder = new StringDecoder('utf8');
      stream.on('data', (data: Buffer) => record(decoder.write(data)));
      stream.on('end', () => record(decoder.end()));
    }
    child.on('error', (error) => {
      spawnError = error.message;
    });
    const stopReadingOutput = () => {
      if (closed) return;
      record('\n[… a process that left the command\'s process group still held its output; it was no longer read …]\n');
      child.stdout.destroy();
      child.stderr.destroy();
    };
    child.on('exit', async () => {
      // The leader is gone; whatever is left in its group was started in the background.
      if (pgid !== undefined && groupIsAlive(pgid)) {
        strayProcessesStopped = true;
        terminate();
        await waitForGroupToEnd(pgid, killGraceMs + 1000);
      }
      if (!closed) drainTimer = setTimeout(stopReadingOutput, OUTPUT_DRAIN_MS);
    });
    child.on('close', async (exitCode, signal) => {
      closed = true;
      clearTimeout(drainTimer);
      clearTimeout(timeout);
      request.signal.removeEventListener('abort', onAbort);
      if (terminating && pgid !== undefined) await waitForGroupToEnd(pgid, killGraceMs + 1000);
      clearTimeout(killTimer);
      resolve({
        exitCode: spawnError ? null : exitCode,
        signal: signal,
        timedOut,
        aborted,
        strayProcessesStopped,
        spawnError,
        output: buffer.toString(),
        truncated: buffer.truncated,
        durationMs: Math.round(performance.now() - started),
      });
    });
  });
}

/**
 * Stops the leader's group and every group its descendants made, walking again after each stop
 * until a walk names no new group: a process that called setsid between a walk and the stop is
 * found by the next walk, since its stopped ancestors still lead to it. Returns the groups.
 */
function stopTree(leader: number): number[] {
  const groups = new Set([leader]);
  for (let round = 0; round < 16; round++) {
    for (const group of groups) signalGroup(group, 'SIGSTOP');
    const found = groupsThatLeft(leader).filter((group) => !groups.has(group));
    if (found.length === 0) break;
    for (const group of found) groups.add(group);
  }
  return [...groups];
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the group is already gone.
  }
}

async function waitForGroupToEnd(pgid: number, limitMs: number): Promise<void> {
  const deadline = Date.now() + limitMs;
  while (groupIsAlive(pgid) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, GROUP_POLL_MS));
  }
}

/**
 * Whether any live process remains in the group. Zombies do not count: in a container whose init
 * never reaps orphans they would otherwise look alive forever.
 */
export function groupIsAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch {
    return false;
  }
  let entries: string[];
  try {
    entries = readdirSync('/proc').filter((entry) => /^\d+$/.test(entry));
  } catch {
    return true; // no /proc: trust kill(0)
  }
  return entries.some((entry) => {
    const stat = readProcStat(Number(entry));
    return stat !== null && stat.pgrp === pgid && stat.state !== 'Z';
  });
}

/** Whether a process exists and is not a zombie (Linux /proc, falling back to kill(0)). */
export function processIsAlive(pid: number): boolean {
  const stat = readProcStat(pid);
  if (stat !== null) return stat.state !== 'Z' && stat.state !== 'X';
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * The process groups of the live descendants of `leader` other than its own: where a command's
 * processes went when they called setsid. bubblewrap's PID-namespace init is one (`--new-session`),
 * and its death, which ends the namespace, does not reliably follow its parent's (seen: an init
 * outliving a killed outer bwrap, holding a cancelled clone and its output pipes for good).
 */
function groupsThatLeft(leader: number): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc').filter((entry) => /^\d+$/.test(entry));
  } catch {
    return [];
  }
  const children = new Map<number, { pid: number; pgrp: number }[]>();
  for (const entry of entries) {
    const stat = readProcStat(Number(entry));
    if (stat === null || stat.state === 'Z') continue;
    const siblings = children.get(stat.ppid) ?? [];
    siblings.push({ pid: Number(entry), pgrp: stat.pgrp });
    children.set(stat.ppid, siblings);
  }
  const groups = new Set<number>();
  const pending = [leader];
  const seen = new Set<number>();
  while (pending.length > 0) {
    const parent = pending.pop()!;
    if (seen.has(parent)) continue;
    seen.add(parent);
    for (const child of children.get(parent) ?? []) {
      if (child.pgrp !== leader) groups.add(child.pgrp);
      pending.push(child.pid);
    }
  }
  return [...groups];
}

function readProcStat(pid: number): { state: string; ppid: number; pgrp: number } | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name is in parentheses and may itself contain spaces or parentheses.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { state: fields[0], ppid: Number(fields[1]), pgrp: Number(fields[2]) };
  } catch {
    return null;
  }
}

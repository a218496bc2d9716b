import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import type { Logger } from 'pino';
import { RUNSC_DIRECTORY_PREFIX } from './runner/runtimes/gvisor-runtime.ts';

/** How long the sweep goes on while orphans keep turning up (a killed bwrap's child is the next one). */
const SWEEP_DEADLINE_MS = 2000;
const SWEEP_PASS_INTERVAL_MS = 10;

/**
 * Ends the sandboxes a killed agentd left running. bubblewrap's `--die-with-parent` ends a sandbox
 * when agentd dies, except when agentd dies while bwrap is still setting it up: `scripts/soak.ts`
 * caught one such survivor in about a hundred SIGKILL rounds. At start-up, a bwrap that masks this
 * state dir (`--tmpfs <state dir>`, every confined command does) and that no live agentd owns is
 * such an orphan, and is killed itself, by its pid: a bwrap that leads no process group is not
 * reached through one. That is the PID namespace's init until its setup is done (it takes its own
 * session last, for the command), and always the outer bwrap of a sandbox not started detached.
 * Killing the init ends the whole namespace. Killing an outer bwrap orphans the init it may have
 * just forked, so the sweep looks again until it finds none.
 * Under gVisor the same holds for runsc: `runsc run` dies with its runner (setpriv --pdeathsig)
 * and takes its sandbox and file proxy with it, but a runsc process whose `--root` is the runsc
 * directory of a runner that no longer runs (gvisor-runtime.ts) is ended too.
 * Returns how many bwrap and runsc processes were ended.
 */
export function endOrphanedSandboxes(stateDir: string, logger: Logger): number {
  const ended = new Set<number>();
  const deadline = Date.now() + SWEEP_DEADLINE_MS;
  for (let orphans = orphanedSandboxes(stateDir); orphans.length > 0; orphans = orphanedSandboxes(stateDir)) {
    if (Date.now() > deadline) {
      logger.error({ pids: orphans }, 'sandboxed commands left running by a previous process survived SIGKILL');
      break;
    }
    for (const pid of orphans) {
      try {
        process.kill(pid, 'SIGKILL');
        ended.add(pid);
      } catch {
        // gone meanwhile
      }
    }
    pause(SWEEP_PASS_INTERVAL_MS);
  }
  if (ended.size > 0) logger.warn({ ended: ended.size }, 'ended sandboxed commands left running by a previous process');
  return ended.size;
}

function orphanedSandboxes(stateDir: string): number[] {
  return processIds().filter((pid) => {
    const argv = argvOf(pid);
    if (argv === null) return false;
    return (isBwrap(argv) && masks(argv, stateDir) && !ownedByLiveNode(pid)) || isRunscOfDeadRunner(argv);
  });
}

const RUNSC_PROGRAM = /(^|\/)runsc(-gofer|-sandbox)?$/;

/** runsc, its sandbox (`runsc-sandbox`) or its file proxy (`runsc-gofer`), with the runsc root of a runner that has ended. */
function isRunscOfDeadRunner(argv: string[]): boolean {
  if (!RUNSC_PROGRAM.test(argv[0] ?? '')) return false;
  const prefix = `${tmpdir()}/${RUNSC_DIRECTORY_PREFIX}`;
  const root = argv.map((argument, index) => (argument === '--root' ? argv[index + 1] : argument.startsWith('--root=') ? argument.slice(7) : null)).find((value) => value?.startsWith(prefix));
  const runnerPid = root === undefined || root === null ? undefined : /^(\d+)\//.exec(root.slice(prefix.length))?.[1];
  return runnerPid !== undefined && !existsSync(`/proc/${runnerPid}`);
}

/**
 * Whether the first process above the bwrap chain (outer bwrap, then the namespace's init) is a
 * node process: a live agentd or its runner still owns the sandbox. An orphan's chain ends at
 * init or a subreaper.
 */
function ownedByLiveNode(pid: number): boolean {
  let parent = parentOf(pid);
  while (parent !== null && parent > 1 && isBwrap(argvOf(parent) ?? [])) parent = parentOf(parent);
  return parent !== null && parent > 1 && /(^|\/)node$/.test(argvOf(parent)?.[0] ?? '');
}

function isBwrap(argv: string[]): boolean {
  return argv[0]?.endsWith('bwrap') ?? false;
}

function masks(argv: string[], stateDir: string): boolean {
  return argv.some((argument, index) => argument === '--tmpfs' && argv[index + 1] === stateDir);
}

/** Start-up is synchronous here; the pause only happens while orphans are being ended. */
function pause(milliseconds: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, milliseconds);
}

function processIds(): number[] {
  try {
    return readdirSync('/proc').filter((entry) => /^\d+$/.test(entry)).map(Number);
  } catch {
    return [];
  }
}

function argvOf(pid: number): string[] | null {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  } catch {
    return null;
  }
}

function parentOf(pid: number): number | null {
  try {
    const match = /^PPid:\s*(\d+)$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : null;
  } catch {
    return null;
  }
}

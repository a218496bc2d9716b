import { readdirSync, readFileSync } from 'node:fs';
import type { Logger } from 'pino';

/**
 * Ends the sandboxes a killed agentd left running. bubblewrap's `--die-with-parent` ends a sandbox
 * when agentd dies, except when agentd dies in the instant between bwrap's start and its prctl:
 * `scripts/soak.ts` caught one such survivor in about a hundred SIGKILL rounds. At start-up, a
 * bwrap that masks this state dir (`--tmpfs <state dir>`, every confined command does) and whose
 * parent is not a node process is such an orphan; its process group is killed.
 * Returns how many were ended.
 */
export function endOrphanedSandboxes(stateDir: string, logger: Logger): number {
  let ended = 0;
  for (const pid of processIds()) {
    const argv = argvOf(pid);
    if (!argv || !argv[0]?.endsWith('bwrap') || !masks(argv, stateDir)) continue;
    const parent = parentOf(pid);
    // A live agentd (a node process) still owns its sandboxes; an orphan's parent is init or a subreaper.
    if (parent !== null && parent !== 1 && /(^|\/)node$/.test(argvOf(parent)?.[0] ?? '')) continue;
    try {
      // Commands run detached: the bwrap is the leader of its own process group.
      process.kill(-pid, 'SIGKILL');
      ended += 1;
    } catch {
      // gone meanwhile
    }
  }
  if (ended > 0) logger.warn({ ended }, 'ended sandboxed commands left running by a previous process');
  return ended;
}

function masks(argv: string[], stateDir: string): boolean {
  return argv.some((argument, index) => argument === '--tmpfs' && argv[index + 1] === stateDir);
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

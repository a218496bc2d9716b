/**
 * The one cgroup that holds every process a runner starts for its tenant: created with the
 * limits at start, entered by each command before it executes, emptied (SIGKILL to every member)
 * and removed at shutdown.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CgroupLayout } from './layout.ts';
import { enableV2Controllers, LimitError, writeV1Limits, writeV2Limits, type SandboxLimits } from './limits.ts';

export class TenantCgroup {
  private constructor(
    readonly version: 1 | 2,
    /** every directory of the group (one per v1 hierarchy, one in v2) */
    readonly directories: string[],
    /** where memory events (oom_kill) are counted */
    private readonly memoryDirectory: string,
    /** where CPU time is counted, when the host has such a controller */
    readonly cpuUsageFile: string | null,
  ) {}

  /**
   * Creates `<parent>/<name>` in each hierarchy and writes the limits. On v2 the runner first
   * moves itself into a `<parent>/runner` leaf so the parent may delegate controllers.
   */
  static create(layout: CgroupLayout, name: string, limits: SandboxLimits): TenantCgroup {
    if (layout.version === 2) {
      const runnerLeaf = join(layout.parent, 'agentd-runner');
      makeDirectory(runnerLeaf, 'cgroup');
      writeControlFile(join(runnerLeaf, 'cgroup.procs'), String(process.pid), 'cgroup');
      enableV2Controllers(layout.parent);
      removeGroupsOfDeadRunners(layout.parent);
      const group = join(layout.parent, name);
      makeDirectory(group, 'cgroup');
      writeV2Limits(group, limits);
      return new TenantCgroup(2, [group], group, join(group, 'cpu.stat'));
    }
    for (const parent of new Set(Object.values(layout.parents))) removeGroupsOfDeadRunners(parent);
    const groups = Object.fromEntries(Object.entries(layout.parents).map(([controller, parent]) => [controller, join(parent, name)])) as Record<string, string>;
    for (const [controller, directory] of Object.entries(groups)) makeDirectory(directory, `cgroup:${controller}`);
    writeV1Limits({ memory: groups.memory, cpu: groups.cpu, pids: groups.pids }, limits);
    const directories = [...new Set(Object.values(groups))];
    const cpuUsageFile = groups.cpuacct ? join(groups.cpuacct, 'cpuacct.usage') : null;
    return new TenantCgroup(1, directories, groups.memory, cpuUsageFile);
  }

  /** Files a process writes "0" to, to move itself into the group (cgroup.procs of each hierarchy). */
  get entryFiles(): string[] {
    return this.directories.map((directory) => join(directory, 'cgroup.procs'));
  }

  /** How many processes the memory limit has killed so far. */
  oomKills(): number {
    const file = this.version === 2 ? 'memory.events' : 'memory.oom_control';
    const match = /^oom_kill (\d+)$/m.exec(readOr(join(this.memoryDirectory, file), ''));
    return match ? Number(match[1]) : 0;
  }

  members(): number[] {
    const pids = new Set<number>();
    for (const directory of this.directories) {
      for (const line of readOr(join(directory, 'cgroup.procs'), '').split('\n')) if (line) pids.add(Number(line));
    }
    return [...pids];
  }

  /** SIGKILL to every member until none is left (a fork racing the sweep is caught by the next pass). */
  async killAll(): Promise<void> {
    const killFile = join(this.directories[0], 'cgroup.kill');
    if (this.version === 2 && existsSync(killFile)) writeControlFile(killFile, '1', 'cgroup');
    for (let pass = 0; pass < 100; pass++) {
      const members = this.members();
      if (members.length === 0) return;
      for (const pid of members) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  remove(): void {
    for (const directory of this.directories) {
      try {
        rmdirSync(directory);
      } catch {
        // a member still exiting keeps it busy; the next runner's start does not depend on it
      }
    }
  }
}

/**
 * A runner killed outright (SIGKILL) cannot remove its group; its sandboxes died with it
 * (--die-with-parent), so the next runner removes the empty groups whose runner is gone.
 */
function removeGroupsOfDeadRunners(parent: string): void {
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return;
  }
  for (const name of names) {
    const runnerPid = /^agentd-sandbox-(\d+)$/.exec(name)?.[1];
    if (!runnerPid || existsSync(`/proc/${runnerPid}`)) continue;
    try {
      rmdirSync(join(parent, name));
    } catch {
      // still has members (they are being killed) or is not ours to remove
    }
  }
}

function makeDirectory(path: string, missing: string): void {
  try {
    mkdirSync(path, { recursive: true });
  } catch (error) {
    throw new LimitError(missing, `cannot create the cgroup ${path}: ${(error as Error).message}`);
  }
}

function writeControlFile(path: string, value: string, missing: string): void {
  try {
    writeFileSync(path, value);
  } catch (error) {
    throw new LimitError(missing, `cannot write ${path}: ${(error as Error).message}`);
  }
}

function readOr(path: string, fallback: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return fallback;
  }
}

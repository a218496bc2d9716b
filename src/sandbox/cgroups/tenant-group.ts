/**
 * The one cgroup that holds every process a runner starts for its tenant: created with the
 * limits at start, emptied (SIGKILL to every member) and removed at shutdown. Each command gets a
 * group of its own inside it (CommandCgroup), entered before it executes, so that a cancel can end
 * exactly what that command started while the tenant's limits still cover it.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CgroupLayout } from './layout.ts';
import { enableV2Controllers, LimitError, writeV1Limits, writeV2Limits, type SandboxLimits } from './limits.ts';

/** How long a kill keeps sweeping a group that still has members (each pass SIGKILLs them again). */
const KILL_DEADLINE_MS = 10_000;
const KILL_PASS_INTERVAL_MS = 10;
const COMMAND_GROUP = /^command-\d+$/;

export class TenantCgroup {
  private commandsStarted = 0;

  private constructor(
    readonly version: 1 | 2,
    /** every directory of the group (one per v1 hierarchy, one in v2) */
    readonly directories: string[],
    /** where memory events (oom_kill) are counted */
    private readonly memoryDirectory: string,
    /** where CPU time is counted, when the host has such a controller */
    readonly cpuUsageFile: string | null,
    /** the directory (of the pids hierarchy on v1) below which each command gets its own group */
    private readonly commandParent: string,
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
      return new TenantCgroup(2, [group], group, join(group, 'cpu.stat'), group);
    }
    for (const parent of new Set(Object.values(layout.parents))) removeGroupsOfDeadRunners(parent);
    const groups = Object.fromEntries(Object.entries(layout.parents).map(([controller, parent]) => [controller, join(parent, name)])) as Record<string, string>;
    for (const [controller, directory] of Object.entries(groups)) makeDirectory(directory, `cgroup:${controller}`);
    writeV1Limits({ memory: groups.memory, cpu: groups.cpu, pids: groups.pids }, limits);
    const directories = [...new Set(Object.values(groups))];
    const cpuUsageFile = groups.cpuacct ? join(groups.cpuacct, 'cpuacct.usage') : null;
    return new TenantCgroup(1, directories, groups.memory, cpuUsageFile, groups.pids);
  }

  /**
   * A new group for one command, below the tenant's: on v1 in the pids hierarchy only (the memory,
   * cpu and cpuacct groups stay the tenant's, where OOM kills and CPU time are counted); on v2 a
   * child without controllers of its own. Either way the tenant's limits cover it.
   */
  commandGroup(): CommandCgroup {
    this.commandsStarted += 1;
    const directory = join(this.commandParent, `command-${this.commandsStarted}`);
    makeDirectory(directory, 'cgroup');
    const entryFiles = this.directories.map((tenantDirectory) => join(tenantDirectory === this.commandParent ? directory : tenantDirectory, 'cgroup.procs'));
    return new CommandCgroup(this.version, directory, entryFiles);
  }

  /** The cgroup.procs files a process writes "0" to to join the tenant's own group (what the runtime keeps for all its commands, gVisor's sandbox). */
  get entryFiles(): string[] {
    return this.directories.map((directory) => join(directory, 'cgroup.procs'));
  }

  /** How many processes the memory limit has killed so far. */
  oomKills(): number {
    const file = this.version === 2 ? 'memory.events' : 'memory.oom_control';
    const match = /^oom_kill (\d+)$/m.exec(readOr(join(this.memoryDirectory, file), ''));
    return match ? Number(match[1]) : 0;
  }

  /** Every process of the tenant, in its own groups and its commands'. */
  members(): number[] {
    return membersOf(this.directories.flatMap((directory) => [directory, ...commandGroupsIn(directory)]));
  }

  /** SIGKILL to every member, the commands' included, until none is left. */
  async killAll(): Promise<void> {
    await killUntilEmpty(() => this.members(), this.version === 2 ? join(this.directories[0], 'cgroup.kill') : null);
  }

  remove(): void {
    for (const directory of this.directories) removeGroup(directory);
  }
}

/** One command's processes: everything it starts inherits the group, whatever bubblewrap has set up yet. */
export class CommandCgroup {
  constructor(
    private readonly version: 1 | 2,
    readonly directory: string,
    /** files the command's shell writes "0" to before it executes (cgroup.procs of each hierarchy) */
    readonly entryFiles: string[],
  ) {}

  members(): number[] {
    return membersOf([this.directory]);
  }

  async killAll(): Promise<void> {
    await killUntilEmpty(() => this.members(), this.version === 2 ? join(this.directory, 'cgroup.kill') : null);
  }

  remove(): void {
    removeGroup(this.directory);
  }
}

/**
 * SIGKILL to every member until a pass finds none: a process forked while a pass reads the list
 * is caught by the next one, and a killed process stays listed until it has run its exit, which
 * on a loaded machine can take a while. v2's cgroup.kill does the first pass atomically.
 */
async function killUntilEmpty(members: () => number[], killFile: string | null): Promise<void> {
  if (killFile) {
    try {
      writeFileSync(killFile, '1');
    } catch {
      // a kernel before 5.14 has no cgroup.kill: the passes below do it
    }
  }
  const deadline = Date.now() + KILL_DEADLINE_MS;
  for (let left = members(); left.length > 0 && Date.now() < deadline; left = members()) {
    killEach(left);
    await new Promise((resolve) => setTimeout(resolve, KILL_PASS_INTERVAL_MS));
  }
}

function killEach(pids: number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

function membersOf(directories: string[]): number[] {
  const pids = new Set<number>();
  for (const directory of directories) {
    for (const line of readOr(join(directory, 'cgroup.procs'), '').split('\n')) if (line) pids.add(Number(line));
  }
  return [...pids];
}

function commandGroupsIn(directory: string): string[] {
  try {
    return readdirSync(directory).filter((name) => COMMAND_GROUP.test(name)).map((name) => join(directory, name));
  } catch {
    return [];
  }
}

/** Removes a group and its command groups; a member still exiting keeps one busy, which nothing depends on. */
function removeGroup(directory: string): void {
  for (const path of [...commandGroupsIn(directory), directory]) {
    try {
      rmdirSync(path);
    } catch {
      // busy or already gone
    }
  }
}

/**
 * A runner killed outright (SIGKILL) cannot empty or remove its group. bubblewrap's
 * `--die-with-parent` ends most of its sandboxes with it, but not one still being set up (its
 * namespace's init arms the signal last), so the next runner kills what is left in the groups of
 * dead runners and removes them; a member still exiting keeps its group for the next start.
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
    const group = join(parent, name);
    killEach(membersOf([group, ...commandGroupsIn(group)]));
    removeGroup(group);
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

/**
 * Writes the sandbox limits (SPEC.md §8: 2 CPUs, 2 GiB of memory without swap, 512 processes) into
 * a cgroup in the file format of either cgroup version. Pure file writes into directories the
 * caller names, so the v2 path is tested against a fake tree on a v1 host.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface SandboxLimits {
  cpus: number;
  memoryBytes: number;
  processes: number;
}

export const SANDBOX_LIMITS: Readonly<SandboxLimits> = Object.freeze({ cpus: 2, memoryBytes: 2 * 1024 ** 3, processes: 512 });

/** The CFS period both versions use: quota = cpus × period. */
const CPU_PERIOD_MICROSECONDS = 100_000;

export class LimitError extends Error {
  constructor(
    readonly missing: string,
    message: string,
  ) {
    super(message);
  }
}

function write(directory: string, file: string, value: string, missing: string): void {
  const path = join(directory, file);
  try {
    writeFileSync(path, value);
  } catch (error) {
    throw new LimitError(missing, `cannot write ${value} to ${path}: ${(error as Error).message}`);
  }
}

/** True when the host has active swap (the v1 memory limit alone would then let a command swap). */
// Stryker disable next-line StringLiteral: equivalent on a host without swap (this one, where the tests run): an unreadable path reads as no swap, which is what /proc/swaps says here
export function hostHasSwap(procSwaps = '/proc/swaps'): boolean {
  try {
    return readFileSync(procSwaps, 'utf8').trim().split('\n').length > 1;
  } catch {
    return false;
  }
}

export interface V1Groups {
  memory: string;
  cpu: string;
  pids: string;
}

export function writeV1Limits(groups: V1Groups, limits: SandboxLimits, swapActive = hostHasSwap()): void {
  write(groups.memory, 'memory.limit_in_bytes', String(limits.memoryBytes), 'cgroup:memory');
  // memsw is memory plus swap; equal to the memory limit means no swap at all
  if (existsSync(join(groups.memory, 'memory.memsw.limit_in_bytes'))) {
    write(groups.memory, 'memory.memsw.limit_in_bytes', String(limits.memoryBytes), 'cgroup:memory');
  } else if (swapActive) {
    throw new LimitError('cgroup:memory.memsw', 'the host has swap but no swap accounting (memory.memsw), so "without swap" cannot be enforced; boot with swapaccount=1 or disable swap');
  }
  write(groups.cpu, 'cpu.cfs_period_us', String(CPU_PERIOD_MICROSECONDS), 'cgroup:cpu');
  write(groups.cpu, 'cpu.cfs_quota_us', String(limits.cpus * CPU_PERIOD_MICROSECONDS), 'cgroup:cpu');
  write(groups.pids, 'pids.max', String(limits.processes), 'cgroup:pids');
}

export function writeV2Limits(group: string, limits: SandboxLimits): void {
  write(group, 'memory.max', String(limits.memoryBytes), 'cgroup:memory');
  write(group, 'memory.swap.max', '0', 'cgroup:memory.swap');
  write(group, 'cpu.max', `${limits.cpus * CPU_PERIOD_MICROSECONDS} ${CPU_PERIOD_MICROSECONDS}`, 'cgroup:cpu');
  write(group, 'pids.max', String(limits.processes), 'cgroup:pids');
}

/** v2 lets a parent hand controllers to its children only when no process sits in the parent itself. */
export function enableV2Controllers(parent: string): void {
  write(parent, 'cgroup.subtree_control', '+memory +cpu +pids', 'cgroup:subtree_control');
}

import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SandboxClient } from '../../src/exec/sandbox-client.ts';
import { detectCgroupLayout } from '../../src/sandbox/cgroups/layout.ts';
import type { ResultLine } from '../../src/sandbox/protocol.ts';
import { DEFAULT_GUEST_HOST_UID } from '../../src/sandbox/runner/guest-identity.ts';
import { SANDBOX_RUNTIMES, type SandboxRuntimeName } from '../../src/config/sandbox-runtimes.ts';

export const RUNNER_SOURCE = new URL('../../src/sandbox/runner/main.ts', import.meta.url).pathname;

export function scratchDirectory(prefix = 'agentd-sandbox-test-'): string {
  return realpathSync(mkdtempSync(join(tmpdir(), prefix)));
}

/** Who owns the guest's files on the host: never root (a root runner hands a root-owned workspace to a dedicated user). */
export function guestHostUid(): number {
  return process.getuid!() === 0 ? DEFAULT_GUEST_HOST_UID : process.getuid!();
}

/** The runner from source (through tsx), with the given workspace and extra environment. */
export function runnerCommand(workspace: string): string[] {
  return [process.execPath, '--import', 'tsx', RUNNER_SOURCE, '--workspace', workspace];
}

/**
 * The runtimes the sandbox suite runs under (docs/SANDBOX.md, "Runtimes"): the isolation, network,
 * limit and fault tests run under each; see each file for the ones that are one runtime's own.
 */
export const RUNTIMES: readonly SandboxRuntimeName[] = SANDBOX_RUNTIMES;

export function sandboxClient(workspace: string, env: NodeJS.ProcessEnv = {}, runtime: SandboxRuntimeName = 'bubblewrap'): SandboxClient {
  return new SandboxClient({ command: runnerCommand(workspace), env: { PATH: process.env.PATH, AGENTD_SANDBOX_RUNTIME: runtime, ...env }, readyTimeoutMs: 40_000 });
}

/** Runs a shell string and returns its whole output and result. */
export async function shell(client: SandboxClient, script: string, timeoutMs = 30_000): Promise<{ output: string; result: ResultLine }> {
  let output = '';
  const result = await client.call({ type: 'run', shell: script, timeoutMs }, { onOutput: (_stream, data) => (output += data) });
  return { output, result };
}

/** A runner's tenant cgroup, found the way the runner finds it (v1 or v2), never at an assumed path. */
export interface TenantGroups {
  version: 1 | 2;
  /** the directories holding each controller's files (the same one on v2) */
  memory: string;
  cpu: string;
  pids: string;
  /** the processes in the group and every group below it */
  members(): string[];
  /** CPU time the group has used, in nanoseconds; null when the host does not count it */
  cpuNanoseconds(): number | null;
}

/**
 * The tenant group of the runner `runnerPid`: its cgroup root is the runner's
 * (AGENTD_SANDBOX_CGROUP_ROOT, else /sys/fs/cgroup) and its parent the runner's own group, which on
 * v2 the runner has left for the `agentd-runner` leaf it made.
 */
export function tenantGroupsOf(runnerPid: number, root = process.env.AGENTD_SANDBOX_CGROUP_ROOT || '/sys/fs/cgroup'): TenantGroups {
  const runnerCgroup = readFileSync(`/proc/${runnerPid}/cgroup`, 'utf8').replace(/\/agentd-runner$/m, '');
  const detected = detectCgroupLayout(root, runnerCgroup);
  assert.ok(detected.ok, `no usable cgroup hierarchy under ${root}`);
  const name = `agentd-sandbox-${runnerPid}`;
  const processesBelow = (directory: string): string[] => {
    const own = readFileSync(join(directory, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean);
    const children = readdirSync(directory, { withFileTypes: true }).filter((entry) => entry.isDirectory()).map((entry) => join(directory, entry.name));
    return [...own, ...children.flatMap(processesBelow)];
  };
  const { layout } = detected;
  if (layout.version === 2) {
    const group = join(layout.parent, name);
    const usageMicroseconds = () => Number(/^usage_usec (\d+)$/m.exec(readFileSync(join(group, 'cpu.stat'), 'utf8'))![1]);
    return { version: 2, memory: group, cpu: group, pids: group, members: () => processesBelow(group), cpuNanoseconds: () => usageMicroseconds() * 1000 };
  }
  const [memory, cpu, pids] = [layout.parents.memory, layout.parents.cpu, layout.parents.pids].map((parent) => join(parent, name));
  const cpuacct = layout.parents.cpuacct ? join(layout.parents.cpuacct, name, 'cpuacct.usage') : null;
  return { version: 1, memory, cpu, pids, members: () => processesBelow(pids), cpuNanoseconds: () => (cpuacct ? Number(readFileSync(cpuacct, 'utf8')) : null) };
}

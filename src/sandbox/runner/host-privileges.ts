/**
 * What bubblewrap needs of the kernel and, inside a container, of the container's settings
 * (docs/DEPLOY.md, "The sandbox in a container"), checked before anything is set up so that a
 * missing privilege is refused in one line that names it, not found later as a murky failure of
 * some step: a user namespace (blocked by a seccomp or AppArmor profile, or
 * user.max_user_namespaces = 0), a fresh /proc in a new PID namespace (refused by the kernel
 * while parts of the current /proc are covered, as a container's masked paths cover them), and a
 * cgroup file system the runner may write, to make each tenant's groups below its own.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import type { Tools } from './tools.ts';
import { Unavailable } from './unavailable.ts';

function attempt(unshare: string, args: string[]): string | null {
  const result = spawnSync(unshare, [...args, '--', '/bin/true'], { encoding: 'utf8', env: { PATH: '/usr/bin:/bin' }, timeout: 10_000 });
  return result.status === 0 ? null : (result.stderr.trim() || result.error?.message || `exit ${result.status}`);
}

/** Every cgroup mount of this mount namespace is read-only: no group can be made below the runner's. */
function cgroupsReadOnly(mountInfo: string): boolean {
  const cgroupMounts = mountInfo.split('\n').filter((line) => / - cgroup2? /.test(line));
  return cgroupMounts.length > 0 && cgroupMounts.every((line) => line.split(' ')[5].split(',').includes('ro'));
}

export function checkBubblewrapPrivileges(tools: Pick<Tools, 'unshare'>): void {
  const userNamespace = attempt(tools.unshare, ['--user', '--map-root-user']);
  if (userNamespace !== null) {
    throw new Unavailable('user_namespaces', `user namespaces: cannot create one (a seccomp or AppArmor profile, or user.max_user_namespaces = 0, forbids it): ${userNamespace}`);
  }
  const freshProc = attempt(tools.unshare, ['--user', '--map-root-user', '--pid', '--fork', '--mount', '--mount-proc']);
  if (freshProc !== null) {
    throw new Unavailable('proc', `/proc: cannot mount a fresh one in a new PID namespace, parts of this /proc are covered (a container's masked paths: podman --security-opt unmask=ALL): ${freshProc}`);
  }
  if (cgroupsReadOnly(readFileSync('/proc/self/mountinfo', 'utf8'))) {
    throw new Unavailable('cgroup_delegation', 'cgroup delegation: the cgroup file system is mounted read-only, so no tenant group can be made below the runner\'s (a container needs its cgroup writable)');
  }
}

/**
 * The bubblewrap command line for one sandboxed command: fresh user (mapped to an unprivileged
 * guest uid), mount, PID, IPC, UTS and cgroup namespaces (the network namespace is the tenant's,
 * joined before bwrap runs), system directories read-only, a curated /etc, private /tmp, HOME and
 * /proc, the workspace writable at /workspace, no capabilities, an environment built from scratch,
 * and death with the runner.
 */
import { existsSync, lstatSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { GUEST_HOME, GUEST_WORKSPACE } from '../protocol.ts';
import { GENERATED_ETC_FILES, GUEST_GID, GUEST_UID, GUEST_USER, HOST_ETC_ALLOWLIST } from './guest-files.ts';

export interface SandboxView {
  /** host directory shown writable at /workspace */
  workspace: string;
  /** host directory shown writable at HOME, or none for a fresh tmpfs per command */
  home: string | null;
  /** directory holding the generated passwd, group, hosts and resolv.conf */
  generatedEtc: string;
}

const SYSTEM_DIRECTORIES = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

/** The guest's whole environment: nothing is inherited from the runner or the server. */
export const GUEST_ENVIRONMENT: Readonly<Record<string, string>> = Object.freeze({
  PATH: '/usr/local/bin:/usr/bin:/bin',
  HOME: GUEST_HOME,
  USER: GUEST_USER,
  LOGNAME: GUEST_USER,
  SHELL: '/bin/sh',
  LANG: 'C.UTF-8',
  TERM: 'dumb',
  TMPDIR: '/tmp',
  PAGER: 'cat',
  GIT_PAGER: 'cat',
  GIT_TERMINAL_PROMPT: '0',
});

function systemMounts(): string[] {
  const argv: string[] = [];
  for (const path of SYSTEM_DIRECTORIES) {
    if (!existsSync(path)) continue;
    // merged-/usr hosts have /bin -> usr/bin: recreate the link rather than binding its target twice
    if (lstatSync(path).isSymbolicLink()) argv.push('--symlink', readlinkSync(path), path);
    else argv.push('--ro-bind', path, path);
  }
  return argv;
}

function etcMounts(generatedEtc: string): string[] {
  const argv: string[] = [];
  for (const name of HOST_ETC_ALLOWLIST) argv.push('--ro-bind-try', join('/etc', name), join('/etc', name));
  for (const name of GENERATED_ETC_FILES) argv.push('--ro-bind', join(generatedEtc, name), join('/etc', name));
  return argv;
}

export function bwrapArguments(view: SandboxView, cwd: string, command: string[]): string[] {
  const environment = Object.entries(GUEST_ENVIRONMENT).flatMap(([name, value]) => ['--setenv', name, value]);
  return [
    '--unshare-user', '--uid', String(GUEST_UID), '--gid', String(GUEST_GID),
    '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try',
    '--hostname', 'sandbox',
    '--die-with-parent', '--new-session',
    '--cap-drop', 'ALL',
    '--clearenv', ...environment,
    ...systemMounts(),
    ...etcMounts(view.generatedEtc),
    '--proc', '/proc',
    '--dev', '/dev',
    '--tmpfs', '/tmp',
    ...(view.home ? ['--bind', view.home, GUEST_HOME] : ['--tmpfs', GUEST_HOME]),
    '--bind', view.workspace, GUEST_WORKSPACE,
    '--chdir', cwd,
    '--',
    ...command,
  ];
}

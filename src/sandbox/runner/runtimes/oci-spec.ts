/**
 * The OCI runtime spec (config.json) of the tenant's gVisor sandbox, and the process (process.json)
 * each command is exec'd as: the same view a bubblewrap command gets (bubblewrap.ts, `tenant`),
 * written as mounts. An empty read-only root holding only mount
 * points, the system entries read-only, the generated passwd, group, hosts and resolv.conf, a
 * /tmp of the sandbox's own, HOME and /workspace writable, no capabilities, no_new_privs, exactly
 * the given environment. The guest's uid is its unprivileged host user's own: with the host's network
 * (how its sockets pass the tenant's nftables filter) this runsc refuses a user namespace, and a
 * uid inside gVisor's kernel is only a number its file proxy gives the files the guest writes.
 */
import { mkdirSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { GUEST_HOSTNAME } from '../../bubblewrap.ts';
import { GUEST_HOME, GUEST_WORKSPACE } from '../../guest-mounts.ts';
import { HOST_IDENTITY_ETC_ENTRIES, type SystemEntry } from '../../system-paths.ts';
import { GENERATED_ETC_FILES } from '../guest-files.ts';
import type { HostIdentity } from '../guest-identity.ts';

export interface OciMount {
  destination: string;
  type: 'bind' | 'tmpfs' | 'proc';
  source: string;
  options?: string[];
}

/** The tenant's one gVisor sandbox: its view, who the guest is, and how many processes the guest may have. */
export interface TenantSandbox {
  rootfs: string;
  system: readonly SystemEntry[];
  /** directory holding the generated passwd, group, hosts and resolv.conf */
  generatedEtc: string;
  workspace: string;
  /** null: a tmpfs HOME, the sandbox's own */
  home: string | null;
  /** the guest's unprivileged host user, its uid inside too: it owns what the guest writes */
  identity: HostIdentity;
  /** processes the guest may have at once, counted by the sandbox's one gVisor kernel (RLIMIT_NPROC) */
  processes: number;
}

export function tenantMounts(container: Pick<TenantSandbox, 'system' | 'generatedEtc' | 'workspace' | 'home' | 'identity'>): OciMount[] {
  const readOnly = (path: string, source = path): OciMount => ({ destination: path, type: 'bind', source, options: ['rbind', 'ro', 'nosuid', 'nodev'] });
  const writable = (destination: string, source: string): OciMount => ({ destination, type: 'bind', source, options: ['rbind', 'rw', 'nosuid', 'nodev'] });
  return [
    { destination: '/proc', type: 'proc', source: 'proc' },
    { destination: '/dev', type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'mode=755'] },
    { destination: '/tmp', type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'nodev', 'mode=1777'] },
    ...container.system.filter((entry) => entry.symlink === null && !HOST_IDENTITY_ETC_ENTRIES.includes(entry.path)).map((entry) => readOnly(entry.path)),
    ...GENERATED_ETC_FILES.map((name) => readOnly(join('/etc', name), join(container.generatedEtc, name))),
    container.home === null ? { destination: GUEST_HOME, type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'nodev', `uid=${container.identity.uid}`, `gid=${container.identity.gid}`, 'mode=700'] } : writable(GUEST_HOME, container.home),
    writable(GUEST_WORKSPACE, container.workspace),
  ];
}

const NO_CAPABILITIES = { bounding: [], effective: [], inheritable: [], permitted: [], ambient: [] };

/** Printed by the sandbox's first process once gVisor's kernel runs it: the sandbox takes commands. */
export const SANDBOX_READY_LINE = 'agentd-sandbox-ready';

/**
 * The long-lived container whose sandbox runs every command of the tenant (`runsc exec`): its
 * first process only says it is up and sleeps, as root of gVisor's kernel without any capability,
 * so it is none of the guest's 512 processes.
 */
export function sandboxSpec(sandbox: TenantSandbox): object {
  return {
    ociVersion: '1.0.2',
    process: {
      terminal: false,
      user: { uid: 0, gid: 0, additionalGids: [] },
      args: ['/bin/sh', '-c', `echo ${SANDBOX_READY_LINE}; while :; do sleep 3600; done`],
      env: ['PATH=/usr/bin:/bin'],
      cwd: '/',
      capabilities: NO_CAPABILITIES,
      noNewPrivileges: true,
      rlimits: processLimit(sandbox.processes),
    },
    root: { path: sandbox.rootfs, readonly: true },
    hostname: GUEST_HOSTNAME,
    mounts: tenantMounts(sandbox),
    linux: {
      // no network namespace here: runsc (--network=host) serves the guest's sockets from the tenant's, which it was started in
      namespaces: [{ type: 'pid' }, { type: 'ipc' }, { type: 'uts' }, { type: 'mount' }],
    },
  };
}

/** What `unshare` needs for the command's PID namespace; execing the command drops it (the guest is not root). */
const NAMESPACE_CAPABILITY = ['CAP_SYS_ADMIN'];

/**
 * One command as a `runsc exec` process (its process.json): `unshare --pid --fork` as the guest's
 * user, in the command's cwd, holding only CAP_SYS_ADMIN of gVisor's kernel, which its exec of the
 * command clears (a process that is not root keeps no capability across exec without ambient ones).
 * While `unshare` holds it, no other guest process may trace it (a tracer needs every capability
 * of its tracee), and no_new_privs keeps the command from regaining it. The command is the init of
 * its namespace: when it ends or is killed, gVisor's kernel kills every process in that namespace,
 * whatever session or process group they made, and `unshare` reaps it; the tenant's other commands
 * are untouched. Every one of these processes is created by the guest's user, so the kernel counts
 * each against the guest's limit (a process made by root and then given the guest's uid is not).
 */
export function commandProcess(command: { argv: readonly string[]; cwd: string; env: Readonly<Record<string, string>>; identity: HostIdentity; processes: number }): object {
  return {
    terminal: false,
    user: { uid: command.identity.uid, gid: command.identity.gid, additionalGids: [] },
    args: ['/usr/bin/unshare', '--pid', '--fork', '--', ...command.argv],
    env: Object.entries(command.env).map(([name, value]) => `${name}=${value}`),
    cwd: command.cwd,
    capabilities: { ...NO_CAPABILITIES, bounding: NAMESPACE_CAPABILITY, effective: NAMESPACE_CAPABILITY, permitted: NAMESPACE_CAPABILITY },
    noNewPrivileges: true,
    rlimits: processLimit(command.processes),
  };
}

function processLimit(processes: number): object[] {
  return [{ type: 'RLIMIT_NPROC', hard: processes, soft: processes }];
}

/**
 * The one-off container that hands the workspace and home to the guest's host user before the
 * first command (guest-identity.ts): as the container's root, which here is the host's (no user
 * namespace: a root-owned workspace can only be given away by root), with CAP_CHOWN and
 * CAP_DAC_READ_SEARCH in gVisor's kernel only, no network, nothing writable in view but the
 * directories; a symlink in them is resolved by gVisor inside that view.
 */
export function handOverSpec(rootfs: string, system: readonly SystemEntry[], directories: readonly string[], identity: HostIdentity): object {
  const targets = directories.map((_, index) => `/target/${index}`);
  const capabilities = ['CAP_CHOWN', 'CAP_DAC_READ_SEARCH'];
  return {
    ociVersion: '1.0.2',
    process: {
      terminal: false,
      user: { uid: 0, gid: 0 },
      args: ['find', '-P', ...targets, '-xdev', '(', '!', '-user', String(identity.uid), '-o', '!', '-group', String(identity.gid), ')', '-exec', 'chown', '-h', `${identity.uid}:${identity.gid}`, '--', '{}', '+'],
      env: ['PATH=/usr/bin:/bin'],
      cwd: '/',
      capabilities: { ...NO_CAPABILITIES, bounding: capabilities, effective: capabilities, permitted: capabilities },
      noNewPrivileges: true,
    },
    root: { path: rootfs, readonly: true },
    hostname: GUEST_HOSTNAME,
    mounts: [
      ...system.filter((entry) => entry.symlink === null).map((entry) => ({ destination: entry.path, type: 'bind', source: entry.path, options: ['rbind', 'ro'] })),
      ...directories.map((directory, index) => ({ destination: targets[index], type: 'bind', source: directory, options: ['rbind', 'rw'] })),
    ],
    linux: { namespaces: [{ type: 'pid' }, { type: 'ipc' }, { type: 'uts' }, { type: 'mount' }] },
  };
}

/**
 * The container's root: an empty directory tree with a mount point for every mount (a directory,
 * or an empty file where a file is bound) and the system's symlinks (/bin -> usr/bin), read-only.
 */
export function makeRootfs(rootfs: string, system: readonly SystemEntry[], mounts: readonly { destination: string; source: string; type: string }[]): void {
  mkdirSync(rootfs, { recursive: true, mode: 0o755 });
  for (const entry of system) {
    if (entry.symlink === null) continue;
    mkdirSync(join(rootfs, dirname(entry.path)), { recursive: true, mode: 0o755 });
    symlinkSync(entry.symlink, join(rootfs, entry.path));
  }
  for (const mount of mounts) {
    const target = join(rootfs, mount.destination);
    mkdirSync(dirname(target), { recursive: true, mode: 0o755 });
    if (mount.type === 'bind' && !statSync(mount.source).isDirectory()) writeFileSync(target, '', { mode: 0o644 });
    else mkdirSync(target, { recursive: true, mode: 0o755 });
  }
}

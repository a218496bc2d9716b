/**
 * Bubblewrap invocations, built as plain argv so that every confinement the server runs is one
 * reviewed list of flags. Three views of the file system:
 *
 *   read-only  (the host's unattended commands) an empty root with only the system entries and the
 *              visible paths bound read-only, a private /tmp (also HOME), no network
 *   writable   (the host's approved commands) the host's own file system, writable, with the
 *              network shared
 *   tenant     (bin/agentd-sandbox) an empty root with the system entries read-only, the host's
 *              identity files replaced by generated ones, the workspace writable at /workspace, a
 *              new user namespace mapping the guest uid to the server's, no capabilities; the
 *              network namespace is the tenant's, joined before bwrap runs
 *
 * All get new PID, IPC, UTS and cgroup namespaces with a fresh /proc (no host process, no /proc
 * of the server) whose kernel interfaces are read-only (KERNEL_INTERFACES), a new session (no
 * TIOCSTI into the server's terminal), death with the parent, no_new_privs (bwrap always sets it),
 * and exactly the environment given (--clearenv, then --setenv each). The read-only view also
 * drops every capability: a root server's unattended command is root without any power over the
 * host (bwrap keeps a root caller's capabilities unless told otherwise).
 */
import { join } from 'node:path';
import { GUEST_HOME, GUEST_WORKSPACE } from './guest-mounts.ts';
import { GENERATED_ETC_FILES, GUEST_GID, GUEST_UID } from './runner/guest-files.ts';
import { HOST_IDENTITY_ETC_ENTRIES, type SystemEntry } from './system-paths.ts';

export const DEFAULT_BUBBLEWRAP_PATH = '/usr/bin/bwrap';

/** The private scratch directory of the read-only view; HOME and TMPDIR point at it. */
const CONFINED_SCRATCH = '/tmp';

/** The tenant view's hostname, whatever the host's. */
export const GUEST_HOSTNAME = 'sandbox';

export interface HiddenPath {
  path: string;
  /** a directory is covered by an empty tmpfs, a file by /dev/null */
  directory: boolean;
}

interface CommandSpec {
  command: readonly string[];
  /** canonical host path in the host views (inside a visible path in the read-only one), a guest path in the tenant view */
  cwd: string;
  env: Readonly<Record<string, string>>;
}

export interface ReadOnlyHostView extends CommandSpec {
  view: 'read-only';
  /** the directories shown besides the system entries (the workspace roots) */
  visible: readonly string[];
  /** masked where visible, e.g. the server's state dir, token file and models file */
  hidden: readonly HiddenPath[];
  /** what /usr, /bin, /lib*, /etc/… look like on this host */
  system: readonly SystemEntry[];
}

interface WritableHostView extends CommandSpec {
  view: 'writable';
  /** workspace roots; bound back only where one lies inside a hidden path */
  visible: readonly string[];
  hidden: readonly HiddenPath[];
}

export interface TenantView extends CommandSpec {
  view: 'tenant';
  /** host directory shown writable at /workspace */
  workspace: string;
  /** host directory shown writable at HOME, or null for a fresh tmpfs per command */
  home: string | null;
  /** directory holding the generated passwd, group, hosts and resolv.conf */
  generatedEtc: string;
  system: readonly SystemEntry[];
}

export type BubblewrapInvocation = ReadOnlyHostView | WritableHostView | TenantView;

const NAMESPACES = ['--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try'];
const LIFETIME = ['--die-with-parent', '--new-session'];

/**
 * The parts of /proc that change the kernel rather than describe a process. bwrap covers them
 * itself only when its setup could write to them, which a guest mapped to host root could not
 * see coming; they are laid read-only over the fresh /proc explicitly in every view.
 */
export const KERNEL_INTERFACES = ['/proc/sys', '/proc/sysrq-trigger', '/proc/irq', '/proc/bus', '/proc/fs'] as const;

function freshProc(): string[] {
  return ['--proc', '/proc', ...KERNEL_INTERFACES.flatMap((path) => ['--ro-bind-try', path, path])];
}

/** The arguments after the bwrap program, ending with `--` and the command. */
export function bubblewrapArguments(invocation: BubblewrapInvocation): string[] {
  const args = [...NAMESPACES, ...LIFETIME];
  let env = invocation.env;
  switch (invocation.view) {
    case 'read-only':
      args.push('--unshare-net', '--cap-drop', 'ALL', ...freshProc(), '--dev', '/dev', ...systemMounts(invocation.system), ...layeredMounts(invocation));
      env = { ...env, HOME: CONFINED_SCRATCH, TMPDIR: CONFINED_SCRATCH };
      break;
    case 'writable':
      args.push('--bind', '/', '/', '--dev-bind', '/dev', '/dev', ...freshProc(), '--ro-bind-try', '/sys', '/sys', ...layeredMounts(invocation));
      break;
    case 'tenant':
      args.push(...tenantIdentity(), ...freshProc(), '--dev', '/dev', ...tenantMounts(invocation));
      break;
  }
  args.push('--clearenv');
  for (const [name, value] of Object.entries(env)) args.push('--setenv', name, value);
  args.push('--chdir', invocation.cwd, '--', ...invocation.command);
  return args;
}

function systemMounts(system: readonly SystemEntry[]): string[] {
  return system.flatMap((entry) => (entry.symlink === null ? ['--ro-bind', entry.path, entry.path] : ['--symlink', entry.symlink, entry.path]));
}

/** A user namespace in which the command is the unprivileged guest user, mapped to the server's uid outside. */
function tenantIdentity(): string[] {
  return ['--unshare-user', '--uid', String(GUEST_UID), '--gid', String(GUEST_GID), '--hostname', GUEST_HOSTNAME, '--cap-drop', 'ALL'];
}

function tenantMounts(view: TenantView): string[] {
  const system = view.system.filter((entry) => !HOST_IDENTITY_ETC_ENTRIES.includes(entry.path));
  return [
    ...systemMounts(system),
    ...GENERATED_ETC_FILES.flatMap((name) => ['--ro-bind', join(view.generatedEtc, name), join('/etc', name)]),
    '--tmpfs', '/tmp',
    ...(view.home ? ['--bind', view.home, GUEST_HOME] : ['--tmpfs', GUEST_HOME]),
    '--bind', view.workspace, GUEST_WORKSPACE,
  ];
}

/**
 * Hands the given directories (canonical; bound at /target/0, /target/1, …) to a host user: as root, with
 * CAP_CHOWN and CAP_DAC_READ_SEARCH only, no network, and nothing else writable in view, so a
 * symlink planted in them leads to a read-only mount or nowhere. No /dev or /proc either: a
 * chown must not reach a device node of the host. find does not follow symlinks (-P).
 */
export function handOverArguments(system: readonly SystemEntry[], directories: readonly string[], uid: number, gid: number): string[] {
  const targets = directories.map((_, index) => `/target/${index}`);
  return [
    ...NAMESPACES, '--unshare-net', ...LIFETIME,
    '--cap-drop', 'ALL', '--cap-add', 'CAP_CHOWN', '--cap-add', 'CAP_DAC_READ_SEARCH',
    ...systemMounts(system),
    ...directories.flatMap((directory, index) => ['--bind', directory, targets[index]]),
    '--clearenv', '--setenv', 'PATH', '/usr/bin:/bin',
    '--', 'find', '-P', ...targets, '-xdev', '(', '!', '-user', String(uid), '-o', '!', '-group', String(gid), ')',
    '-exec', 'chown', '-h', `${uid}:${gid}`, '--', '{}', '+',
  ];
}

/**
 * The host views' mounts that may nest inside one another (scratch, workspace roots, masks),
 * outermost first: a mask inside a root is laid over the root, and a root inside a masked
 * directory is bound back over the mask, so neither order of configuration hides the wrong thing.
 */
function layeredMounts(invocation: ReadOnlyHostView | WritableHostView): string[] {
  const writable = invocation.view === 'writable';
  const mounts: { target: string; args: string[] }[] = [];
  if (!writable) mounts.push({ target: CONFINED_SCRATCH, args: ['--tmpfs', CONFINED_SCRATCH] });
  const bind = writable ? '--bind' : '--ro-bind';
  const roots = writable ? invocation.visible.filter((root) => invocation.hidden.some((hidden) => isInside(root, hidden.path))) : invocation.visible;
  for (const root of roots) mounts.push({ target: root, args: [bind, root, root] });
  for (const hidden of maskedIn(invocation)) {
    mounts.push({ target: hidden.path, args: hidden.directory ? ['--tmpfs', hidden.path] : ['--ro-bind', '/dev/null', hidden.path] });
  }
  mounts.sort((a, b) => depth(a.target) - depth(b.target));
  return mounts.flatMap((mount) => mount.args);
}

/** In the read-only view only what lies inside a bound path can be seen, so only that needs a mask. */
function maskedIn(invocation: ReadOnlyHostView | WritableHostView): readonly HiddenPath[] {
  if (invocation.view === 'writable') return invocation.hidden;
  const bound = [...invocation.visible, ...invocation.system.filter((entry) => entry.symlink === null).map((entry) => entry.path)];
  return invocation.hidden.filter((hidden) => bound.some((path) => isInside(hidden.path, path)));
}

function depth(path: string): number {
  return path.split('/').filter(Boolean).length;
}

function isInside(path: string, directory: string): boolean {
  return path === directory || path.startsWith(directory.endsWith('/') ? directory : `${directory}/`);
}

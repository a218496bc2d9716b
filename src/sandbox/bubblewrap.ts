/**
 * Bubblewrap invocations, built as plain argv so that every confinement the server runs (the
 * host's unattended commands today, a per-tenant sandbox runner later) is one reviewed list of
 * flags. Two views of the file system:
 *
 *   read-only  an empty root with only the system entries and the visible paths bound read-only,
 *              a private /tmp (also HOME), no network
 *   writable   the host's own file system, writable, with the network shared
 *
 * Both get new PID, IPC, UTS and cgroup namespaces with a fresh /proc (no host process, no /proc
 * of the server), the hidden paths masked, a new session (no TIOCSTI into the server's terminal),
 * death with the parent, and exactly the environment given (--clearenv, then --setenv each).
 */
import type { SystemEntry } from './system-paths.ts';

export const DEFAULT_BUBBLEWRAP_PATH = '/usr/bin/bwrap';

/** The private scratch directory of the read-only view; HOME and TMPDIR point at it. */
export const CONFINED_SCRATCH = '/tmp';

export interface HiddenPath {
  path: string;
  /** a directory is covered by an empty tmpfs, a file by /dev/null */
  directory: boolean;
}

export interface BubblewrapInvocation {
  command: readonly string[];
  /** canonical; must lie inside a visible path in the read-only view */
  cwd: string;
  env: Readonly<Record<string, string>>;
  writable: boolean;
  /** read-only view: the directories shown besides the system entries (the workspace roots) */
  visible: readonly string[];
  /** masked in both views, e.g. the server's state dir, token file and models file */
  hidden: readonly HiddenPath[];
  /** read-only view: what /usr, /bin, /lib*, /etc/… look like on this host */
  system: readonly SystemEntry[];
}

const NAMESPACES = ['--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try'];
const LIFETIME = ['--die-with-parent', '--new-session'];

/** The arguments after the bwrap program, ending with `--` and the command. */
export function bubblewrapArguments(invocation: BubblewrapInvocation): string[] {
  const args = [...NAMESPACES, ...LIFETIME];
  if (invocation.writable) {
    args.push('--bind', '/', '/', '--dev-bind', '/dev', '/dev', '--proc', '/proc');
  } else {
    args.push('--unshare-net', '--proc', '/proc', '--dev', '/dev');
    for (const entry of invocation.system) {
      if (entry.symlink === null) args.push('--ro-bind', entry.path, entry.path);
      else args.push('--symlink', entry.symlink, entry.path);
    }
  }
  args.push(...layeredMounts(invocation));
  args.push('--clearenv');
  const env = invocation.writable ? invocation.env : { ...invocation.env, HOME: CONFINED_SCRATCH, TMPDIR: CONFINED_SCRATCH };
  for (const [name, value] of Object.entries(env)) args.push('--setenv', name, value);
  args.push('--chdir', invocation.cwd, '--', ...invocation.command);
  return args;
}

/**
 * The mounts that may nest inside one another (scratch, workspace roots, masks), outermost first:
 * a mask inside a root is laid over the root, and a root inside a masked directory is bound back
 * over the mask, so neither order of configuration hides the wrong thing.
 */
function layeredMounts(invocation: BubblewrapInvocation): string[] {
  const mounts: { target: string; args: string[] }[] = [];
  if (!invocation.writable) mounts.push({ target: CONFINED_SCRATCH, args: ['--tmpfs', CONFINED_SCRATCH] });
  const bind = invocation.writable ? '--bind' : '--ro-bind';
  const roots = invocation.writable ? invocation.visible.filter((root) => invocation.hidden.some((hidden) => isInside(root, hidden.path))) : invocation.visible;
  for (const root of roots) mounts.push({ target: root, args: [bind, root, root] });
  for (const hidden of maskedIn(invocation)) {
    mounts.push({ target: hidden.path, args: hidden.directory ? ['--tmpfs', hidden.path] : ['--ro-bind', '/dev/null', hidden.path] });
  }
  mounts.sort((a, b) => depth(a.target) - depth(b.target));
  return mounts.flatMap((mount) => mount.args);
}

/** In the read-only view only what lies inside a bound path can be seen, so only that needs a mask. */
function maskedIn(invocation: BubblewrapInvocation): readonly HiddenPath[] {
  if (invocation.writable) return invocation.hidden;
  const bound = [...invocation.visible, ...invocation.system.filter((entry) => entry.symlink === null).map((entry) => entry.path)];
  return invocation.hidden.filter((hidden) => bound.some((path) => isInside(hidden.path, path)));
}

function depth(path: string): number {
  return path.split('/').filter(Boolean).length;
}

function isInside(path: string, directory: string): boolean {
  return path === directory || path.startsWith(directory.endsWith('/') ? directory : `${directory}/`);
}

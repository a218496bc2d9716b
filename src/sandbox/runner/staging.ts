/**
 * Where a root runner's guest user can reach the workspace and home (guest-identity.ts): one
 * private mount namespace per runner, held by a small root process, in which the two directories
 * are bound onto empty, world-searchable directories of the runner's own. bwrap, running as the
 * guest's user, resolves its bind sources by path, and the parents of a tenant's directories
 * (its state root is 0700) are not that user's to search. Each command enters this namespace
 * (nsenter, which also drops it to the guest's user) before it joins the tenant's network. The
 * holder waits on its stdin: it ends with the runner, and its namespace with it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { HostIdentity } from './guest-identity.ts';
import type { Tools } from './tools.ts';
import { Unavailable } from './unavailable.ts';
import { GENERATED_ETC_FILES } from './guest-files.ts';

/**
 * `sh -c` script: bind $1 onto $2 (and $3 onto $4 when given), copy the generated /etc files of
 * $5 into a tmpfs on $6 (so the guest's mountinfo names them `/passwd` on a tmpfs, not by the
 * runner's temporary directory), say so, and wait for stdin to close.
 */
const BIND_THEN_HOLD = [
  'mount --bind "$1" "$2" || exit 125',
  'if [ -n "$3" ]; then mount --bind "$3" "$4" || exit 125; fi',
  'mount -t tmpfs -o mode=755,size=64k,nosuid,nodev,noexec agentd-etc "$6" || exit 125',
  `cp ${GENERATED_ETC_FILES.map((name) => `"$5/${name}"`).join(' ')} "$6/" || exit 125`,
  'echo in-place; read _',
].join('; ');

export interface Staging {
  /** where the guest's user finds the workspace and home inside the holder's mount namespace */
  workspace: string;
  home: string;
  /** the generated /etc files, on a tmpfs of the namespace's own */
  etc: string;
  /** the process holding the namespace: /proc/<pid>/ns/mnt is it */
  holderPid: number;
  /** the argv prefix that enters the namespace as the guest's user (no capability left) */
  enterAsGuest(identity: HostIdentity): string[];
  close(): void;
}

export async function startStaging(tools: Tools, directory: string, sources: { workspace: string; home: string | null }): Promise<Staging> {
  const workspace = join(directory, 'workspace');
  const home = join(directory, 'home');
  const etc = join(directory, 'etc');
  for (const target of [workspace, home, etc]) mkdirSync(target, { mode: 0o755 });
  const holder: ChildProcess = spawn(
    tools.unshare,
    ['--mount', '--propagation', 'private', '--', '/bin/sh', '-c', BIND_THEN_HOLD, 'sh', sources.workspace, workspace, sources.home ?? '', home, directory, etc],
    { stdio: ['pipe', 'pipe', 'pipe'], env: { PATH: '/usr/bin:/bin' } },
  );
  let stderr = '';
  holder.stderr!.on('data', (chunk) => (stderr += chunk));
  const inPlace = once(holder.stdout!, 'data').then(() => true);
  const ended = Promise.race([once(holder, 'exit'), once(holder, 'error')]).then(() => false);
  if (!(await Promise.race([inPlace, ended]))) {
    holder.kill('SIGKILL');
    throw new Unavailable('workspace', `cannot stage the workspace for the guest's user: ${stderr.trim() || 'the mount namespace holder ended'}`);
  }
  return {
    workspace,
    home,
    etc,
    holderPid: holder.pid!,
    enterAsGuest: (identity) => [tools.nsenter, '-t', String(holder.pid), '--mount', '-S', String(identity.uid), '-G', String(identity.gid), '--'],
    close: () => void holder.kill('SIGKILL'),
  };
}

/**
 * Which host user the guest is (CONTRACT.md §17: running as root changes nothing). An
 * unprivileged runner's guest is the runner's own user, the only one its user namespaces can map.
 * A root runner never lends the guest uid 0: the guest is the workspace's owner when that is not
 * root, else a dedicated unprivileged user (AGENTD_SANDBOX_HOST_UID, default 900000, its own
 * group), and before the first command the runner hands the workspace and home over to that
 * user with a confined chown (bubblewrap.ts handOverArguments), so files a root server or an
 * earlier root-mapped guest left there stay the guest's to change.
 */
import { statSync } from 'node:fs';
import { handOverArguments } from '../bubblewrap.ts';
import type { SystemEntry } from '../system-paths.ts';
import { runToEnd } from './run-to-end.ts';
import { Unavailable } from './unavailable.ts';

export const DEFAULT_GUEST_HOST_UID = 900_000;

export interface HostIdentity {
  uid: number;
  gid: number;
}

/** null: the runner is not root, and the guest stays the runner's user. */
export function guestHostIdentity(workspace: string, environment: NodeJS.ProcessEnv): HostIdentity | null {
  if (process.geteuid!() !== 0) return null;
  const owner = statSync(workspace);
  if (owner.uid !== 0) return { uid: owner.uid, gid: owner.gid === 0 ? owner.uid : owner.gid };
  const configured = environment.AGENTD_SANDBOX_HOST_UID;
  const uid = configured === undefined || configured === '' ? DEFAULT_GUEST_HOST_UID : Number(configured);
  if (!Number.isSafeInteger(uid) || uid <= 0 || uid >= 0xffff_ffff) {
    throw new Unavailable('workspace', `AGENTD_SANDBOX_HOST_UID must be a user id above 0, not ${configured}`);
  }
  return { uid, gid: uid };
}

/** `directories`: canonical paths of the workspace and home. Asynchronous: the runner prepares its network and staging meanwhile. */
export async function handOver(bwrap: string, system: readonly SystemEntry[], directories: readonly string[], identity: HostIdentity): Promise<void> {
  const result = await runToEnd(bwrap, handOverArguments(system, directories, identity.uid, identity.gid), { env: { PATH: '/usr/bin:/bin' }, timeoutMs: 120_000 });
  if (result.error || result.status !== 0) {
    throw new Unavailable('workspace', `cannot hand the workspace to the guest's host user ${identity.uid}: ${(result.error?.message ?? result.stderr).trim() || `exit ${result.status}`}`);
  }
}

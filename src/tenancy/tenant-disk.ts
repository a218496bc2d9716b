/**
 * A tenant sandbox's disk and inode quota (CONTRACT.md §17, docs/SANDBOX.md "Disk quota"): one
 * ext4 file system per tenant, in a sparse image file of `--sandbox-disk-quota` bytes made with
 * `--sandbox-inode-quota` inodes. The image and its mount point live in the tenant's state
 * directory (server-owned, 0700, never shown to a guest). The file system holds two directories:
 * `workspace`, bound onto the tenant's workspace root, and `home`, the guest's HOME. Past either
 * limit the kernel answers ENOSPC inside the guest; nothing else notices.
 *
 * Mounted in the host's mount namespace before the tenant's first runner starts (the runner binds
 * what it finds at the workspace root), so the server, the runner and the guest see one tree.
 * Because the guest's `/workspace` and `/home/agent` are bind mounts of directories of this file
 * system, its `/proc/self/mountinfo` names them `/workspace` and `/home` on a loop device: no host
 * path, no tenant id.
 *
 * Every step runs as a child process (mkfs.ext4, e2fsck, resize2fs, mount, cp), so the event loop
 * never waits on the disk.
 */
import { execFile } from 'node:child_process';
import { closeSync, existsSync, ftruncateSync, fstatSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { SandboxQuota } from '../config/config.ts';
import { diskUsers } from './disk-users.ts';

const run = promisify(execFile);

const DISK_IMAGE_NAME = 'sandbox-disk.ext4';
const DISK_MOUNT_NAME = 'sandbox-disk';
/** at the top of the file system, beside `workspace` and `home`: the room the tenant's revert content takes (workspace/revert-reservation.ts) */
export const REVERT_RESERVATION_NAME = 'revert-content';
/** where the guest's HOME lived before quotas; copied into a new image once */
const OLD_HOME_NAME = 'sandbox-home';

const TOOL_ENVIRONMENT = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', LANG: 'C' };
const TOOL_TIMEOUT_MS = 120_000;

export class TenantDiskError extends Error {}

export interface TenantDisk {
  /** the guest's HOME on the tenant's file system (the runner's `--home`) */
  home: string;
  /** whether the tenant's earlier workspace was copied in (the image was made now) */
  created: boolean;
  /** the image is larger than the quota asks (it is never shrunk); the size it keeps */
  keptLargerBytes: number | null;
  /**
   * stops using the file system; the last user of the machine unmounts the workspace bind and the
   * file system (lazily when something still holds them)
   */
  close(): Promise<void>;
}

async function tool(program: string, args: string[]): Promise<void> {
  try {
    await run(program, args, { env: TOOL_ENVIRONMENT, timeout: TOOL_TIMEOUT_MS, maxBuffer: 1024 * 1024 });
  } catch (error) {
    const failure = error as NodeJS.ErrnoException & { stderr?: string };
    const detail = failure.code === 'ENOENT' ? `${program} is not installed (Debian: e2fsprogs, mount)` : (failure.stderr?.trim() || failure.message).split('\n').slice(-2).join(' ');
    throw new TenantDiskError(`${program} ${args[0] ?? ''}: ${detail}`);
  }
}

/** Mount points of this namespace, decoded (`\040` and friends in /proc/self/mountinfo). */
function mountPoints(): Set<string> {
  const decode = (field: string) => field.replace(/\\([0-7]{3})/g, (_match, octal: string) => String.fromCharCode(parseInt(octal, 8)));
  return new Set(readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter(Boolean).map((line) => decode(line.split(' ')[4])));
}

async function unmount(target: string): Promise<void> {
  try {
    await tool('umount', [target]);
  } catch {
    // a process still working in it: detach now, the kernel frees it when the last one leaves
    await tool('umount', ['--lazy', target]);
  }
}

/** Makes the image: sparse, written under a temporary name and renamed once mkfs succeeded. */
async function createImage(image: string, quota: SandboxQuota): Promise<void> {
  const partial = `${image}.partial`;
  rmSync(partial, { force: true });
  const fd = openSync(partial, 'wx', 0o600);
  try {
    ftruncateSync(fd, quota.bytes);
  } finally {
    closeSync(fd);
  }
  // no blocks reserved for root (the guest is never root, the server writes nothing there)
  await tool('mkfs.ext4', ['-q', '-F', '-N', String(quota.inodes), '-m', '0', '-E', 'root_owner=0:0,lazy_itable_init=1,lazy_journal_init=1', partial]);
  renameSync(partial, image);
}

/** Grows a smaller image to the quota (offline: e2fsck, then resize2fs); a larger one is kept. */
async function growImage(image: string, bytes: number): Promise<number | null> {
  const size = statSync(image).size;
  if (size > bytes) return size;
  if (size === bytes) return null;
  const fd = openSync(image, 'r+');
  try {
    if (!fstatSync(fd).isFile()) throw new TenantDiskError(`${image} is not a regular file`);
    ftruncateSync(fd, bytes);
  } finally {
    closeSync(fd);
  }
  await tool('e2fsck', ['-f', '-p', image]);
  await tool('resize2fs', [image]);
  return null;
}

/**
 * Mounts the tenant's file system and binds its `workspace` onto `workspaceRoot`, or, when another
 * agentd of this machine (an instance of a cluster on the same tenant state root) uses it already,
 * uses its mounts; the last user to close unmounts (disk-users.ts). A new image receives what the
 * workspace root and the old guest HOME held (cp -a, links copied as links; the originals stay
 * beneath the mount). Mounts left by a server that died, with no user left, are undone first.
 */
export async function mountTenantDisk(stateDir: string, workspaceRoot: string, quota: SandboxQuota): Promise<TenantDisk> {
  const mountPoint = join(stateDir, DISK_MOUNT_NAME);
  const users = await diskUsers(stateDir);
  const close = () =>
    users.exclusively(async (section) => {
      section.stopUsing();
      if (section.othersUse()) return;
      await unmount(workspaceRoot);
      await unmount(mountPoint);
    });
  return users.exclusively(async (section) => {
    const mounted = mountPoints();
    if (section.othersUse() && mounted.has(mountPoint) && mounted.has(workspaceRoot)) {
      // mounted by another instance, which goes on using it: not remounted, so neither grown
      section.startUsing();
      const size = statSync(join(stateDir, DISK_IMAGE_NAME)).size;
      return { home: join(mountPoint, 'home'), created: false, keptLargerBytes: size > quota.bytes ? size : null, close };
    }
    const disk = await mountImage(stateDir, workspaceRoot, quota, mounted);
    section.startUsing();
    return { ...disk, close };
  });
}

async function mountImage(stateDir: string, workspaceRoot: string, quota: SandboxQuota, stale: Set<string>): Promise<Omit<TenantDisk, 'close'>> {
  const image = join(stateDir, DISK_IMAGE_NAME);
  const mountPoint = join(stateDir, DISK_MOUNT_NAME);
  for (const target of [workspaceRoot, mountPoint]) if (stale.has(target)) await unmount(target);

  const created = !existsSync(image);
  const keptLargerBytes = created ? (await createImage(image, quota), null) : await growImage(image, quota.bytes);
  mkdirSync(mountPoint, { recursive: true, mode: 0o700 });
  await tool('mount', ['-t', 'ext4', '-o', 'loop,nosuid,nodev', image, mountPoint]);
  try {
    const workspace = join(mountPoint, 'workspace');
    const home = join(mountPoint, 'home');
    if (created) {
      mkdirSync(workspace, { mode: 0o755 });
      mkdirSync(home, { mode: 0o700 });
      // no runner of the tenant runs yet, so nothing changes the trees while they are copied
      await tool('cp', ['-a', '--no-target-directory', `${workspaceRoot}/.`, workspace]);
      const oldHome = join(stateDir, OLD_HOME_NAME);
      if (existsSync(oldHome)) await tool('cp', ['-a', '--no-target-directory', `${oldHome}/.`, home]);
    }
    await tool('mount', ['--bind', workspace, workspaceRoot]);
    return { home, created, keptLargerBytes };
  } catch (error) {
    await unmount(mountPoint).catch(() => {});
    // a copy that did not fit leaves no half-filled image behind to be mounted next time
    if (created) rmSync(image, { force: true });
    throw error;
  }
}

/**
 * Who uses a tenant's mounted file system (tenant-disk.ts) on this machine. Instances of a cluster
 * that share a tenant state root share its mounts: the first to start mounts, the others use what
 * is mounted, and only the last to stop unmounts (docs/CLUSTER.md, "Multi-tenant clusters").
 *
 * Both are kernel locks (store/file-lock.ts), so a process that dies (kill -9 included) lets go of
 * them at once and a count never leaks, on two files in the tenant's state dir:
 * - `sandbox-disk.mutex`: held while one instance mounts or unmounts, or decides to (an exclusive
 *   lock, polled for: the holder runs mkfs, cp or umount, which may take seconds);
 * - `sandbox-disk.users`: each user holds a shared lock for as long as it uses the mounts. Under
 *   the mutex, an exclusive lock granted on it proves that no other process uses them.
 * A machine's instances see one mount table, so the database, which instances on other machines
 * share too, is not the place for this count.
 */
import type SQLite from 'better-sqlite3';
import { join } from 'node:path';
import { holdLock, releaseLock, tryLockFile } from '../store/file-lock.ts';

const MUTEX_NAME = 'sandbox-disk.mutex';
const USERS_NAME = 'sandbox-disk.users';
const POLL_MS = 50;
/** longer than a mount of a new image (mkfs, copy of the workspace) or an unmount can take */
const MUTEX_WAIT_MS = 10 * 60_000;

export class DiskUsersError extends Error {}

async function driver(): Promise<typeof SQLite> {
  return (await import('better-sqlite3')).default;
}

/** The lock of `file` (an empty table makes it a database), or null when another process holds it. */
function tryExclusive(SQLiteDatabase: typeof SQLite, file: string): SQLite.Database | null {
  return tryLockFile(SQLiteDatabase, file, (locked) => locked.exec('create table if not exists lock (held integer)'));
}

export interface DiskSection {
  /** whether another process uses the tenant's mounts now (this one's own use left out) */
  othersUse(): boolean;
  /** this process uses the mounts from now on, until `stopUsing` */
  startUsing(): void;
  /** this process no longer uses the mounts */
  stopUsing(): void;
  /** lets the next instance mount or unmount */
  leave(): void;
}

export interface DiskUsers {
  /** runs `work` while no other instance of this machine mounts or unmounts the tenant's file system */
  exclusively<T>(work: (section: DiskSection) => Promise<T>): Promise<T>;
}

export async function diskUsers(stateDir: string): Promise<DiskUsers> {
  const SQLiteDatabase = await driver();
  const mutexFile = join(stateDir, MUTEX_NAME);
  const usersFile = join(stateDir, USERS_NAME);
  let use: SQLite.Database | null = null;

  const takeMutex = async (): Promise<SQLite.Database> => {
    for (const deadline = Date.now() + MUTEX_WAIT_MS; ; ) {
      const mutex = tryExclusive(SQLiteDatabase, mutexFile);
      if (mutex) return mutex;
      if (Date.now() > deadline) throw new DiskUsersError(`${mutexFile} stayed locked by another agentd for ${MUTEX_WAIT_MS / 1000} s`);
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
  };

  return {
    async exclusively(work) {
      const mutex = await takeMutex();
      const section: DiskSection = {
        othersUse() {
          const hadUse = use !== null;
          // this process's own shared lock would refuse the probe too
          section.stopUsing();
          const probe = tryExclusive(SQLiteDatabase, usersFile);
          if (probe) releaseLock(probe);
          if (hadUse) section.startUsing();
          return probe === null;
        },
        startUsing() {
          if (use) return;
          const database = new SQLiteDatabase(usersFile);
          try {
            database.pragma('busy_timeout = 0');
            // in exclusive locking mode the shared lock of a read is kept until the connection closes
            database.pragma('locking_mode = EXCLUSIVE');
            database.prepare('select count(*) from sqlite_master').get();
          } catch (error) {
            database.close();
            throw error;
          }
          use = holdLock(database);
        },
        stopUsing() {
          if (use) releaseLock(use);
          use = null;
        },
        leave() {
          releaseLock(mutex);
        },
      };
      try {
        return await work(section);
      } finally {
        section.leave();
      }
    },
  };
}

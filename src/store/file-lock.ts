/**
 * A kernel lock on a file that its holder's death releases, kill -9 included. Node has no flock,
 * so it is SQLite's own (POSIX record) lock: a small SQLite file opened in exclusive locking mode
 * and written once keeps its write lock until the connection closes. Used by the single-writer
 * claim (database-claim.ts) and by the users of a tenant's mounts (tenancy/disk-users.ts).
 */
import type SQLite from 'better-sqlite3';

/**
 * The locks this process holds. A lock lasts until it is released, not until the garbage collector
 * finds its connection unreachable: a collected connection is closed, and its lock goes with it.
 */
const held = new Set<SQLite.Database>();

/** Keeps the lock of `database` (an open connection holding one) until releaseLock. */
export function holdLock(database: SQLite.Database): SQLite.Database {
  held.add(database);
  return database;
}

/** Lets go of a lock taken by tryLockFile or kept by holdLock; a second release does nothing. */
export function releaseLock(database: SQLite.Database): void {
  held.delete(database);
  if (database.open) database.close();
}

/**
 * Opens `file` and takes its exclusive lock, kept until the returned connection is released; null
 * when another process holds a lock on it. `write` runs inside the locking transaction (what the
 * holder records about itself).
 */
export function tryLockFile(SQLiteDatabase: typeof SQLite, file: string, write: (locked: SQLite.Database) => void = () => {}): SQLite.Database | null {
  const database = new SQLiteDatabase(file);
  try {
    database.pragma('busy_timeout = 0');
    database.pragma('locking_mode = EXCLUSIVE');
    database.pragma('journal_mode = MEMORY');
    database.exec('begin exclusive');
    write(database);
    database.exec('commit');
    return holdLock(database);
  } catch (error) {
    database.close();
    if ((error as { code?: string }).code === 'SQLITE_BUSY') return null;
    throw error;
  }
}

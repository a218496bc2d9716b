/**
 * A kernel lock on a file that its holder's death releases, kill -9 included. Node has no flock,
 * so it is SQLite's own (POSIX record) lock: a small SQLite file opened in exclusive locking mode
 * and written once keeps its write lock until the connection closes. Used by the single-writer
 * claim (database-claim.ts) and by the users of a tenant's mounts (tenancy/disk-users.ts).
 */
import type SQLite from 'better-sqlite3';

/**
 * Opens `file` and takes its exclusive lock, kept until the returned connection is closed; null
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
    return database;
  } catch (error) {
    database.close();
    if ((error as { code?: string }).code === 'SQLITE_BUSY') return null;
    throw error;
  }
}

/**
 * One agentd per database, unless every process on it is an instance of a cluster (CONTRACT.md
 * §18). A claim is a lock the operating system or PostgreSQL drops with its holder, kill -9
 * included, so a dead process never keeps its successor out. docs/CLUSTER.md says what it rests on.
 */
import type SQLite from 'better-sqlite3';
import type pg from 'pg';
import { releaseLock, tryLockFile } from './file-lock.ts';
import { dropPgClient, withDeadline } from './session-deadlines.ts';

/** 'sole': the only agentd on the database; 'cluster': one of the instances started with --cluster. */
export type ClaimMode = 'sole' | 'cluster';

export class DatabaseInUse extends Error {}

export interface DatabaseClaim {
  /**
   * No other agentd was on the database when this one claimed it (always so for a sole claim): a
   * turn found active was left by a process that is gone. Until admitOthers, none can join.
   */
  readonly alone: boolean;
  /** Lets other instances of the cluster join, once start-up has dealt with what the dead left. */
  admitOthers(): Promise<void>;
  /**
   * Another instance of the cluster holds the database now (SIGTERM hands turns over only then).
   * Always false for a sole claim; true when it cannot be told (the database unreachable): the
   * turns are then left to their leases, which any instance started later takes over.
   */
  othersPresent(): Promise<boolean>;
  release(): Promise<void>;
}

/** What Kysely's PostgreSQL driver needs of a connection it was lent. */
interface LentConnection {
  query: pg.Client['query'];
  release(): void;
  /** ends the connection at once (a query past its deadline): the claim is taken again on a new one */
  drop(): void;
}

/**
 * A PostgreSQL claim's connection is open as long as the claim is held, so it serves queries too
 * (store/database.ts lends it before the pool's): a tenant runtime's start then makes one
 * connection, not two, and a PostgreSQL connection costs its server about 4 ms of CPU.
 */
export interface PostgresClaim extends DatabaseClaim {
  /** The claim's connection while nothing else uses it and it is up; null otherwise (take the pool's). */
  lend(): LentConnection | null;
}

export interface PostgresClaimOptions {
  mode: ClaimMode;
  /** Called once if the claim's connection was lost and another agentd holds the database now. */
  onLost(error: DatabaseInUse): void;
  /** settings of the claim's connection (a cluster's deadlines, session-deadlines.ts) */
  session?: Partial<pg.ClientConfig>;
}

/**
 * The SQLite claim is a second SQLite file beside the database, opened in exclusive locking mode
 * and written once: SQLite then holds its write lock until the connection closes, and the kernel
 * drops it when the process ends. (A lock on the database file itself would keep out every other
 * reader, an operator's sqlite3 and a backup included; the database runs in WAL mode.)
 */
export function claimSqliteFile(SQLiteDatabase: typeof SQLite, databaseFile: string): DatabaseClaim {
  const file = tryLockFile(SQLiteDatabase, `${databaseFile}.lock`, (locked) => {
    locked.exec('create table if not exists holder (pid integer not null, since text not null)');
    locked.exec('delete from holder');
    locked.prepare('insert into holder (pid, since) values (?, ?)').run(process.pid, new Date().toISOString());
  });
  if (!file) throw new DatabaseInUse(`${databaseFile} is in use by another agentd (one process per SQLite database; several instances need --cluster on PostgreSQL)`);
  return {
    alone: true,
    admitOthers: async () => {},
    othersPresent: async () => false,
    release: async () => {
      releaseLock(file);
    },
  };
}

/** An advisory lock key of agentd's own: "agnt" and 1. Advisory locks are per database. */
const LOCK_CLASS = 0x61676e74;
const LOCK_MEMBERSHIP = 1;
/** The claim's own questions (SIGTERM asks whether others are present) wait no longer for an answer. */
const CLAIM_QUERY_DEADLINE_MS = 5_000;
/** A lone instance holds the database alone while it ends what a dead process left: a joiner waits this long. */
const JOIN_WAIT_MS = 5_000;
const JOIN_RETRY_MS = 100;
const RECLAIM_INTERVAL_MS = 1_000;

/**
 * The PostgreSQL claim is a session-level advisory lock on a connection of its own: exclusive for a
 * sole agentd, shared for an instance of a cluster, so the two kinds keep each other out both ways.
 * It ends with the connection. If the connection is lost (a database restart) it is taken again on
 * a new one; if another agentd got in first, onLost tells the server to stand down.
 */
export async function claimPostgres(Pg: typeof pg, url: string, options: PostgresClaimOptions): Promise<PostgresClaim> {
  const databaseName = decodeURIComponent(new URL(url).pathname.slice(1)) || 'postgres';
  const inUse = () =>
    new DatabaseInUse(
      options.mode === 'sole'
        ? `PostgreSQL database ${databaseName} is in use by another agentd (one process per database; several instances all need --cluster)`
        : `PostgreSQL database ${databaseName} is in use by another agentd started without --cluster`,
    );
  const connect = async () => {
    const client = new Pg.Client({ connectionString: url, connectionTimeoutMillis: 5000, keepAlive: true, ...options.session });
    // without a listener a lost connection is an uncaught exception; 'end' follows and is handled
    client.on('error', () => {});
    try {
      await client.connect();
    } catch (error) {
      client.end().catch(() => {});
      throw error;
    }
    return client;
  };
  const tryLock = async (client: pg.Client, kind: 'shared' | 'exclusive') => {
    const name = kind === 'shared' ? 'pg_try_advisory_lock_shared' : 'pg_try_advisory_lock';
    const result = await client.query<{ locked: boolean }>(`select ${name}($1, $2) as locked`, [LOCK_CLASS, LOCK_MEMBERSHIP]);
    return result.rows[0]!.locked;
  };
  const takeMembership = async (client: pg.Client, waitMs: number) => {
    const kind = options.mode === 'sole' ? 'exclusive' : 'shared';
    for (const deadline = Date.now() + waitMs; ; ) {
      if (await tryLock(client, kind)) return true;
      // a sole agentd never waits; a joiner waits out a lone instance's start-up
      if (kind === 'exclusive' || Date.now() >= deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, JOIN_RETRY_MS));
    }
  };

  let client = await connect();
  let alone: boolean;
  try {
    if (!(await takeMembership(client, JOIN_WAIT_MS))) throw inUse();
    // holding the shared lock, the exclusive one is granted only when no other instance holds it
    alone = options.mode === 'sole' || (await tryLock(client, 'exclusive'));
  } catch (error) {
    await client.end().catch(() => {});
    throw error;
  }

  let released = false;
  let holdsExclusive = options.mode === 'cluster' && alone;
  // The connection is lent to one user at a time: a query of the store's, or the claim's own.
  let up = true;
  let lent = false;
  const waitingForIt: (() => void)[] = [];
  const giveBack = () => {
    lent = false;
    waitingForIt.shift()?.();
  };
  const withConnection = async <T>(work: (connection: pg.Client) => Promise<T>): Promise<T> => {
    while (lent) await new Promise<void>((resolve) => waitingForIt.push(resolve));
    lent = true;
    try {
      return await work(client);
    } finally {
      giveBack();
    }
  };
  const watch = (watched: pg.Client) =>
    watched.once('end', () => {
      up = false;
      if (!released) void reclaim();
    });
  const reclaim = async () => {
    holdsExclusive = false;
    while (!released) {
      await new Promise((resolve) => setTimeout(resolve, RECLAIM_INTERVAL_MS));
      if (released) return;
      let next: pg.Client;
      try {
        next = await connect();
      } catch {
        continue;
      }
      try {
        if (await takeMembership(next, 0)) {
          if (released) await next.end().catch(() => {});
          else {
            client = next;
            up = true;
            watch(next);
          }
          return;
        }
        await next.end().catch(() => {});
        released = true;
        options.onLost(inUse());
        return;
      } catch {
        await next.end().catch(() => {});
      }
    }
  };
  watch(client);

  return {
    alone,
    lend() {
      if (lent || !up || released) return null;
      lent = true;
      const connection = client;
      let returned = false;
      return {
        query: connection.query.bind(connection) as pg.Client['query'],
        release: () => {
          if (returned) return;
          returned = true;
          giveBack();
        },
        drop: () => dropPgClient(connection),
      };
    },
    async admitOthers() {
      if (!holdsExclusive) return;
      holdsExclusive = false;
      // a lost connection has let go of it already
      await withConnection((connection) => connection.query('select pg_advisory_unlock($1, $2)', [LOCK_CLASS, LOCK_MEMBERSHIP])).catch(() => {});
    },
    async othersPresent() {
      if (options.mode === 'sole' || holdsExclusive) return false;
      try {
        const asking = withConnection(async (connection) => {
          // holding the shared lock, the exclusive one is granted only when no other instance holds it
          if (!(await tryLock(connection, 'exclusive'))) return true;
          await connection.query('select pg_advisory_unlock($1, $2)', [LOCK_CLASS, LOCK_MEMBERSHIP]);
          return false;
        });
        // cut off from the database: unknown, so the turns are left to their leases
        return await withDeadline(asking, CLAIM_QUERY_DEADLINE_MS, () => dropPgClient(client));
      } catch {
        return true;
      }
    },
    async release() {
      if (released) return;
      released = true;
      await client.end().catch(() => {});
    },
  };
}

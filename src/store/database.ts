import { mkdirSync } from 'node:fs';
import type SQLite from 'better-sqlite3';
import type pg from 'pg';
import { join } from 'node:path';
import { Kysely, Migrator, PostgresDialect, SqliteDialect, sql, type SqliteDatabase, type SqliteStatement } from 'kysely';
import type { Database } from './schema.ts';
import { migrationProvider } from './migrations.ts';
import { postgresDoorbell, type Doorbell } from './doorbell.ts';
import { claimPostgres, claimSqliteFile, type ClaimMode, type DatabaseClaim, type DatabaseInUse, type PostgresClaim } from './database-claim.ts';
import { clusterSessionConfig, dropPgClient, poolWithDeadlines, queryDeadlineMs, type DroppableClient } from './session-deadlines.ts';
import { connectOnceMore } from './unavailable.ts';

export type Db = Kysely<Database>;

/** Runs `work` in a transaction of its own, or in the caller's when `db` already is one. */
export function inTransaction<T>(db: Db, work: (trx: Db) => Promise<T>): Promise<T> {
  return db.isTransaction ? work(db) : db.transaction().execute(work);
}

export interface Store {
  db: Db;
  backend: 'sqlite' | 'postgres';
  /** this process's hold on the database (database-claim.ts); null when opened without one */
  claim: DatabaseClaim | null;
  /** PostgreSQL's LISTEN/NOTIFY for the instances of a cluster (doorbell.ts); null on SQLite */
  doorbell: Doorbell | null;
  /** A cheap round trip that fails when the database cannot answer. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export interface StoreOptions {
  databaseUrl: string | null;
  stateDir: string;
  /** PostgreSQL pool size (default 10); a tenant's runtime takes a smaller share of the server */
  maxConnections?: number;
  /** false: the schema is known to be current (a tenant database migrated at provisioning) */
  migrate?: boolean;
  /**
   * Claim the database before touching it: refused with DatabaseInUse while another agentd holds
   * it. onLost: the claim was lost and another agentd holds the database now (PostgreSQL only).
   */
  claim?: { mode: ClaimMode; onLost(error: DatabaseInUse): void };
  /**
   * --cluster on PostgreSQL: every session and query is bounded by the turn lease, so that a
   * partition ends within it (session-deadlines.ts).
   */
  leaseMs?: number;
}

/** Opens the configured backend and applies pending migrations. */
export async function openStore(options: StoreOptions): Promise<Store> {
  // Each driver is loaded only when used: start-up pays for one of them.
  const store = options.databaseUrl ? await openPostgres(options.databaseUrl, options.maxConnections ?? 10, options.claim, options.leaseMs) : await openSqlite(options.stateDir, options.claim);
  if (options.migrate === false) return store;
  try {
    await migrate(store.db);
  } catch (error) {
    await store.close();
    throw error;
  }
  return store;
}

/**
 * The drivers are agentd's optionalDependencies: a project that installs agentd only for its SDK
 * does without them, so a server started there says what is missing instead of a resolver error.
 */
async function loadDriver<Module>(name: 'better-sqlite3' | 'pg', load: () => Promise<Module>): Promise<Module> {
  try {
    return await load();
  } catch (error) {
    if ((error as { code?: string }).code !== 'ERR_MODULE_NOT_FOUND' || !String((error as Error).message).includes(`'${name}'`)) throw error;
    const use = name === 'pg' ? 'PostgreSQL (--database-url)' : 'the embedded SQLite database';
    throw new Error(`${use} needs the package ${name}, an optional dependency of agentd that is not installed here (npm ci installs it; or npm install ${name})`);
  }
}

async function openSqlite(stateDir: string, claiming: StoreOptions['claim']): Promise<Store> {
  const { default: SQLite } = await loadDriver('better-sqlite3', () => import('better-sqlite3'));
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const databaseFile = join(stateDir, 'agentd.sqlite');
  if (claiming?.mode === 'cluster') throw new Error('SQLite cannot cluster');
  const claim = claiming ? claimSqliteFile(SQLite, databaseFile) : null;
  let file: SQLite.Database;
  try {
    file = new SQLite(databaseFile);
    file.pragma('journal_mode = WAL');
    file.pragma('synchronous = NORMAL');
    file.pragma('busy_timeout = 5000');
    file.pragma('foreign_keys = ON');
  } catch (error) {
    await claim?.release();
    throw error;
  }
  return storeOver(new Kysely<Database>({ dialect: new SqliteDialect({ database: withStatementCache(file) }) }), 'sqlite', claim, null);
}

/** Enough for every query shape the store builds; the oldest is dropped beyond it. */
const STATEMENT_CACHE_SIZE = 256;

/**
 * Kysely's SQLite driver prepares every query anew, and preparing costs more than running a
 * primary-key lookup. Statements are reusable (we never stream, which would hold one busy), so
 * each SQL text is prepared once. The store's queries are all prepared after the migrations, so
 * no cached statement outlives a schema change.
 */
function withStatementCache(file: SQLite.Database): SqliteDatabase {
  const statements = new Map<string, SqliteStatement>();
  return {
    close: () => file.close(),
    prepare(text: string) {
      let statement = statements.get(text);
      if (statement === undefined) {
        statement = prepareStatement(file, text);
        if (statements.size >= STATEMENT_CACHE_SIZE) statements.delete(statements.keys().next().value!);
        statements.set(text, statement);
      }
      return statement;
    },
  };
}

/**
 * better-sqlite3 builds each result row key by key, which costs more than reading the row: a
 * 50-session page took twice as long as with rows read as arrays. So queries read arrays, and a
 * function made for the statement's columns turns each into an object of one fixed shape.
 */
function prepareStatement(file: SQLite.Database, text: string): SqliteStatement {
  const statement = file.prepare(text);
  if (!statement.reader) return statement;
  statement.raw(true);
  const toRow = rowBuilder(statement.columns().map((column) => column.name));
  return {
    reader: true,
    all: (parameters) => (statement.all(parameters) as unknown[][]).map(toRow),
    run: (parameters) => statement.run(parameters),
    *iterate(parameters) {
      for (const values of statement.iterate(parameters)) yield toRow(values as unknown[]);
    },
  };
}

/** `(values) => ({ "id": values[0], … })` for these column names (our own SQL's; quoted as JSON). */
function rowBuilder(columns: string[]): (values: unknown[]) => Record<string, unknown> {
  const fields = columns.map((name, index) => `${JSON.stringify(name)}: values[${index}]`);
  return new Function('values', `return { ${fields.join(', ')} };`) as (values: unknown[]) => Record<string, unknown>;
}

async function openPostgres(url: string, maxConnections: number, claiming: StoreOptions['claim'], leaseMs: number | undefined): Promise<Store> {
  const { default: pg } = await loadDriver('pg', () => import('pg'));
  // PostgreSQL returns bigint (int8) as a string by default; our counters fit in a double.
  pg.types.setTypeParser(20, (value: string) => Number.parseInt(value, 10));
  const session = leaseMs === undefined ? {} : clusterSessionConfig(leaseMs);
  const pool = new pg.Pool({ connectionString: url, max: maxConnections, connectionTimeoutMillis: 5000, ...session });
  // An idle client that loses its server must not crash the process.
  pool.on('error', () => {});
  // Nor may one that is checked out (between the statements of a transaction): without a listener
  // its 'error' is an uncaught exception. The statement in flight still fails on its own.
  pool.on('connect', (client) => client.on('error', () => {}));
  let claim: PostgresClaim | null;
  try {
    claim = claiming ? await claimPostgres(pg, url, { ...claiming, session }) : null;
  } catch (error) {
    await pool.end();
    throw error;
  }
  const connect = claimFirst(claim, pool);
  const connections = leaseMs === undefined ? { connect, end: () => pool.end() } : poolWithDeadlines(connect, () => pool.end(), queryDeadlineMs(leaseMs));
  return storeOver(new Kysely<Database>({ dialect: new PostgresDialect({ pool: connections }) }), 'postgres', claim, postgresDoorbell(pg, url, connections, session));
}

/**
 * The store's queries take the claim's connection when it is free (it stays open for the claim
 * anyway), and the pool's beyond it: a store used one query at a time, as a tenant's runtime is
 * on its first request, opens no second connection. A connection that fails to open for a
 * passing reason is tried once more (unavailable.ts).
 */
function claimFirst(claim: PostgresClaim | null, pool: pg.Pool): () => Promise<DroppableClient> {
  return async () => {
    const lent = claim?.lend();
    if (lent) return lent;
    const client = await connectOnceMore(() => pool.connect());
    return Object.assign(client, { drop: () => dropPgClient(client) });
  };
}

function storeOver(db: Db, backend: Store['backend'], claim: DatabaseClaim | null, doorbell: Doorbell | null): Store {
  return {
    db,
    backend,
    claim,
    doorbell,
    async ping() {
      await sql`select 1`.execute(db);
    },
    async close() {
      // the claim goes last: nothing of this process touches the database after it
      await db.destroy();
      await claim?.release();
    },
  };
}

async function migrate(db: Db): Promise<void> {
  // Migration numbers are handed out ahead of their landing, so a database may have run a later one
  // before an earlier one arrives: each is applied once, whatever the order.
  const migrator = new Migrator({ db, provider: migrationProvider, allowUnorderedMigrations: true });
  const { error } = await migrator.migrateToLatest();
  if (error) throw error;
}

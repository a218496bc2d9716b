/**
 * node:sqlite (built into Node 22.5+) against better-sqlite3 on the turn path: the statements a
 * turn runs (bench/store-statements.ts: the POST's session read and `queued` insert, the terminal
 * transaction, a session every 10 turns), through Kysely as agentd runs them, on one SQLite file
 * each, in this process. Both drivers get what src/store/database.ts gives better-sqlite3: WAL,
 * synchronous=NORMAL, statements prepared once and rows read as arrays. Rounds alternate between
 * the drivers, each on a fresh database; prints CPU and wall time per turn for each round.
 *
 *   node --import tsx bench/sqlite-drivers.ts     (BENCH_TURNS turns per round after 1,000 to warm
 *                                                  up, default 5,000; BENCH_ROUNDS, default 3)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { Kysely, SqliteDialect, type SqliteDatabase, type SqliteStatement } from 'kysely';
import { agentdRoot } from './support/children.ts';
import { fixed, printFigure, runIfMain, whole } from './support/report.ts';
import { loadStore, runTurns } from './store-statements.ts';
import type { Database } from '../src/store/schema.ts';
import type { Db } from '../src/store/database.ts';

type Driver = 'better-sqlite3' | 'node:sqlite';

/** node:sqlite behind Kysely's SqliteDatabase, with the statement cache and array rows of database.ts. */
function nodeSqliteDatabase(file: DatabaseSync): SqliteDatabase {
  const statements = new Map<string, SqliteStatement>();
  return {
    close: () => file.close(),
    prepare(text: string) {
      let statement = statements.get(text);
      if (statement === undefined) statements.set(text, (statement = prepare(file, text)));
      return statement;
    },
  };
}

function prepare(file: DatabaseSync, text: string): SqliteStatement {
  const statement: StatementSync = file.prepare(text);
  const columns = statement.columns().map((column) => column.name);
  const run = (parameters: readonly unknown[]) => statement.run(...(parameters as never[]));
  if (columns.length === 0) return { reader: false, all: () => [], run, iterate: () => [][Symbol.iterator]() };
  statement.setReturnArrays(true);
  const toRow = new Function('values', `return { ${columns.map((name, index) => `${JSON.stringify(name)}: values[${index}]`).join(', ')} };`) as (values: unknown[]) => unknown;
  return {
    reader: true,
    all: (parameters) => (statement.all(...(parameters as never[])) as unknown as unknown[][]).map(toRow),
    run,
    *iterate(parameters) {
      for (const values of statement.iterate(...(parameters as never[]))) yield toRow(values as unknown as unknown[]);
    },
  };
}

/** A migrated database in a fresh state dir, opened over `driver`. */
async function openOver(driver: Driver, modules: Awaited<ReturnType<typeof loadStore>>, stateDir: string): Promise<{ db: Db; close: () => Promise<void> }> {
  // agentd's own openStore creates and migrates the file (with better-sqlite3)
  const store = await modules.database.openStore({ databaseUrl: null, stateDir });
  if (driver === 'better-sqlite3') return { db: store.db, close: () => store.close() };
  await store.close();
  const file = new DatabaseSync(join(stateDir, 'agentd.sqlite'));
  for (const pragma of ['journal_mode = WAL', 'synchronous = NORMAL', 'busy_timeout = 5000', 'foreign_keys = ON']) file.exec(`PRAGMA ${pragma}`);
  const db = new Kysely<Database>({ dialect: new SqliteDialect({ database: nodeSqliteDatabase(file) }) });
  return { db, close: () => db.destroy() };
}

runIfMain(import.meta.url, async () => {
  const root = agentdRoot();
  const turns = Number(process.env.BENCH_TURNS ?? 5_000);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
  const modules = await loadStore(root);
  const perTurn: Record<Driver, number[]> = { 'better-sqlite3': [], 'node:sqlite': [] };
  for (let round = 1; round <= rounds; round++) {
    for (const driver of (round % 2 === 1 ? ['better-sqlite3', 'node:sqlite'] : ['node:sqlite', 'better-sqlite3']) as Driver[]) {
      const stateDir = mkdtempSync(join(tmpdir(), 'agentd-bench-driver-'));
      const { db, close } = await openOver(driver, modules, stateDir);
      try {
        await runTurns(modules, db, 1000);
        const cpuBefore = process.cpuUsage();
        const startedAt = performance.now();
        await runTurns(modules, db, turns);
        const elapsedMs = performance.now() - startedAt;
        const cpu = process.cpuUsage(cpuBefore);
        const cpuMs = (cpu.user + cpu.system) / 1000 / turns;
        perTurn[driver].push(cpuMs);
        printFigure({
          name: `Store statements of a turn on ${driver}, round ${round}`,
          value: `${fixed(cpuMs, 3)} ms CPU per turn`,
          detail: `${whole(turns)} turns in ${fixed(elapsedMs / 1000, 2)} s (${whole((turns * 1000) / elapsedMs)}/s); node ${process.version}`,
        });
      } finally {
        await close();
        rmSync(stateDir, { recursive: true, force: true });
      }
    }
  }
  const best = (driver: Driver) => Math.min(...perTurn[driver]);
  printFigure({
    name: 'node:sqlite against better-sqlite3, best round each',
    value: `${fixed(best('node:sqlite'), 3)} / ${fixed(best('better-sqlite3'), 3)} ms CPU per turn (${fixed((best('node:sqlite') / best('better-sqlite3') - 1) * 100)}%)`,
  });
});

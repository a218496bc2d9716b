/**
 * A preload for a benchmark's agentd child (`node --import <this file> bin/agentd.js …`): counts
 * the SQLite statements the process runs and the commits they make, by wrapping better-sqlite3's
 * statement methods. Nothing in agentd loads it; the production path pays nothing for it.
 *
 * On SIGUSR2 the totals so far are written synchronously to $BENCH_SQL_COUNT_FILE as JSON:
 *   { seq, statements, commits, bySql: { "<sql>": count } }
 * where seq counts the signals received, so a reader knows the file answers its own signal.
 */
import { createRequire } from 'node:module';
import { writeFileSync } from 'node:fs';

const require = createRequire(import.meta.url);
const SQLite = require('better-sqlite3');

const counts = { seq: 0, statements: 0, commits: 0, bySql: Object.create(null) };

const probe = new SQLite(':memory:');
const Statement = Object.getPrototypeOf(probe.prepare('select 1'));
probe.close();

for (const method of ['run', 'get', 'all', 'iterate']) {
  const original = Statement[method];
  Statement[method] = function counted(...parameters) {
    count(this);
    return original.apply(this, parameters);
  };
}

function count(statement) {
  const sql = statement.source;
  counts.statements += 1;
  counts.bySql[sql] = (counts.bySql[sql] ?? 0) + 1;
  if (/^\s*commit\b/i.test(sql)) counts.commits += 1;
  // A write outside a transaction commits on its own.
  else if (!statement.reader && !statement.database.inTransaction && !/^\s*(begin|rollback|pragma)\b/i.test(sql)) counts.commits += 1;
}

const file = process.env.BENCH_SQL_COUNT_FILE;
if (file) {
  process.on('SIGUSR2', () => {
    counts.seq += 1;
    writeFileSync(file, JSON.stringify(counts));
  });
}

// A PostgreSQL claim's connection serves the store's queries too (store/database.ts, claimFirst):
// a store used one query at a time opens one connection, not two, while the claim keeps others out
// and the store keeps answering when the claim's connection is lost. A real PostgreSQL database.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { sql } from 'kysely';
import { createBackend, POSTGRES_ADMIN_URL, type TestBackend } from '../support/backends.ts';
import { openStore, type Store } from '../../src/store/database.ts';
import { DatabaseInUse } from '../../src/store/database-claim.ts';

const sole = { mode: 'sole' as const, onLost: () => {} };

async function adminRows<T>(text: string, values: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL });
  await client.connect();
  try {
    return (await client.query(text, values)).rows as T[];
  } finally {
    await client.end();
  }
}

const connectionsTo = async (database: string) =>
  Number((await adminRows<{ count: string }>("select count(*) from pg_stat_activity where datname = $1 and backend_type = 'client backend'", [database]))[0].count);

describe('the claim\'s connection serves the store', () => {
  let backend: TestBackend;
  let database: string;
  before(async () => {
    backend = await createBackend('postgres');
    database = new URL(backend.databaseUrl!).pathname.slice(1);
    // migrated once, without a claim, so that the stores below open as a tenant's do
    await (await openStore({ databaseUrl: backend.databaseUrl, stateDir: backend.stateDir })).close();
  });
  after(async () => backend.drop());

  it('a store used one query at a time opens one connection: the claim\'s', async () => {
    const store = await openStore({ databaseUrl: backend.databaseUrl, stateDir: backend.stateDir, migrate: false, claim: sole });
    try {
      for (let query = 0; query < 5; query++) await store.db.selectFrom('sessions').select('id').execute();
      await store.ping();
      await store.db.transaction().execute(async (trx) => trx.selectFrom('turns').select('id').execute());
      assert.equal(await connectionsTo(database), 1);
    } finally {
      await store.close();
    }
    assert.equal(await connectionsTo(database), 0, 'closed with the store');
  });

  it('queries at once take the pool\'s connections beside it, and the claim still keeps a second agentd out', async () => {
    const store = await openStore({ databaseUrl: backend.databaseUrl, stateDir: backend.stateDir, migrate: false, claim: sole, maxConnections: 3 });
    try {
      // each holds its connection for 200 ms: three at once need three connections
      const started = performance.now();
      await Promise.all([1, 2, 3].map(() => sql`select pg_sleep(0.2)`.execute(store.db)));
      assert.ok(performance.now() - started < 550, 'they ran side by side');
      assert.equal(await connectionsTo(database), 3);
      await assert.rejects(openStore({ databaseUrl: backend.databaseUrl, stateDir: backend.stateDir, migrate: false, claim: sole }), DatabaseInUse);
      // a transaction on the claim's connection leaves the lock where it was
      await assert.rejects(store.db.transaction().execute(async (trx) => {
        await sql`select 1`.execute(trx);
        throw new Error('rolled back');
      }));
      await assert.rejects(openStore({ databaseUrl: backend.databaseUrl, stateDir: backend.stateDir, migrate: false, claim: sole }), DatabaseInUse);
    } finally {
      await store.close();
    }
  });

  it('the claim\'s connection lost: the store answers on the pool\'s, and the claim is taken again', async () => {
    const store: Store = await openStore({ databaseUrl: backend.databaseUrl, stateDir: backend.stateDir, migrate: false, claim: sole });
    try {
      await store.ping();
      await adminRows("select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and backend_type = 'client backend'", [database]);
      // a query may meet a pooled connection whose end the pool has not heard of yet and fail; once
      // one answers, the pool has let the dead ones go and the next ones must not fail
      for (let attempt = 0; attempt < 20 && !(await store.ping().then(() => true, () => false)); attempt++) await new Promise((resolve) => setTimeout(resolve, 50));
      for (let query = 0; query < 3; query++) await store.db.selectFrom('sessions').select('id').execute();
      // the claim reconnects every second (database-claim.ts); until then and after, nobody else gets in
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      await assert.rejects(openStore({ databaseUrl: backend.databaseUrl, stateDir: backend.stateDir, migrate: false, claim: sole }), DatabaseInUse);
      await store.ping();
    } finally {
      await store.close();
    }
  });
});

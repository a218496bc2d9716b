// A PostgreSQL connection that fails to open for a passing reason is asked for once more before the
// store gives up (store/unavailable.ts, connectOnceMore): in a compose deployment, stopping one
// agentd made the other's next connect lose its name lookup, and the turn it had just taken over
// failed. A real PostgreSQL database behind a loopback proxy that cuts the connections it is told to.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createBackend, type TestBackend } from '../support/backends.ts';
import { startFreezableProxy, type FreezableProxy } from '../support/freezable-proxy.ts';
import { openStore } from '../../src/store/database.ts';
import { sql } from 'kysely';
import { isStoreUnavailable } from '../../src/store/unavailable.ts';

describe('a connection that fails to open is asked for once more', () => {
  let backend: TestBackend;
  let proxy: FreezableProxy;
  before(async () => {
    backend = await createBackend('postgres');
    await (await openStore({ databaseUrl: backend.databaseUrl, stateDir: backend.stateDir })).close();
    proxy = await startFreezableProxy();
  });
  after(async () => {
    await proxy?.close();
    await backend?.drop();
  });

  const openThroughProxy = (databaseUrl = backend.databaseUrl!) => openStore({ databaseUrl: proxy.urlFor(databaseUrl), stateDir: backend.stateDir, migrate: false });

  it('one connection cut as it opens: the query is answered on the next', async () => {
    const store = await openThroughProxy();
    try {
      const before = proxy.accepted;
      proxy.cutNext(1);
      assert.deepEqual(await store.db.selectFrom('sessions').select('id').execute(), []);
      assert.equal(proxy.accepted - before, 2, 'the cut connection, then the one that answered');
    } finally {
      await store.close();
    }
  });

  it('two cut in a row: the query fails as the database being unavailable, after the second', async () => {
    const store = await openThroughProxy();
    try {
      const before = proxy.accepted;
      proxy.cutNext(2);
      const failure = await store.db.selectFrom('sessions').select('id').execute().then(() => null, (error: unknown) => error);
      assert.ok(failure && isStoreUnavailable(failure), `failed as unavailable: ${String(failure)}`);
      assert.equal(proxy.accepted - before, 2, 'asked twice, not more');
      assert.deepEqual(await store.db.selectFrom('sessions').select('id').execute(), [], 'and the next query is answered');
    } finally {
      await store.close();
    }
  });

  it('a refusal that will not pass (no such database) is not asked again', async () => {
    const missing = new URL(backend.databaseUrl!);
    missing.pathname = `/${missing.pathname.slice(1)}_missing`;
    const store = await openThroughProxy(missing.toString());
    try {
      const before = proxy.accepted;
      const failure = await store.db.selectFrom('sessions').select('id').execute().then(() => null, (error: unknown) => error);
      assert.equal((failure as { code?: string } | null)?.code, '3D000', String(failure));
      assert.equal(proxy.accepted - before, 1);
    } finally {
      await store.close();
    }
  });

  it('a full pool\'s wait that ran out is not waited again: the caller hears after one wait (5 s), not two', async () => {
    const store = await openStore({ databaseUrl: backend.databaseUrl, stateDir: backend.stateDir, migrate: false, maxConnections: 1 });
    let letGo!: () => void;
    const held = new Promise<void>((resolve) => (letGo = resolve));
    try {
      // the pool's one connection, held by a transaction until the other query has given up
      const holding = store.db.transaction().execute(async (trx) => {
        await sql`select 1`.execute(trx);
        await held;
      });
      await new Promise((resolve) => setTimeout(resolve, 100));
      const started = performance.now();
      const failure = await store.db.selectFrom('sessions').select('id').execute().then(() => null, (error: unknown) => error);
      const waitedMs = performance.now() - started;
      assert.equal((failure as Error | null)?.message, 'timeout exceeded when trying to connect', String(failure));
      assert.ok(waitedMs < 8_000, `one wait, not two: ${Math.round(waitedMs)} ms`);
      letGo();
      await holding;
    } finally {
      letGo();
      await store.close();
    }
  });
});

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BACKENDS, createBackend, type TestBackend } from '../support/backends.ts';
import { openStore, type Store } from '../../src/store/database.ts';
import { findSession, insertSession, listSessions, sessionRowsVersionNow, type SessionRecord } from '../../src/store/sessions.ts';
import { nowIso, uuidv7 } from '../../src/domain/ids.ts';

const BOUNDARY = 'default';

function session(title: string): SessionRecord {
  const now = nowIso();
  return {
    id: uuidv7(), createdAt: now, updatedAt: now, provider: 'fake', connection: 'fake', model: 'm', transportModel: null,
    dialect: 'openai-responses', cwd: '/tmp', effort: 'none', title, titleIsManual: false, archived: false,
    usage: { input: 0, output: 0, cached: 0 }, repository: null, ownsCheckout: false, planMode: false, allowances: [],
  };
}

/* Inserts that arrive together share one statement (store/sessions.ts); each keeps its own outcome. */
for (const kind of BACKENDS) {
  describe(`grouped session inserts on ${kind}`, () => {
    let backend: TestBackend;
    let store: Store;
    before(async () => {
      backend = await createBackend(kind);
      store = await openStore({ databaseUrl: backend.databaseUrl, stateDir: backend.stateDir });
    });
    after(async () => {
      await store.close();
      await backend.drop();
    });

    it('every insert of a burst larger than one statement is committed when its caller hears of it', async () => {
      const burst = Array.from({ length: 150 }, (_, index) => session(`burst ${index}`));
      await Promise.all(burst.map(async (record) => {
        await insertSession(store.db, BOUNDARY, record);
        assert.equal((await findSession(store.db, BOUNDARY, record.id))?.title, record.title);
      }));
      const listed = await listSessions(store.db, BOUNDARY, { archive: 'all', limit: 500, after: null });
      assert.equal(listed.sessions.length, 150);
    });

    it('a failing row fails alone: the rows inserted beside it are committed and their callers succeed', async () => {
      const taken = session('first');
      await insertSession(store.db, BOUNDARY, taken);
      const neighbours = [session('left'), session('right')];
      const versionBefore = sessionRowsVersionNow();
      const outcomes = await Promise.allSettled([
        insertSession(store.db, BOUNDARY, neighbours[0]),
        insertSession(store.db, BOUNDARY, { ...taken, title: 'duplicate id' }),
        insertSession(store.db, BOUNDARY, neighbours[1]),
      ]);
      assert.deepEqual(outcomes.map((outcome) => outcome.status), ['fulfilled', 'rejected', 'fulfilled']);
      for (const record of neighbours) assert.equal((await findSession(store.db, BOUNDARY, record.id))?.title, record.title);
      assert.equal((await findSession(store.db, BOUNDARY, taken.id))?.title, 'first');
      assert.ok(sessionRowsVersionNow() > versionBefore, 'the writes moved the version of the session rows on');
    });
  });
}

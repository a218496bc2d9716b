import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import SQLite from 'better-sqlite3';
import { DefaultQueryCompiler, sql } from 'kysely';
import { BACKENDS } from '../support/backends.ts';
import { useStore, sessionRecord as session } from '../support/store.ts';
import type { Store } from '../../src/store/database.ts';
import { preparedQuery, type Param } from '../../src/store/prepared-query.ts';
import { findSession, insertSession } from '../../src/store/sessions.ts';
import { findTurn, insertTurn } from '../../src/store/turns.ts';
import { type TurnRecord } from '../../src/domain/turn.ts';
import { finalizeTurn } from '../../src/store/finalize.ts';
import { buildHistoryEntry } from '../../src/domain/history-entry.ts';
import { nowIso, uuidv7 } from '../../src/domain/ids.ts';

const BOUNDARY = 'default';

/** Counts calls of a prototype's method while the suite runs (the real method still runs). */
function countCalls(prototype: object, method: string): { readonly calls: number } {
  const counter = { calls: 0 };
  const target = prototype as Record<string, (...args: unknown[]) => unknown>;
  let original!: (...args: unknown[]) => unknown;
  before(() => {
    original = target[method];
    target[method] = function (this: unknown, ...args: unknown[]) {
      counter.calls += 1;
      return original.apply(this, args);
    };
  });
  after(() => {
    target[method] = original;
  });
  return counter;
}

function queuedTurn(sessionId: string): TurnRecord {
  return {
    id: uuidv7(), boundaryId: BOUNDARY, sessionId, clientRequestId: uuidv7(), inputDigest: 'digest', status: 'queued',
    createdAt: nowIso(), startedAt: null, finishedAt: null, error: null, input: 'hello', userText: 'hello', inputTruncated: false, output: null, attempt: 1,
  };
}

function answered(text: string) {
  return buildHistoryEntry(
    { turnId: null, at: nowIso(), userText: text, usage: { inputTokens: 3, outputTokens: 1, cachedTokens: 0, cacheCreationTokens: null, reasoningTokens: null, webSearchRequests: null } },
    { kind: 'answered', effect: 'append', assistantText: `re: ${text}`, responseId: null, items: [], discardedText: [], providerTelemetry: [] },
  );
}

const titleOf = preparedQuery((db, param: Param<{ id: string }>) =>
  db.selectFrom('sessions').select(['title', 'transport_model']).where('id', '=', param((values) => values.id)),
);

for (const kind of BACKENDS) {
  describe(`prepared queries on ${kind}`, () => {
    let store!: Store;
    const opened = useStore(kind);
    before(() => ({ store } = opened));
    const compilations = countCalls(DefaultQueryCompiler.prototype, 'compileQuery');

    it('compiles a statement once and runs each call with its own values', async () => {
      const first = { ...session('first'), transportModel: 'wire-name' };
      const second = session('second');
      await insertSession(store.db, BOUNDARY, first);
      await insertSession(store.db, BOUNDARY, second);
      await titleOf(store.db, { id: first.id });
      const compiledBefore = compilations.calls;
      assert.deepEqual((await titleOf(store.db, { id: second.id })).rows, [{ title: 'second', transport_model: null }]);
      assert.deepEqual((await titleOf(store.db, { id: first.id })).rows, [{ title: 'first', transport_model: 'wire-name' }]);
      assert.deepEqual((await titleOf(store.db, { id: uuidv7() })).rows, []);
      assert.equal(compilations.calls, compiledBefore, 'no call after the first compiled the query again');
    });

    it('runs inside a transaction, whose rollback takes its writes back', async () => {
      const kept = session('kept');
      const rolledBack = session('rolled back');
      await store.db.transaction().execute(async (trx) => {
        await insertSession(trx, BOUNDARY, kept);
        assert.deepEqual((await titleOf(trx, { id: kept.id })).rows.map((row) => row.title), ['kept']);
      });
      await assert.rejects(
        store.db.transaction().execute(async (trx) => {
          await insertSession(trx, BOUNDARY, rolledBack);
          assert.deepEqual((await titleOf(trx, { id: rolledBack.id })).rows.map((row) => row.title), ['rolled back']);
          throw new Error('roll back');
        }),
        /roll back/,
      );
      assert.equal((await findSession(store.db, BOUNDARY, kept.id))?.title, 'kept');
      assert.equal(await findSession(store.db, BOUNDARY, rolledBack.id), null);
    });

    it('a turn stored and finished through prepared statements reads back whole, its derived title set', async () => {
      const untitled = session('New session');
      await insertSession(store.db, BOUNDARY, untitled);
      const turn = queuedTurn(untitled.id);
      await insertTurn(store.db, turn, { input: 'hello', userText: 'hello' });
      const finished: TurnRecord = { ...turn, status: 'completed', startedAt: nowIso(), finishedAt: nowIso(), output: { responseId: 'r1', assistantText: 're: hello', assistantTextTruncated: false, completion: { status: 'completed', reasoningTokens: null } } };
      const updatedAt = '2031-02-03T04:05:06.789Z';
      await finalizeTurn(store.db, finished, answered('hello'), { sessionId: untitled.id, updatedAt, derivedTitle: 'Greeting' }, { retryDelaysMs: [] });
      assert.deepEqual(await findTurn(store.db, BOUNDARY, turn.id), finished);
      const stored = (await findSession(store.db, BOUNDARY, untitled.id))!;
      assert.deepEqual([stored.title, stored.titleIsManual, stored.updatedAt, stored.usage], ['Greeting', false, updatedAt, { input: 3, output: 1, cached: 0 }]);
    });

    it('refuses a builder that puts a call\'s value where the SQL cannot bind it', async () => {
      const misused = preparedQuery((db, param: Param<{ column: string }>) =>
        db.selectFrom('sessions').select(['id']).where(sql.ref<string>(String(param((values) => values.column))), '=', 'x'),
      );
      await assert.rejects(misused(store.db, { column: 'id' }), /binds 1 values, but its SQL has fewer/);
    });
  });
}

/*
 * Kysely's SQLite driver asks the database to prepare every statement it runs; the store's
 * database (store/database.ts) keeps each SQL text's statement, so preparing happens once.
 */
describe('the SQLite statement cache', () => {
  let store!: Store;
  const opened = useStore('sqlite');
  before(() => ({ store } = opened));
  const prepares = countCalls(SQLite.prototype, 'prepare');

  it('prepares a statement once and gives right results each time it is reused', async () => {
    const first = session('first');
    const second = session('second');
    await insertSession(store.db, BOUNDARY, first);
    await store.db.transaction().execute((trx) => findSession(trx, BOUNDARY, first.id));
    const preparedBefore = prepares.calls;
    await insertSession(store.db, BOUNDARY, second);
    assert.equal((await findSession(store.db, BOUNDARY, second.id))?.title, 'second');
    assert.equal((await findSession(store.db, BOUNDARY, first.id))?.title, 'first');
    await store.db.transaction().execute(async (trx) => assert.equal((await findSession(trx, BOUNDARY, first.id))?.title, 'first'));
    assert.equal(prepares.calls, preparedBefore, 'the insert, the reads, begin and commit were all prepared before');
  });

  it('a cached statement that returns rows (insert … returning) answers its rows, each time its own', async () => {
    const insertReturning = (title: string) =>
      store.db.insertInto('boundaries').values({ id: `boundary ${title}`, event_id_ceiling: title.length }).returning(['id', 'event_id_ceiling']).execute();
    assert.deepEqual(await insertReturning('a'), [{ id: 'boundary a', event_id_ceiling: 1 }]);
    const preparedBefore = prepares.calls;
    assert.deepEqual(await insertReturning('bcd'), [{ id: 'boundary bcd', event_id_ceiling: 3 }]);
    assert.equal(prepares.calls, preparedBefore);
  });

  it('savepoints roll back to where they were set, also when their statements are cached', async () => {
    const titles = async () => (await store.db.selectFrom('sessions').select('title').where('title', 'like', 'savepoint %').orderBy('title').execute()).map((row) => row.title);
    for (const round of [1, 2]) {
      const trx = await store.db.startTransaction().execute();
      await insertSession(trx, BOUNDARY, session(`savepoint ${round} kept`));
      const marked = await trx.savepoint('before_second').execute();
      await insertSession(marked, BOUNDARY, session(`savepoint ${round} undone`));
      await marked.rollbackToSavepoint('before_second').execute();
      await marked.commit().execute();
    }
    assert.deepEqual(await titles(), ['savepoint 1 kept', 'savepoint 2 kept']);
  });
});

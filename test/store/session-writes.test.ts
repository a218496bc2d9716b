import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BACKENDS } from '../support/backends.ts';
import { useStore, sessionRecord as session } from '../support/store.ts';
import type { Store } from '../../src/store/database.ts';
import { addSessionUsage, deleteSessionCascade, findSession, insertSession, listSessions, sessionRowsVersionNow, updateSessionFields } from '../../src/store/sessions.ts';
import { type SessionRecord } from '../../src/domain/session.ts';
import { appendHistoryEntry } from '../../src/store/history.ts';
import { insertForkedSession } from '../../src/store/fork.ts';
import { buildHistoryEntry } from '../../src/domain/history-entry.ts';
import { SessionReadCache } from '../../src/runtime/session/session-read-cache.ts';
import { sessionRowCache } from '../../src/store/session-row-cache.ts';
import { nowIso } from '../../src/domain/ids.ts';

const BOUNDARY = 'default';

/** A history entry that spent tokens, as compaction appends one outside a turn's final write. */
function summaryEntry() {
  return buildHistoryEntry(
    { turnId: null, at: nowIso(), userText: 'summary', usage: { inputTokens: 4, outputTokens: 2, cachedTokens: 0, cacheCreationTokens: null, reasoningTokens: null, webSearchRequests: null } },
    { kind: 'answered', effect: 'append', assistantText: 'short', responseId: null, items: [], discardedText: [], providerTelemetry: [] },
  );
}

/* Inserts that arrive together share one statement (store/sessions.ts); each keeps its own outcome. */
for (const kind of BACKENDS) {
  describe(`grouped session inserts on ${kind}`, () => {
    let store!: Store;
    const opened = useStore(kind);
    before(() => ({ store } = opened));

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
      const versionBefore = sessionRowsVersionNow(store.db);
      const outcomes = await Promise.allSettled([
        insertSession(store.db, BOUNDARY, neighbours[0]),
        insertSession(store.db, BOUNDARY, { ...taken, title: 'duplicate id' }),
        insertSession(store.db, BOUNDARY, neighbours[1]),
      ]);
      assert.deepEqual(outcomes.map((outcome) => outcome.status), ['fulfilled', 'rejected', 'fulfilled']);
      for (const record of neighbours) assert.equal((await findSession(store.db, BOUNDARY, record.id))?.title, record.title);
      assert.equal((await findSession(store.db, BOUNDARY, taken.id))?.title, 'first');
      assert.ok(sessionRowsVersionNow(store.db) > versionBefore, 'the writes moved the version of the session rows on');
    });

    /*
     * The writers the HTTP tests cannot reach one by one (a turn's plan-mode switch, compaction's own
     * append): each must end a cached read of the session, or GET /v1/sessions/:id would answer the
     * row from before it.
     */
    const writers: [string, (db: Store['db'], record: SessionRecord) => Promise<unknown>][] = [
      ['usage added', (db, record) => addSessionUsage(db, record.id, { input: 1, output: 1, cached: 0 })],
      ['fields updated (plan mode, allowances)', (db, record) => updateSessionFields(db, BOUNDARY, record.id, { planMode: true, allowances: ['shell'] })],
      ['a history entry appended in its own transaction (compaction)', (db, record) => appendHistoryEntry(db, record.id, summaryEntry())],
      ['a fork inserted with its history', (db, record) => insertForkedSession(db, BOUNDARY, session('fork'), record.id, 0)],
      ['the session deleted', (db, record) => deleteSessionCascade(db, BOUNDARY, record.id)],
    ];
    for (const [name, write] of writers) {
      it(`${name}: a cached read of the session is read again`, async () => {
        const record = session(name);
        await insertSession(store.db, BOUNDARY, record);
        const cache = new SessionReadCache(sessionRowCache(store.db));
        let reads = 0;
        const readRow = async () => {
          reads += 1;
          return JSON.stringify(await findSession(store.db, BOUNDARY, record.id));
        };
        const cached = await cache.read(record.id, readRow);
        assert.equal(await cache.read(record.id, readRow), cached);
        assert.equal(reads, 1);
        await write(store.db, record);
        await cache.read(record.id, readRow);
        assert.equal(reads, 2, 'read again from the database');
      });
    }
  });
}

/*
 * Each store (each boundary's database) owns its session-row cache and the version its read cache
 * follows: another boundary's writes in the same process leave them alone.
 */
for (const kind of BACKENDS) {
  describe(`session rows of two stores in one process on ${kind}`, () => {
    let mine!: Store;
    let theirs!: Store;
    const openedMine = useStore(kind);
    const openedTheirs = useStore(kind);
    before(() => {
      mine = openedMine.store;
      theirs = openedTheirs.store;
    });

    it('a write to the other store\'s sessions neither moves this store\'s version on nor ends its kept reads', async () => {
      assert.notEqual(sessionRowCache(mine.db), sessionRowCache(theirs.db));
      const own = session('mine');
      const other = session('theirs');
      await insertSession(mine.db, BOUNDARY, own);
      await insertSession(theirs.db, BOUNDARY, other);
      const cache = new SessionReadCache(sessionRowCache(mine.db));
      let reads = 0;
      const readRow = async () => {
        reads += 1;
        return JSON.stringify(await findSession(mine.db, BOUNDARY, own.id));
      };
      await cache.read(own.id, readRow);
      const version = sessionRowsVersionNow(mine.db);
      await updateSessionFields(theirs.db, BOUNDARY, other.id, { title: 'renamed there' });
      await addSessionUsage(theirs.db, other.id, { input: 1, output: 1, cached: 0 });
      assert.equal(sessionRowsVersionNow(mine.db), version);
      await cache.read(own.id, readRow);
      assert.equal(reads, 1, 'still served from this boundary\'s cache');
      await updateSessionFields(mine.db, BOUNDARY, own.id, { title: 'renamed here' });
      assert.ok(sessionRowsVersionNow(mine.db) > version);
      assert.match(await cache.read(own.id, readRow), /renamed here/);
      assert.equal(reads, 2);
    });
  });
}

/**
 * The session row cache (src/store/session-row-cache.ts) on both backends: a turn's end keeps the
 * row it wrote, so the next submission reads its session without a query, and every write of a
 * session row through the store ends what was kept, also when writes race.
 *
 * "Behind the store's back" below is a raw UPDATE that no store function makes: the only way to
 * see that an answer came from the cache rather than the table.
 */
import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { sql } from 'kysely';
import { BACKENDS } from '../support/backends.ts';
import { useStore, sessionRecord } from '../support/store.ts';
import { openStore, type Db, type Store } from '../../src/store/database.ts';
import { toRow } from '../../src/store/sessions.ts';
import { createBackend } from '../support/backends.ts';
import { deleteSessionCascade, findSession, insertSession, updateSessionFields } from '../../src/store/sessions.ts';
import { type SessionRecord } from '../../src/domain/session.ts';
import { appendHistoryEntry } from '../../src/store/history.ts';
import { finalizeTurn } from '../../src/store/finalize.ts';
import { SessionRowCache } from '../../src/store/session-row-cache.ts';
import type { SessionsTable } from '../../src/store/schema.ts';
import { insertTurn } from '../../src/store/turns.ts';
import { type TurnRecord } from '../../src/domain/turn.ts';
import { buildHistoryEntry, type NewHistoryEntry } from '../../src/domain/history-entry.ts';
import { nowIso, uuidv7 } from '../../src/domain/ids.ts';

const BOUNDARY = 'default';

function entry(text: string, input = 3): NewHistoryEntry {
  const usage = { inputTokens: input, outputTokens: 2, cachedTokens: 1, cacheCreationTokens: null, reasoningTokens: null, webSearchRequests: null };
  return buildHistoryEntry(
    { turnId: null, at: nowIso(), userText: text, usage },
    { kind: 'answered', effect: 'append', assistantText: `re: ${text}`, responseId: null, items: [], discardedText: [], providerTelemetry: [] },
  );
}

/** A turn stored as queued, then ended by finalizeTurn the way the runner ends it. */
async function endTurn(db: Db, sessionId: string, title: string | null = null): Promise<void> {
  const turn: TurnRecord = {
    id: uuidv7(), boundaryId: BOUNDARY, sessionId, clientRequestId: uuidv7(), inputDigest: 'digest', status: 'queued',
    createdAt: nowIso(), startedAt: null, finishedAt: null, error: null, input: 'hello', userText: 'hello', inputTruncated: false, output: null, attempt: 1,
  };
  await insertTurn(db, turn, { input: 'hello', userText: 'hello' });
  const ended: TurnRecord = { ...turn, status: 'completed', startedAt: turn.createdAt, finishedAt: nowIso() };
  await finalizeTurn(db, ended, entry('hello'), { sessionId, updatedAt: nowIso(), derivedTitle: title }, { retryDelaysMs: [5, 5, 5, 5, 5] });
}

/** The session as its table holds it: a read inside a transaction never answers from the cache. */
function tableRead(db: Db, id: string): Promise<SessionRecord | null> {
  return db.transaction().execute((trx) => findSession(trx, BOUNDARY, id));
}

async function behindTheStoresBack(db: Db, id: string, title: string): Promise<void> {
  await sql`update sessions set title = ${title} where id = ${id}`.execute(db);
}

async function newSession(db: Db, title = 'New session'): Promise<SessionRecord> {
  const session = sessionRecord(title);
  await insertSession(db, BOUNDARY, session);
  return session;
}

for (const kind of BACKENDS) {
  describe(`session row cache on ${kind}`, () => {
    let store!: Store;
    const opened = useStore(kind);
    before(() => ({ store } = opened));

    it('a turn’s end keeps the row it wrote: the next read answers it without reading the table', async () => {
      const session = await newSession(store.db);
      await endTurn(store.db, session.id, 'derived title');
      await behindTheStoresBack(store.db, session.id, 'changed behind the store');
      const read = await findSession(store.db, BOUNDARY, session.id);
      assert.equal(read!.title, 'derived title', 'answered from the kept row');
      assert.deepEqual(read!.usage, { input: 3, output: 2, cached: 1 });
      assert.equal((await tableRead(store.db, session.id))!.title, 'changed behind the store');
    });

    it('a row read from the table is kept, and each read gets its own record', async () => {
      const session = await newSession(store.db, 'read me');
      const first = await findSession(store.db, BOUNDARY, session.id);
      await behindTheStoresBack(store.db, session.id, 'changed behind the store');
      const second = await findSession(store.db, BOUNDARY, session.id);
      assert.equal(second!.title, 'read me');
      first!.allowances.push('mutated by a caller');
      first!.usage.input = 99;
      const third = await findSession(store.db, BOUNDARY, session.id);
      assert.deepEqual(third!.allowances, []);
      assert.equal(third!.usage.input, 0);
    });

    it('every write of a session row through the store ends the kept row', async () => {
      const writes: [string, (session: SessionRecord) => Promise<void>, (read: SessionRecord | null) => void][] = [
        ['title', (s) => updateSessionFields(store.db, BOUNDARY, s.id, { title: 'renamed', titleIsManual: true }), (read) => assert.equal(read!.title, 'renamed')],
        ['archived', (s) => updateSessionFields(store.db, BOUNDARY, s.id, { archived: true }), (read) => assert.equal(read!.archived, true)],
        ['plan mode and allowances', (s) => updateSessionFields(store.db, BOUNDARY, s.id, { planMode: true, allowances: ['shell:ls'] }), (read) => assert.deepEqual([read!.planMode, read!.allowances], [true, ['shell:ls']])],
        ['usage of an entry appended on its own', async (s) => void (await appendHistoryEntry(store.db, s.id, entry('compacted', 40))), (read) => assert.equal(read!.usage.input, 43)],
        ['another turn’s end', (s) => endTurn(store.db, s.id), (read) => assert.equal(read!.usage.input, 6)],
        ['delete', async (s) => void (await deleteSessionCascade(store.db, BOUNDARY, s.id)), (read) => assert.equal(read, null)],
      ];
      for (const [name, write, check] of writes) {
        const session = await newSession(store.db);
        await endTurn(store.db, session.id); // keeps the row: usage.input 3
        await write(session);
        const read = await findSession(store.db, BOUNDARY, session.id);
        check(read);
        assert.deepEqual(read, await tableRead(store.db, session.id), name);
      }
    });

    it('a kept row answers only for its own boundary', async () => {
      const session = await newSession(store.db);
      await endTurn(store.db, session.id);
      assert.equal(await findSession(store.db, 'another-boundary', session.id), null);
      assert.ok(await findSession(store.db, BOUNDARY, session.id));
    });

    it('another store (another tenant’s database) never sees this one’s kept rows', async () => {
      const session = await newSession(store.db);
      await endTurn(store.db, session.id);
      const backend = await createBackend(kind);
      const other = await openStore({ databaseUrl: backend.databaseUrl, stateDir: backend.stateDir });
      try {
        assert.equal(await findSession(other.db, BOUNDARY, session.id), null);
      } finally {
        await other.close();
        await backend.drop();
      }
    });

    it('writes racing each other and reads never leave a row that differs from the table', async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.constantFrom('end', 'rename', 'archive', 'append', 'read'), { minLength: 2, maxLength: 8 }),
          async (operations) => {
            const session = await newSession(store.db);
            await endTurn(store.db, session.id);
            let renames = 0;
            await Promise.allSettled(
              operations.map((operation) => {
                switch (operation) {
                  case 'end': return endTurn(store.db, session.id);
                  case 'rename': return updateSessionFields(store.db, BOUNDARY, session.id, { title: `title ${++renames}`, titleIsManual: true });
                  case 'archive': return updateSessionFields(store.db, BOUNDARY, session.id, { archived: true });
                  case 'append': return appendHistoryEntry(store.db, session.id, entry('appended', 5));
                  default: return findSession(store.db, BOUNDARY, session.id);
                }
              }),
            );
            assert.deepEqual(await findSession(store.db, BOUNDARY, session.id), await tableRead(store.db, session.id));
          },
        ),
        { numRuns: 25 },
      );
    });
  });
}

describe('session row cache: the rules of keeping, in any order', () => {
  const row = (title: string): SessionsTable => ({ ...toRow(BOUNDARY, sessionRecord(title)), id: 'the-session' });

  it('a write that ran alone keeps the row it read back; a failed one keeps nothing', () => {
    const cache = new SessionRowCache();
    cache.writing('the-session').committed(row('written'));
    assert.equal(cache.row(BOUNDARY, 'the-session')?.title, 'written');
    cache.writing('the-session').failed();
    assert.equal(cache.row(BOUNDARY, 'the-session'), undefined);
  });

  it('writes that overlap keep nothing, whichever ends last', () => {
    for (const lastToEnd of ['first', 'second'] as const) {
      const cache = new SessionRowCache();
      const first = cache.writing('the-session');
      const second = cache.writing('the-session');
      const ends = [() => first.committed(row('first')), () => second.committed(row('second'))];
      if (lastToEnd === 'first') ends.reverse();
      for (const end of ends) end();
      assert.equal(cache.row(BOUNDARY, 'the-session'), undefined, `${lastToEnd} ended last`);
      // once both have ended, a write alone keeps again
      cache.writing('the-session').committed(row('alone'));
      assert.equal(cache.row(BOUNDARY, 'the-session')?.title, 'alone');
    }
  });

  it('a read is kept only if no session was written while it ran and none of its own is in flight', () => {
    const cache = new SessionRowCache();
    cache.keepRead(row('raced'), 7, 8);
    assert.equal(cache.row(BOUNDARY, 'the-session'), undefined);
    const inFlight = cache.writing('the-session');
    cache.keepRead(row('during a write'), 8, 8);
    assert.equal(cache.row(BOUNDARY, 'the-session'), undefined);
    inFlight.failed();
    cache.keepRead(row('quiet'), 8, 8);
    assert.equal(cache.row(BOUNDARY, 'the-session')?.title, 'quiet');
  });

  it('a write that begins drops the kept row at once, before it ends', () => {
    const cache = new SessionRowCache();
    cache.keepRead(row('kept'), 1, 1);
    const write = cache.writing('the-session');
    assert.equal(cache.row(BOUNDARY, 'the-session'), undefined);
    write.committed(null);
    assert.equal(cache.row(BOUNDARY, 'the-session'), undefined);
  });
});

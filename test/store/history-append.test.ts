import { before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BACKENDS } from '../support/backends.ts';
import { useStore, sessionRecord as session } from '../support/store.ts';
import type { Store } from '../../src/store/database.ts';
import { insertSession, findSession } from '../../src/store/sessions.ts';
import { insertTurn, findTurn } from '../../src/store/turns.ts';
import { type TurnRecord } from '../../src/domain/turn.ts';
import { appendHistoryEntry, readHistoryRange } from '../../src/store/history.ts';
import { finalizeTurn } from '../../src/store/finalize.ts';
import { buildHistoryEntry, type NewHistoryEntry } from '../../src/domain/history-entry.ts';
import { nowIso, uuidv7 } from '../../src/domain/ids.ts';

const BOUNDARY = 'default';

function entry(text: string, usage: { input: number; output: number; cached: number } | null): NewHistoryEntry {
  const modelUsage = usage && { inputTokens: usage.input, outputTokens: usage.output, cachedTokens: usage.cached, cacheCreationTokens: null, reasoningTokens: null, webSearchRequests: null };
  return buildHistoryEntry(
    { turnId: null, at: nowIso(), userText: text, usage: modelUsage },
    { kind: 'answered', effect: 'append', assistantText: `re: ${text}`, responseId: null, items: [], discardedText: [], providerTelemetry: [] },
  );
}

function queuedTurn(sessionId: string): TurnRecord {
  return {
    id: uuidv7(), boundaryId: BOUNDARY, sessionId, clientRequestId: uuidv7(), inputDigest: 'digest', status: 'running',
    createdAt: nowIso(), startedAt: nowIso(), finishedAt: null, error: null, input: 'hello', userText: 'hello', inputTruncated: false, output: null, attempt: 1,
  };
}

for (const kind of BACKENDS) {
  describe(`history append on ${kind}`, () => {
    let store!: Store;
    const opened = useStore(kind);
    before(() => ({ store } = opened));

    it('gives entries dense indices from 0 and adds each usage to the session', async () => {
      const s = session();
      await insertSession(store.db, BOUNDARY, s);
      assert.equal(await appendHistoryEntry(store.db, s.id, entry('one', { input: 10, output: 5, cached: 1 })), 0);
      assert.equal(await appendHistoryEntry(store.db, s.id, entry('two', null)), 1);
      assert.equal(await appendHistoryEntry(store.db, s.id, entry('three', { input: 7, output: 2, cached: 0 })), 2);
      const stored = await readHistoryRange(store.db, s.id, 0, 10);
      assert.deepEqual(stored.map((row) => [row.index, row.userText, row.usage]), [
        [0, 'one', { input: 10, output: 5, cached: 1 }],
        [1, 'two', null],
        [2, 'three', { input: 7, output: 2, cached: 0 }],
      ]);
      assert.deepEqual((await findSession(store.db, BOUNDARY, s.id))!.usage, { input: 17, output: 7, cached: 1 });
    });

    it('never gives two racing appends the same index, and counts only the entries stored', async () => {
      const s = session();
      await insertSession(store.db, BOUNDARY, s);
      const results = await Promise.allSettled(Array.from({ length: 8 }, (_, n) => appendHistoryEntry(store.db, s.id, entry(`racer ${n}`, { input: 1, output: 1, cached: 0 }))));
      const stored = await readHistoryRange(store.db, s.id, 0, 100);
      const won = results.filter((result) => result.status === 'fulfilled').length;
      assert.ok(won >= 1);
      assert.deepEqual(stored.map((row) => row.index), Array.from({ length: won }, (_, index) => index));
      assert.deepEqual((await findSession(store.db, BOUNDARY, s.id))!.usage, { input: won, output: won, cached: 0 });
    });

    it('writes nothing, usage included, when the transaction it joined fails', async () => {
      const s = session();
      await insertSession(store.db, BOUNDARY, s);
      await assert.rejects(
        store.db.transaction().execute(async (trx) => {
          await appendHistoryEntry(trx, s.id, entry('doomed', { input: 100, output: 100, cached: 100 }));
          throw new Error('later step failed');
        }),
        /later step failed/,
      );
      assert.deepEqual(await readHistoryRange(store.db, s.id, 0, 10), []);
      assert.deepEqual((await findSession(store.db, BOUNDARY, s.id))!.usage, { input: 0, output: 0, cached: 0 });
    });

    it('finalises a turn all or nothing: a failing turn write takes the entry and its usage back', async () => {
      const s = session();
      await insertSession(store.db, BOUNDARY, s);
      const turn = queuedTurn(s.id);
      await insertTurn(store.db, turn, { input: 'hello', userText: 'hello' });
      // An output JSON cannot hold makes the turn's update fail after the entry was appended.
      const unstorable = { ...turn, status: 'completed' as const, output: { responseId: null, assistantText: null, assistantTextTruncated: false, completion: { status: 'completed' as const, reasoningTokens: 1n as unknown as number } } };
      await assert.rejects(finalizeTurn(store.db, unstorable, entry('hello', { input: 3, output: 3, cached: 3 }), { sessionId: s.id, updatedAt: nowIso(), derivedTitle: 'hello' }, { retryDelaysMs: [] }));
      assert.deepEqual(await readHistoryRange(store.db, s.id, 0, 10), []);
      const after = (await findSession(store.db, BOUNDARY, s.id))!;
      assert.deepEqual(after.usage, { input: 0, output: 0, cached: 0 });
      assert.equal(after.title, 'Untitled');
      assert.equal((await findTurn(store.db, BOUNDARY, turn.id))!.status, 'running');

      await finalizeTurn(store.db, { ...turn, status: 'completed', finishedAt: nowIso() }, entry('hello', { input: 3, output: 3, cached: 3 }), { sessionId: s.id, updatedAt: nowIso(), derivedTitle: 'hello' }, { retryDelaysMs: [] });
      assert.deepEqual((await readHistoryRange(store.db, s.id, 0, 10)).map((row) => row.index), [0]);
      const finished = (await findSession(store.db, BOUNDARY, s.id))!;
      assert.deepEqual(finished.usage, { input: 3, output: 3, cached: 3 });
      assert.equal(finished.title, 'hello');
      assert.equal((await findTurn(store.db, BOUNDARY, turn.id))!.status, 'completed');
    });

    it('finalises a turn into one session write that keeps a manual title and sets updatedAt without usage', async () => {
      const s = { ...session(), title: 'Chosen by hand', titleIsManual: true };
      await insertSession(store.db, BOUNDARY, s);
      const turn = queuedTurn(s.id);
      await insertTurn(store.db, turn, { input: 'hello', userText: 'hello' });
      const updatedAt = '2030-01-02T03:04:05.678Z';
      await finalizeTurn(store.db, { ...turn, status: 'completed', finishedAt: nowIso() }, entry('hello', null), { sessionId: s.id, updatedAt, derivedTitle: 'hello' }, { retryDelaysMs: [] });
      const finished = (await findSession(store.db, BOUNDARY, s.id))!;
      assert.deepEqual([finished.title, finished.titleIsManual, finished.updatedAt, finished.usage], ['Chosen by hand', true, updatedAt, { input: 0, output: 0, cached: 0 }]);

      const untitled = session();
      await insertSession(store.db, BOUNDARY, untitled);
      const second = queuedTurn(untitled.id);
      await insertTurn(store.db, second, { input: 'x', userText: 'x' });
      await finalizeTurn(store.db, { ...second, status: 'completed', finishedAt: nowIso() }, entry('x', { input: 2, output: 1, cached: 0 }), { sessionId: untitled.id, updatedAt, derivedTitle: null }, { retryDelaysMs: [] });
      const kept = (await findSession(store.db, BOUNDARY, untitled.id))!;
      assert.deepEqual([kept.title, kept.updatedAt, kept.usage], ['Untitled', updatedAt, { input: 2, output: 1, cached: 0 }]);
    });
  });
}

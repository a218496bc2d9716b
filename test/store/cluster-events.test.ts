// The shared event stream of a cluster at the store (docs/CLUSTER.md "One event stream"): two
// writers on two connection pools commit concurrently while a reader follows by id, and the reader
// never meets a hole or a repeat; an event that names a stale attempt of its turn is not stored.
// A real PostgreSQL database.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createBackend, type TestBackend } from '../support/backends.ts';
import { openStore, type Store } from '../../src/store/database.ts';
import { ensureEventCounter, storeEvents, storedEventsAfter, storedEventWindow, type EventDraft } from '../../src/store/cluster-events.ts';
import { boundTurnText, insertTurn } from '../../src/store/turns.ts';
import { nowIso, uuidv7 } from '../../src/domain/ids.ts';
import type { TurnRecord } from '../../src/domain/turn.ts';

const draft = (text: string, turn: { id: string; attempt?: number } | null = null): EventDraft => ({
  type: 'warning', sessionId: null, turnId: turn?.id ?? null, at: nowIso(), data: JSON.stringify({ text }),
  ...(turn?.attempt === undefined ? {} : { attempt: turn.attempt }),
});

describe('the shared event stream of a cluster, at the store', () => {
  let backend: TestBackend;
  let alpha: Store;
  let beta: Store;
  before(async () => {
    backend = await createBackend('postgres');
    alpha = await openStore({ databaseUrl: backend.databaseUrl, stateDir: backend.stateDir });
    beta = await openStore({ databaseUrl: backend.databaseUrl, stateDir: backend.stateDir, migrate: false });
  });
  after(async () => {
    await alpha.close();
    await beta.close();
    await backend.drop();
  });

  it('two writers committing at once: a reader following by id sees every id once, in order, without a hole', async () => {
    await ensureEventCounter(alpha.db, 'concurrent');
    const writer = async (store: Store, name: string) => {
      for (let batch = 0; batch < 60; batch++) {
        await storeEvents(store.db, 'concurrent', Array.from({ length: 1 + (batch % 4) }, (_, index) => draft(`${name} ${batch}.${index}`)), 100_000);
      }
    };
    const seen: number[] = [];
    let writing = true;
    const reader = (async () => {
      for (;;) {
        const done = !writing;
        const records = await storedEventsAfter(beta.db, 'concurrent', seen.at(-1) ?? 0, 1000);
        for (const record of records) seen.push(record.id);
        if (done && records.length === 0) return;
      }
    })();
    await Promise.all([writer(alpha, 'alpha'), writer(beta, 'beta')]);
    writing = false;
    await reader;
    const total = 2 * Array.from({ length: 60 }, (_, batch) => 1 + (batch % 4)).reduce((sum, size) => sum + size, 0);
    assert.deepEqual(seen, Array.from({ length: total }, (_, index) => index + 1));
  });

  it('an event naming a stale attempt of its turn is left out, and the ids stay without a hole', async () => {
    await ensureEventCounter(alpha.db, 'fenced');
    const id = uuidv7();
    const text = { input: 'x', userText: 'x' };
    const turn: TurnRecord = {
      id, boundaryId: 'fenced', sessionId: uuidv7(), clientRequestId: id, inputDigest: 'd', status: 'running', createdAt: nowIso(), startedAt: null,
      finishedAt: null, error: null, ...boundTurnText(text), output: null, attempt: 1,
    };
    await insertTurn(alpha.db, turn, text);
    const first = await storeEvents(alpha.db, 'fenced', [draft('free'), draft('current', { id, attempt: 1 }), draft('stale', { id, attempt: 0 })], 100);
    assert.equal(first.firstId, 1);
    assert.deepEqual(first.stored.map((event) => JSON.parse(event.data).text), ['free', 'current']);

    // another instance takes the turn over: what the old owner still had to store is refused
    await alpha.db.updateTable('turns').set({ attempt: 2 }).where('id', '=', id).execute();
    const refused = await storeEvents(alpha.db, 'fenced', [draft('late', { id, attempt: 1 })], 100);
    assert.deepEqual(refused, { firstId: null, stored: [] });
    const next = await storeEvents(beta.db, 'fenced', [draft('resumed', { id, attempt: 2 })], 100);
    assert.equal(next.firstId, 3);
    const window = await storedEventWindow(beta.db, 'fenced', 100);
    assert.deepEqual([window.newestId, window.events.map((event) => (event.data as { text: string }).text)], [3, ['free', 'current', 'resumed']]);
  });
});

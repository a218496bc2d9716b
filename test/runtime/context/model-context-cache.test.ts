import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BACKENDS, createBackend, type TestBackend } from '../../support/backends.ts';
import { openStore, type Store } from '../../../src/store/database.ts';
import { deleteSessionCascade, insertSession } from '../../../src/store/sessions.ts';
import { type SessionRecord } from '../../../src/domain/session.ts';
import { insertTurn } from '../../../src/store/turns.ts';
import { type TurnRecord } from '../../../src/domain/turn.ts';
import { appendHistoryEntry, insertHistoryEntry } from '../../../src/store/history.ts';
import { insertForkedSession } from '../../../src/store/fork.ts';
import { finalizeTurn } from '../../../src/store/finalize.ts';
import { buildHistoryEntry, type HistoryEffect, type NewHistoryEntry } from '../../../src/domain/history-entry.ts';
import { nowIso, uuidv7 } from '../../../src/domain/ids.ts';
import { estimateTokens } from '../../../src/agent/compaction.ts';
import type { CanonicalItem } from '../../../src/agent/providers/types.ts';
import { contextTokens, loadModelContext } from '../../../src/runtime/context/model-context.ts';
import { ModelContextCache } from '../../../src/runtime/context/model-context-cache.ts';

const BOUNDARY = 'default';

function session(): SessionRecord {
  const now = nowIso();
  return {
    id: uuidv7(), createdAt: now, updatedAt: now, provider: 'fake', connection: 'fake', model: 'm', transportModel: null,
    dialect: 'openai-responses', cwd: '/tmp', effort: 'none', title: 'Untitled', titleIsManual: false, archived: false,
    usage: { input: 0, output: 0, cached: 0 }, spentCostUsd: null, context: { usedTokens: 0, window: null }, budget: { tokens: null, costUsd: null }, repository: null, ownsCheckout: false, planMode: false, allowances: [],
  };
}

const user = (text: string): CanonicalItem => ({ type: 'message', role: 'user', content: [{ type: 'input_text', text }] });
const answer = (text: string): CanonicalItem => ({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text }] });

/** An entry of a question and its answer; `extra` items ride along (what JSON turns them into counts). */
function entry(text: string, effect: HistoryEffect = 'append', extra: CanonicalItem[] = []): NewHistoryEntry {
  const items = effect === 'reset' ? [] : [user(text), ...extra, answer(`re: ${text}`)];
  return buildHistoryEntry(
    { turnId: null, at: nowIso(), userText: text, usage: null },
    { kind: 'answered', effect, assistantText: `re: ${text}`, responseId: null, items, discardedText: [], providerTelemetry: [] },
  );
}

function runningTurn(sessionId: string): TurnRecord {
  return {
    id: uuidv7(), boundaryId: BOUNDARY, sessionId, clientRequestId: uuidv7(), inputDigest: 'digest', status: 'running',
    createdAt: nowIso(), startedAt: nowIso(), finishedAt: null, error: null, input: 'hello', userText: 'hello', inputTruncated: false, output: null, attempt: 1,
  };
}

for (const kind of BACKENDS) {
  describe(`model context cache on ${kind}`, () => {
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

    const newSession = async () => {
      const s = session();
      await insertSession(store.db, BOUNDARY, s);
      return s.id;
    };
    /** An append the way compaction makes it: its own transaction, at the index the cache expects. */
    const append = (cache: ModelContextCache, sessionId: string, added: NewHistoryEntry) =>
      cache.append(sessionId, added, (index) => appendHistoryEntry(store.db, sessionId, added, { index }));

    /** The cached context is what a cold load reads from the store, estimate included. */
    async function assertColdEqual(cache: ModelContextCache, sessionId: string): Promise<void> {
      const cached = await cache.current(sessionId);
      const cold = await loadModelContext(store.db, sessionId);
      assert.equal(cached.nextIndex, cold.nextIndex);
      assert.deepEqual(cached.items, cold.items);
      assert.equal(contextTokens(cached), estimateTokens(cold.items));
      assert.equal(contextTokens(cold), estimateTokens(cold.items));
    }

    it('extends the context in memory after append, replace and reset, as a cold load reads it', async () => {
      const cache = new ModelContextCache(store.db);
      const id = await newSession();
      const first = await cache.current(id);
      assert.deepEqual([first.nextIndex, first.items], [0, []]);
      const image = { type: 'message', role: 'user', content: [{ type: 'input_image', image_url: `data:image/png;base64,${'A'.repeat(2_000)}` }] };
      // a field JSON drops: the cached copy must not keep it either
      const call = { type: 'function_call', call_id: 'c1', name: 'shell', arguments: '{}', id: undefined };
      const steps: NewHistoryEntry[] = [
        entry('one', 'append', [image, call]),
        entry('two'),
        entry('summary', 'replace'),
        entry('three'),
        entry('/clear', 'reset'),
        entry('four'),
      ];
      for (const step of steps) {
        const before = await cache.current(id);
        assert.equal(await append(cache, id, step), before.nextIndex);
        const held = await cache.current(id);
        assert.notEqual(held, before);
        // held: the same context again, not read anew
        assert.equal(await cache.current(id), held);
        await assertColdEqual(cache, id);
      }
      assert.equal((await cache.current(id)).nextIndex, steps.length);
    });

    it('hands out frozen contexts, so no turn can change what the next one sees', async () => {
      const cache = new ModelContextCache(store.db);
      const id = await newSession();
      await append(cache, id, entry('one'));
      const { items } = await cache.current(id);
      assert.throws(() => (items as CanonicalItem[]).push(user('sneaked in')), TypeError);
      assert.throws(() => ((items[0].content as any[])[0].text = 'changed'), TypeError);
      await assertColdEqual(cache, id);
    });

    it('forgets the context when a write fails (rolled back), and reads it anew', async () => {
      const cache = new ModelContextCache(store.db);
      const id = await newSession();
      await append(cache, id, entry('kept'));
      const doomed = entry('doomed');
      await assert.rejects(
        cache.append(id, doomed, (index) =>
          store.db.transaction().execute(async (trx) => {
            await appendHistoryEntry(trx, id, doomed, { index });
            throw new Error('later step failed');
          }),
        ),
        /later step failed/,
      );
      assert.equal(cache.size, 0);
      await assertColdEqual(cache, id);
      assert.equal((await cache.current(id)).nextIndex, 1);
    });

    it('answers the stored index when the committed entry cannot be copied into the cache, and reads the context anew', async () => {
      const cache = new ModelContextCache(store.db);
      const id = await newSession();
      await append(cache, id, entry('kept'));
      assert.equal((await cache.current(id)).nextIndex, 1);
      assert.equal(cache.size, 1);
      const stored = entry('stored');
      // the store wrote `stored`; the copy the cache would keep cannot be made (JSON refuses a BigInt)
      const uncopyable = { ...stored, items: [{ ...user('x'), size: 1n }] as unknown as CanonicalItem[] };
      assert.equal(await cache.append(id, uncopyable, (index) => appendHistoryEntry(store.db, id, stored, { index })), 1);
      assert.equal(cache.size, 0);
      await assertColdEqual(cache, id);
      assert.equal((await cache.current(id)).nextIndex, 2);
    });

    it('forgets the context when a turn\'s terminal write fails, and the next turn stores at the same index', async () => {
      const cache = new ModelContextCache(store.db);
      const id = await newSession();
      await append(cache, id, entry('kept'));
      const turn = runningTurn(id);
      await insertTurn(store.db, turn, { input: 'hello', userText: 'hello' });
      // an output JSON cannot hold fails the turn's update after the entry was inserted
      const unstorable = { ...turn, status: 'completed' as const, output: { responseId: null, assistantText: null, assistantTextTruncated: false, completion: { status: 'completed' as const, reasoningTokens: 1n as unknown as number } } };
      const changes = { sessionId: id, updatedAt: nowIso(), derivedTitle: null };
      const lost = entry('lost');
      await assert.rejects(cache.append(id, lost, (index) => finalizeTurn(store.db, unstorable, lost, changes, { index, retryDelaysMs: [] })));
      await assertColdEqual(cache, id);
      const stored = entry('stored');
      const done = { ...turn, status: 'completed' as const, finishedAt: nowIso() };
      assert.equal(await cache.append(id, stored, (index) => finalizeTurn(store.db, done, stored, changes, { index, retryDelaysMs: [] })), 1);
      await assertColdEqual(cache, id);
      assert.deepEqual((await cache.current(id)).items.map((item) => (item.content as any[])[0].text), ['kept', 're: kept', 'stored', 're: stored']);
    });

    it('an entry written behind its back: the expected index is refused, the retry stores after it, and the context is read anew', async () => {
      const cache = new ModelContextCache(store.db);
      const id = await newSession();
      await append(cache, id, entry('one'));
      await insertHistoryEntry(store.db, id, { ...entry('elsewhere'), index: 1 });
      const turn = runningTurn(id);
      await insertTurn(store.db, turn, { input: 'hello', userText: 'hello' });
      const mine = entry('mine');
      const changes = { sessionId: id, updatedAt: nowIso(), derivedTitle: null };
      const index = await cache.append(id, mine, (expected) => finalizeTurn(store.db, { ...turn, status: 'completed', finishedAt: nowIso() }, mine, changes, { index: expected, retryDelaysMs: [0] }));
      assert.equal(index, 2);
      assert.equal(cache.size, 0);
      await assertColdEqual(cache, id);
      assert.equal((await cache.current(id)).items.length, 6);
    });

    it('gives a fork its own context, and a deleted session none', async () => {
      const cache = new ModelContextCache(store.db);
      const parent = await newSession();
      for (const text of ['one', 'two', 'three']) await append(cache, parent, entry(text));
      const held = await cache.current(parent);
      const child = { ...session(), title: 'fork' };
      await insertForkedSession(store.db, BOUNDARY, child, parent, 1);
      await assertColdEqual(cache, child.id);
      assert.equal((await cache.current(child.id)).nextIndex, 2);
      assert.equal(await cache.current(parent), held, 'the parent\'s context is untouched');
      await append(cache, child.id, entry('child only'));
      await assertColdEqual(cache, child.id);
      await assertColdEqual(cache, parent);

      cache.forget(parent);
      assert.ok(await deleteSessionCascade(store.db, BOUNDARY, parent));
      const gone = await cache.current(parent);
      assert.deepEqual([gone.nextIndex, gone.items], [0, []]);
    });

    it('does not keep a cold load that an append overtook', async () => {
      const cache = new ModelContextCache(store.db);
      const id = await newSession();
      await appendHistoryEntry(store.db, id, entry('one'));
      const loading = cache.current(id);
      // an append while the load is in flight (no cached context: it reads its index)
      await append(cache, id, entry('two'));
      await loading;
      await assertColdEqual(cache, id);
      assert.equal((await cache.current(id)).nextIndex, 2);
    });

    it('keeps the most recently used sessions within its bounds', async () => {
      const cache = new ModelContextCache(store.db, { sessions: 2, chars: 10_000 });
      const [a, b, c] = [await newSession(), await newSession(), await newSession()];
      for (const id of [a, b, c]) await append(cache, id, entry(`in ${id}`));
      await cache.current(a);
      await cache.current(b);
      const heldB = await cache.current(b);
      await cache.current(c);
      assert.equal(cache.size, 2);
      assert.equal(await cache.current(b), heldB, 'b was used after a, so a went first');
      const big = await newSession();
      await appendHistoryEntry(store.db, big, entry('x'.repeat(20_000)));
      await assertColdEqual(cache, big);
      assert.equal(cache.size, 2);
      assert.notEqual(await cache.current(big), await cache.current(big), 'a context larger than the bound is never kept');
    });
  });
}

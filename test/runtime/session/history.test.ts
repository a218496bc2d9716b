import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { BACKENDS } from '../../support/backends.ts';
import { waitForStatus, waitForTurn } from '../../support/server.ts';
import { insertHistoryEntry } from '../../../src/store/history.ts';
import { startHarness, storedTurn, type Harness } from './history-support.ts';

for (const backend of BACKENDS) {
  describe(`history pages on ${backend}`, () => {
    let h: Harness;
    before(async () => {
      h = await startHarness(backend);
    });
    after(async () => h.close());

    it('stores a real turn and shows it projected, with the session reference', async () => {
      const session = await h.newSession();
      h.fake.enqueue({ kind: 'reply', text: 'Hello back.', usage: { input: 12, output: 3, cached: 0 } });
      const turn = await h.runTurn(session.id, 'Hello there');
      assert.equal(turn.status, 'completed');
      const page = await h.page(session.id);
      assert.equal(page.session.id, session.id);
      assert.equal(page.session.title, 'Hello there');
      assert.equal(page.total, 1);
      assert.equal(page.generationStart, 0);
      assert.equal(page.hasOlder, false);
      assert.equal(page.hasNewer, false);
      assert.equal(page.nextCursor, null);
      assert.equal(page.data.length, 1);
      const entry = page.data[0];
      assert.equal(entry.index, 0);
      assert.equal(entry.turn.userText, 'Hello there');
      assert.equal(entry.turn.assistantText, 'Hello back.');
      assert.equal(entry.turn.effect, 'append');
      assert.equal(entry.turn.error, null);
      assert.deepEqual(entry.turn.usage, { input: 12, output: 3, cached: 0 });
      assert.deepEqual(entry.turn.items.map((item: any) => `${item.type}:${item.role}`), ['message:user', 'message:assistant']);
      assert.equal(entry.turn.status, undefined);
      assert.equal(entry.turn.providerTelemetry.length, 1);
      assert.equal(typeof entry.turn.providerTelemetry[0].models, 'object');
    });

    it('pages newest first by cursor: each page oldest first, nothing skipped or repeated', async () => {
      const session = await h.newSession();
      await h.insertTurns(session.id, 0, 7);
      const first = await h.page(session.id, '?limit=3');
      assert.deepEqual(first.data.map((entry: any) => entry.index), [4, 5, 6]);
      assert.deepEqual([first.total, first.hasOlder, first.hasNewer, first.nextCursor], [7, true, false, 4]);
      assert.equal(first.data[2].turn.userText, 'question 6');
      const second = await h.page(session.id, `?limit=3&cursor=${first.nextCursor}`);
      assert.deepEqual(second.data.map((entry: any) => entry.index), [1, 2, 3]);
      assert.deepEqual([second.hasOlder, second.hasNewer, second.nextCursor], [true, true, 1]);
      const third = await h.page(session.id, `?limit=3&cursor=${second.nextCursor}`);
      assert.deepEqual(third.data.map((entry: any) => entry.index), [0]);
      assert.deepEqual([third.hasOlder, third.hasNewer, third.nextCursor], [false, true, null]);
      const whole = await h.page(session.id);
      assert.deepEqual(whole.data.map((entry: any) => entry.index), [0, 1, 2, 3, 4, 5, 6]);
      assert.equal(whole.nextCursor, null);
    });

    it('answers the edges of the cursor range', async () => {
      const session = await h.newSession();
      const empty = await h.page(session.id);
      assert.deepEqual([empty.data, empty.total, empty.hasOlder, empty.hasNewer, empty.nextCursor], [[], 0, false, false, null]);
      await h.insertTurns(session.id, 0, 4);
      const atZero = await h.page(session.id, '?cursor=0');
      assert.deepEqual([atZero.data, atZero.hasOlder, atZero.hasNewer, atZero.nextCursor], [[], false, true, null]);
      const beyond = await h.page(session.id, '?cursor=1000&limit=2');
      assert.deepEqual(beyond.data.map((entry: any) => entry.index), [2, 3]);
      assert.deepEqual([beyond.hasNewer, beyond.nextCursor], [false, 2]);
    });

    it('rejects bad limits and cursors, and unknown sessions', async () => {
      const session = await h.newSession();
      for (const query of ['?limit=0', '?limit=101', '?limit=abc', '?limit=1&limit=2']) {
        const response = await h.server.request('GET', `/v1/sessions/${session.id}/history${query}`);
        assert.equal(response.status, 400, query);
        assert.equal(response.json.error.code, 'invalid_limit');
      }
      for (const query of ['?cursor=-1', '?cursor=1.5', '?cursor=x', '?cursor=']) {
        const response = await h.server.request('GET', `/v1/sessions/${session.id}/history${query}`);
        assert.equal(response.status, 400, query);
        assert.equal(response.json.error.code, 'invalid_cursor');
      }
      const missing = await h.server.request('GET', '/v1/sessions/0190aaaa-0000-7000-8000-000000000000/history');
      assert.equal(missing.status, 404);
      assert.equal(missing.json.error.code, 'session_not_found');
    });

    it('reports generationStart at the newest reset and keeps every effect unflattened', async () => {
      const session = await h.newSession();
      const effects = ['append', 'reset', 'append', 'replace', 'append', 'reset', 'append'] as const;
      await h.insertTurns(session.id, 0, effects.length, (index) => effects[index]);
      const page = await h.page(session.id, '?limit=2');
      assert.equal(page.generationStart, 5);
      assert.deepEqual(page.data.map((entry: any) => entry.turn.effect), ['reset', 'append']);
      const all = await h.page(session.id);
      assert.deepEqual(all.data.map((entry: any) => entry.turn.effect), [...effects]);
      const other = await h.newSession();
      await h.insertTurns(other.id, 0, 3, (index) => (index === 1 ? 'replace' : 'append'));
      assert.equal((await h.page(other.id)).generationStart, 0);
    });

    it('projects each turn under one budget: redaction, cut strings and the truncation marker', async () => {
      const session = await h.newSession();
      const turn = storedTurn(0);
      turn.userText = 'u'.repeat(20_000);
      turn.items = [
        { type: 'reasoning', summary: [{ type: 'summary_text', text: 'thinking' }], encrypted_content: 'SECRET-BLOB' },
        { type: 'mystery_tag', payload: 'kept out' },
        ...Array.from({ length: 6 }, (_, n) => ({ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: `${n}`.repeat(16_000) }] })),
      ];
      turn.displayItems = [{ type: 'message', role: 'assistant', status: 'incomplete', content: [{ type: 'output_text', text: 'partial' }] }];
      await insertHistoryEntry(h.server.server.store.db, session.id, turn);
      const [entry] = (await h.page(session.id)).data;
      assert.equal(entry.turn.userText.length, 16_383);
      assert.equal(entry.turn.items[0].encrypted_content, '<redacted>');
      assert.deepEqual(entry.turn.items[1], { type: 'mystery_tag' });
      assert.equal(entry.turn.projectionTruncated, true);
      assert.ok(JSON.stringify(entry.turn).length < 80_000);
      assert.ok(!JSON.stringify(entry).includes('SECRET-BLOB'));
    });

    it('shows an active turn as a provisional entry on the latest page only, and never stores it', async () => {
      const session = await h.newSession();
      await h.insertTurns(session.id, 0, 2);
      h.fake.enqueue({ kind: 'hang', afterText: 'thinking…' });
      const submitted = (await h.server.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input: 'Still working?' } })).json;
      await waitForStatus(h.server, submitted.id, 'running');
      await h.fake.waitForRequests(h.fake.requests.length);

      const latest = await h.page(session.id);
      assert.equal(latest.total, 3);
      assert.deepEqual(latest.data.map((entry: any) => entry.index), [0, 1, 2]);
      const provisional = latest.data[2].turn;
      assert.equal(provisional.status, 'running');
      assert.equal(provisional.userText, 'Still working?');
      assert.deepEqual([provisional.items, provisional.displayItems, provisional.usage, provisional.assistantText], [[], [], null, null]);
      assert.equal(latest.hasNewer, false);

      const onlyNewest = await h.page(session.id, '?limit=1');
      assert.deepEqual(onlyNewest.data.map((entry: any) => entry.index), [2]);
      assert.equal(onlyNewest.nextCursor, 2);
      const older = await h.page(session.id, `?limit=1&cursor=${onlyNewest.nextCursor}`);
      assert.deepEqual(older.data.map((entry: any) => entry.index), [1]);
      assert.equal(older.data[0].turn.status, undefined);
      assert.equal(older.hasNewer, true);

      await h.server.request('POST', `/v1/turns/${submitted.id}/cancel`);
      await waitForTurn(h.server, submitted.id);
      const after = await h.page(session.id);
      assert.equal(after.total, 3);
      assert.equal(after.data[2].turn.status, undefined);
      assert.equal(after.data[2].turn.error, 'cancelled');
      assert.equal(after.data[2].turn.userText, 'Still working?');
    });

    it('leaves a turn with blank input out of the provisional entries', async () => {
      const session = await h.newSession();
      h.fake.enqueue({ kind: 'hang' });
      const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
      const response = await h.server.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input: '   ', images: [{ mimeType: 'image/png', data: png }] } });
      assert.equal(response.status, 202, response.text);
      await waitForStatus(h.server, response.json.id, 'running');
      const page = await h.page(session.id);
      assert.deepEqual([page.total, page.data.length], [0, 0]);
      await h.server.request('POST', `/v1/turns/${response.json.id}/cancel`);
      await waitForTurn(h.server, response.json.id);
    });
  });
}

import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { BACKENDS } from '../support/backends.ts';
import { breakHistoryInserts } from '../support/storage-faults.ts';
import { startHarness, type Harness } from '../runtime/session/history-support.ts';
import { loadModelContext } from '../../src/runtime/context/model-context.ts';
import { HISTORY_NOT_STORED } from '../../src/runtime/turn/turn-ends.ts';

/*
 * The model context a turn sends comes from memory (runtime/context/model-context-cache.ts) after the
 * session's first turn: each turn's first model request must carry exactly what a cold load of the
 * stored history gives, then the turn's user message, whatever the session went through.
 */
for (const backend of BACKENDS) {
  describe(`the model context of turns on ${backend}`, () => {
    let h: Harness;
    before(async () => {
      h = await startHarness(backend);
    });
    after(async () => h.close());

    const db = () => h.server.server.store.db;

    /** Runs a turn and checks its first model request against the stored context read before it. */
    async function turnSeesStoredContext(sessionId: string, input: string, ...replies: Parameters<Harness['fake']['enqueue']>): Promise<any> {
      const cold = await loadModelContext(db(), sessionId);
      h.fake.enqueue(...replies);
      const first = h.fake.requests.length;
      const turn = await h.runTurn(sessionId, input);
      const sent = h.fake.requests[first].body.input as any[];
      assert.deepEqual(sent.slice(0, -1), cold.items, `the context of "${input}"`);
      assert.deepEqual(sent.at(-1).content, [{ type: 'input_text', text: input }]);
      return turn;
    }

    it('sends what a cold load gives after appends, a tool round trip, /compact, a failed terminal write, /clear and a fork', async () => {
      const session = await h.newSession();
      const id = session.id;
      await turnSeesStoredContext(id, 'look around', { kind: 'reply', text: 'Looking. ', toolCalls: [{ name: 'list_dir', arguments: '{}', callId: 'call_1' }] }, { kind: 'reply', text: 'Empty.' });
      await turnSeesStoredContext(id, 'and now?', { kind: 'reply', text: 'Still empty.' });

      h.fake.enqueue({ kind: 'reply', text: 'We looked around; it was empty.' });
      assert.equal((await h.runTurn(id, '/compact')).status, 'completed');
      await turnSeesStoredContext(id, 'after the summary', { kind: 'reply', text: 'Noted.' });

      const repair = await breakHistoryInserts(backend, db());
      h.fake.enqueue({ kind: 'reply', text: 'an answer that is not stored' });
      const lost = await h.runTurn(id, 'lost turn');
      await repair();
      assert.deepEqual([lost.status, lost.error], ['failed', HISTORY_NOT_STORED]);
      await turnSeesStoredContext(id, 'after the failure', { kind: 'reply', text: 'Here.' });

      const fork = (await h.server.request('POST', `/v1/sessions/${id}/fork`, { body: {} })).json;
      await turnSeesStoredContext(fork.id, 'in the fork', { kind: 'reply', text: 'Forked.' });
      await turnSeesStoredContext(id, 'the parent again', { kind: 'reply', text: 'Parent.' });

      assert.equal((await h.runTurn(id, '/clear')).status, 'completed');
      await turnSeesStoredContext(id, 'a new generation', { kind: 'reply', text: 'Fresh.' });
      await turnSeesStoredContext(id, 'and on', { kind: 'reply', text: 'On.' });
      assert.equal((await loadModelContext(db(), id)).items.length, 4);

      assert.equal((await h.server.request('DELETE', `/v1/sessions/${id}`)).status, 204);
      await turnSeesStoredContext(fork.id, 'the fork outlives its parent', { kind: 'reply', text: 'Still here.' });
    });
  });
}

// The text codec (store/text-codec.ts) on every free-text column a client or provider can fill,
// through the real server on both databases: U+0000 (which PostgreSQL refuses in text), a lone
// surrogate (which UTF-8 drivers turn into U+FFFD) and the codec's own marker come back exactly.
// Issue 33: with the codec dropped from the turn's error column, a provider error holding U+0000
// ended the turn `internal_error` on PostgreSQL, and no test sent one.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BACKENDS } from '../support/backends.ts';
import { waitForTurn } from '../support/server.ts';
import { useFakeServer } from '../support/harness.ts';
import { readHistoryRange } from '../../src/store/history.ts';
import { STORED_TEXT_MARKER } from '../../src/store/text-codec.ts';

const AWKWARD = `nul \u0000 lone \ud800 marker ${STORED_TEXT_MARKER}0000 end`;

for (const backend of BACKENDS) {
  describe(`awkward text in every text column on ${backend}`, () => {
    const harness = useFakeServer({ backend });
    const request = (method: string, path: string, body?: unknown) => harness.server.request(method, path, body === undefined ? {} : { body });

    it('keeps a session title', async () => {
      const created = await request('POST', '/v1/sessions', { title: AWKWARD });
      assert.equal(created.status, 201, created.text);
      assert.equal((await request('GET', `/v1/sessions/${created.json.id}`)).json.title, AWKWARD);
      const patched = await request('PATCH', `/v1/sessions/${created.json.id}`, { title: `${AWKWARD} again` });
      assert.equal(patched.status, 200, patched.text);
      assert.equal((await request('GET', `/v1/sessions/${created.json.id}`)).json.title, `${AWKWARD} again`);
    });

    it("keeps a turn's input and the model's answer, in the turn, its result and the history", async () => {
      const session = await harness.newSession();
      harness.fake.enqueue({ kind: 'reply', text: `answer: ${AWKWARD}` });
      const turn = await harness.submit(session.id, AWKWARD);
      const done = await waitForTurn(harness.server, turn.id);
      assert.equal(done.status, 'completed', JSON.stringify(done.error));
      assert.equal(done.input, AWKWARD);
      assert.equal(done.userText, AWKWARD);
      const result = (await request('GET', `/v1/turns/${turn.id}/result`)).json;
      assert.equal(result.output.assistantText, `answer: ${AWKWARD}`);
      const [stored] = await readHistoryRange(harness.server.server.store.db, session.id, 0, 10);
      assert.equal(stored.userText, AWKWARD);
      assert.equal(stored.assistantText, `answer: ${AWKWARD}`);
    });

    it("keeps a provider's error holding U+0000: the turn fails with it, not with internal_error", async () => {
      const session = await harness.newSession();
      harness.fake.enqueue({ kind: 'http-error', status: 400, body: { error: { message: `bad request ${AWKWARD}`, type: 'invalid_request_error', param: null, code: 'bad' } } });
      const turn = await harness.submit(session.id, 'fail please');
      const done = await waitForTurn(harness.server, turn.id);
      assert.equal(done.status, 'failed');
      assert.match(done.error, /^provider_error: /);
      assert.ok(done.error.includes('\u0000') && done.error.includes('\ud800'), `the error keeps the provider's words: ${JSON.stringify(done.error)}`);
      const fetched = (await request('GET', `/v1/turns/${turn.id}`)).json;
      assert.equal(fetched.error, done.error);
      const [stored] = await readHistoryRange(harness.server.server.store.db, session.id, 0, 10);
      assert.equal(stored.error, done.error);
    });
  });
}

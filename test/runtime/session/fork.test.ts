import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BACKENDS } from '../../support/backends.ts';
import { waitForStatus, waitForTurn } from '../../support/server.ts';
import { lastRequest, messageTexts, startHarness, type Harness } from './history-support.ts';

for (const backend of BACKENDS) {
  describe(`forks on ${backend}`, () => {
    let h: Harness;
    before(async () => {
      h = await startHarness(backend);
    });
    after(async () => h.close());

    const fork = (sessionId: string, body: unknown) => h.server.request('POST', `/v1/sessions/${sessionId}/fork`, { body });

    /** A parent with three completed turns: "one" → "1", "two" → "2", "three" → "3". */
    async function parentWithThreeTurns() {
      const parent = await h.newSession({ title: 'Parent' });
      for (const [input, reply] of [['one', '1'], ['two', '2'], ['three', '3']]) {
        h.fake.enqueue({ kind: 'reply', text: reply, usage: { input: 7, output: 1, cached: 0 } });
        assert.equal((await h.runTurn(parent.id, input)).status, 'completed');
      }
      return (await h.server.request('GET', `/v1/sessions/${parent.id}`)).json;
    }

    it('copies the current transcript into a new session with its own id, usage and history', async () => {
      const parent = await parentWithThreeTurns();
      const response = await fork(parent.id, {});
      assert.equal(response.status, 201, response.text);
      const child = response.json;
      assert.notEqual(child.id, parent.id);
      assert.deepEqual([child.title, child.titleIsManual, child.cwd, child.model, child.effort], [parent.title, true, parent.cwd, parent.model, parent.effort]);
      assert.deepEqual(child.usage, { input: 0, output: 0, cached: 0 });
      assert.equal(child.archived, false);
      assert.ok(child.createdAt >= parent.updatedAt);
      assert.deepEqual((await h.server.request('GET', `/v1/sessions/${child.id}`)).json, child);

      const parentPage = await h.page(parent.id);
      const childPage = await h.page(child.id);
      assert.equal(childPage.session.id, child.id);
      assert.equal(childPage.total, 3);
      assert.deepEqual(childPage.data, parentPage.data);
      assert.deepEqual(childPage.data.map((entry: any) => entry.turn.userText), ['one', 'two', 'three']);
    });

    it('forks at several points; each fork sends only its own context, and the parent never sees the child', async () => {
      const parent = await parentWithThreeTurns();
      for (const throughTurn of [0, 1, 2]) {
        const response = await fork(parent.id, { throughTurn });
        assert.equal(response.status, 201, response.text);
        const child = response.json;
        assert.deepEqual([child.title, child.cwd], [parent.title, parent.cwd]);
        assert.equal((await h.page(child.id)).total, throughTurn + 1);

        h.fake.enqueue({ kind: 'reply', text: `child ${throughTurn}` });
        await h.runTurn(child.id, `next after ${throughTurn}`);
        const expected = ['one', 'two', 'three']
          .slice(0, throughTurn + 1)
          .flatMap((input, n) => [`user: ${input}`, `assistant: ${n + 1}`]);
        assert.deepEqual(messageTexts(lastRequest(h.fake)), [...expected, `user: next after ${throughTurn}`]);

        const childPage = await h.page(child.id);
        assert.equal(childPage.total, throughTurn + 2);
        assert.equal(childPage.data.at(-1).index, throughTurn + 1);
      }
      h.fake.enqueue({ kind: 'reply', text: 'parent again' });
      await h.runTurn(parent.id, 'four');
      assert.deepEqual(messageTexts(lastRequest(h.fake)), ['user: one', 'assistant: 1', 'user: two', 'assistant: 2', 'user: three', 'assistant: 3', 'user: four']);
      assert.equal((await h.page(parent.id)).total, 4);
    });

    it('keeps effects when copying, so a fork after a reset starts from the same generation', async () => {
      const parent = await h.newSession();
      await h.insertTurns(parent.id, 0, 4, (index) => (index === 2 ? 'reset' : 'append'));
      const child = (await fork(parent.id, { throughTurn: 3 })).json;
      const page = await h.page(child.id);
      assert.equal(page.generationStart, 2);
      assert.deepEqual(page.data.map((entry: any) => entry.turn.effect), ['append', 'append', 'reset', 'append']);
      h.fake.enqueue({ kind: 'reply', text: 'ok' });
      await h.runTurn(child.id, 'after the reset');
      assert.deepEqual(messageTexts(lastRequest(h.fake)), ['user: question 3', 'assistant: answer 3', 'user: after the reset']);
    });

    it('lets a transcript fork take a new title and cwd', async () => {
      const parent = await h.newSession();
      await h.insertTurns(parent.id, 0, 2);
      mkdirSync(join(h.server.workspace, 'elsewhere'), { recursive: true });
      const response = await fork(parent.id, { title: 'Experiment', cwd: 'elsewhere' });
      assert.equal(response.status, 201, response.text);
      assert.deepEqual([response.json.title, response.json.titleIsManual, response.json.cwd], ['Experiment', true, join(h.server.workspace, 'elsewhere')]);
      assert.equal((await h.page(response.json.id)).total, 2);
      const untitled = (await fork((await h.newSession()).id, {})).json;
      assert.deepEqual([untitled.titleIsManual, (await h.page(untitled.id)).total], [false, 0]);
    });

    it('refuses shapes, points and places it cannot fork to', async () => {
      const parent = await h.newSession();
      await h.insertTurns(parent.id, 0, 2);
      for (const body of [{ throughTurn: 0, title: 'x' }, { throughTurn: 1, cwd: '.' }]) {
        const response = await fork(parent.id, body);
        assert.equal(response.status, 422);
        assert.equal(response.json.error.code, 'unsupported_fork_shape');
      }
      const beyond = await fork(parent.id, { throughTurn: 2 });
      assert.deepEqual([beyond.status, beyond.json.error.code], [422, 'fork_point_out_of_range']);
      const emptyParent = await h.newSession();
      const none = await fork(emptyParent.id, { throughTurn: 0 });
      assert.deepEqual([none.status, none.json.error.code], [422, 'fork_point_out_of_range']);
      const negative = await fork(parent.id, { throughTurn: -1 });
      assert.deepEqual([negative.status, negative.json.error.code], [400, 'invalid_json']);
      const unknownField = await fork(parent.id, { through: 1 });
      assert.deepEqual([unknownField.status, unknownField.json.error.code], [400, 'invalid_json']);
      const outside = realpathSync(mkdtempSync(join(tmpdir(), 'agentd-outside-')));
      const escaped = await fork(parent.id, { cwd: outside });
      assert.deepEqual([escaped.status, escaped.json.error.code], [403, 'workspace_not_allowed']);
      const missing = await fork('0190aaaa-0000-7000-8000-000000000000', {});
      assert.deepEqual([missing.status, missing.json.error.code], [404, 'session_not_found']);
    });

    it('answers 409 session_busy while the parent has an active turn', async () => {
      const parent = await h.newSession();
      h.fake.enqueue({ kind: 'hang' });
      const turn = (await h.server.request('POST', `/v1/sessions/${parent.id}/turns`, { body: { input: 'busy' } })).json;
      await waitForStatus(h.server, turn.id, 'running');
      for (const body of [{}, { throughTurn: 0 }]) {
        const response = await fork(parent.id, body);
        assert.deepEqual([response.status, response.json.error.code], [409, 'session_busy']);
      }
      await h.server.request('POST', `/v1/turns/${turn.id}/cancel`);
      await waitForTurn(h.server, turn.id);
      assert.equal((await fork(parent.id, {})).status, 201);
    });
  });
}

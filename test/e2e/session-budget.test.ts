/**
 * Budgets that ask (CONTRACT.md §19) through the real server and the fake provider: a session's
 * `budget` is checked before each model request of every agent of a turn; at or past a limit the
 * turn waits on a `budget` request, `raise` goes on with a new limit above `spent`, `stop` ends
 * the turn completed, incomplete, `budget_exhausted`. At the budget and one under it, in tokens
 * and in dollars, with child agents' spending counted.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { BACKENDS } from '../support/backends.ts';
import { waitForStatus, waitForTurn, type TestServer } from '../support/server.ts';
import type { FakeProvider } from '../support/fake-provider.ts';
import { useFakeServer } from '../support/harness.ts';
import { readHistoryRange } from '../../src/store/history.ts';

const readNotes = (callId: string) => ({ name: 'read_file', arguments: '{"path":"notes.txt"}', callId });
const spawn = (callId: string, label: string, prompt: string) => ({ name: 'spawn_agent', arguments: JSON.stringify({ label, prompt }), callId });

for (const backend of BACKENDS) {
  describe(`budgets that ask on ${backend}`, () => {
    let fake!: FakeProvider;
    let server!: TestServer;
    const harness = useFakeServer({ backend, confinement: 'off' });
    before(() => {
      ({ fake, server } = harness);
      writeFileSync(join(server.workspace, 'notes.txt'), 'the answer is 42\n');
    });
    const getSession = async (id: string) => (await server.request('GET', `/v1/sessions/${id}`)).json;
    const patch = (id: string, body: unknown) => server.request('PATCH', `/v1/sessions/${id}`, { body });

    /** A turn whose first request spends 20 + 10 tokens and calls a tool, then answers. */
    async function turnSpending30(sessionId: string, opening: string) {
      fake.route(opening, { kind: 'reply', text: 'Reading.', toolCalls: [readNotes(`call_${randomUUID().slice(0, 8)}`)], usage: { input: 20, output: 10 } }, { kind: 'reply', text: 'It says 42.', usage: { input: 25, output: 5 } });
      return harness.submit(sessionId, opening);
    }
    const requestsOf = (opening: string) => fake.requests.filter((request) => JSON.stringify(request.body).includes(opening));

    it('a session shows its budget and spent; one token under the limit, the turn never asks', async () => {
      const session = await harness.newSession({ budget: { tokens: 31 } });
      assert.deepEqual(session.budget, { tokens: 31, costUsd: null });
      assert.deepEqual(session.spent, { tokens: 0, costUsd: 0 });
      const opening = `under ${randomUUID()}`;
      const turn = await turnSpending30(session.id, opening);
      const done = await waitForTurn(server, turn.id);
      assert.equal(done.status, 'completed', done.error);
      assert.equal(harness.events.ofTurn(turn.id).filter((event) => event.type === 'request.created').length, 0);
      assert.equal(requestsOf(opening).length, 2);
      assert.deepEqual((await getSession(session.id)).spent, { tokens: 60, costUsd: (45 * 1 + 15 * 2) / 1e6 });
    });

    it('at the limit the turn waits on a budget request; a raise not above spent is refused, a raise above it goes on', async () => {
      const session = await harness.newSession({ budget: { tokens: 30 } });
      const opening = `at the limit ${randomUUID()}`;
      const turn = await turnSpending30(session.id, opening);
      const request = await harness.nthRequestOf(turn.id, 1);
      assert.equal(request.kind, 'budget');
      assert.deepEqual(request.options, ['raise', 'stop']);
      assert.match(request.prompt, /spent 30 tokens of its budget of 30/);
      assert.equal((await waitForStatus(server, turn.id, 'waiting_for_input')).status, 'waiting_for_input');
      assert.equal(requestsOf(opening).length, 1, 'the next request waits for the answer');

      for (const value of [undefined, '30', '29', 'lots', '1e9', '-5', '40.5']) {
        const refused = await harness.resolve(request.id, value === undefined ? { decision: 'raise' } : { decision: 'raise', value });
        assert.deepEqual([refused.status, refused.json.error?.code], [422, 'invalid_decision'], String(value));
      }
      assert.equal((await server.request('GET', `/v1/requests?turnId=${turn.id}`)).json.data.length, 1, 'still pending');

      const raised = await harness.resolve(request.id, { decision: 'raise', value: '31' });
      assert.equal(raised.status, 200, raised.text);
      const done = await waitForTurn(server, turn.id);
      assert.equal(done.status, 'completed', done.error);
      const result = (await server.request('GET', `/v1/turns/${turn.id}/result`)).json;
      assert.deepEqual(result.output.completion.status, 'completed');
      assert.equal(requestsOf(opening).length, 2);
      const after = await getSession(session.id);
      assert.deepEqual(after.budget, { tokens: 31, costUsd: null }, 'the raise is the session\'s budget');
      const updated = harness.events.events.filter((event) => event.type === 'session.updated' && event.data.sessionId === session.id);
      assert.ok(updated.some((event) => event.data.data.session.budget.tokens === 31), 'announced as session.updated');
    });

    it('stop ends the turn completed, incomplete, budget_exhausted, without another request', async () => {
      const session = await harness.newSession({ budget: { tokens: 30 } });
      const opening = `stop ${randomUUID()}`;
      const turn = await turnSpending30(session.id, opening);
      const request = await harness.nthRequestOf(turn.id, 1);
      assert.equal((await harness.resolve(request.id, { decision: 'stop', value: 'ignored' })).status, 200);
      const done = await waitForTurn(server, turn.id);
      assert.equal(done.status, 'completed');
      const result = (await server.request('GET', `/v1/turns/${turn.id}/result`)).json;
      assert.deepEqual([result.output.completion.status, result.output.completion.reason], ['incomplete', 'budget_exhausted']);
      assert.equal(requestsOf(opening).length, 1);
      assert.equal((await getSession(session.id)).spent.tokens, 30);
      const [entry] = await readHistoryRange(server.server.store.db, session.id, 0, 1);
      assert.ok(entry.items.some((item: any) => item.type === 'function_call_output'), 'the work done so far is history');
      // the next turn asks again at once: spent is still at the limit
      const next = await harness.submit(session.id, 'go on');
      assert.equal((await harness.nthRequestOf(next.id, 1)).kind, 'budget');
      await server.request('POST', `/v1/turns/${next.id}/cancel`);
      assert.equal((await waitForTurn(server, next.id)).status, 'cancelled');
    });

    it('a dollar limit: at it the turn asks; the raise is a decimal above spent', async () => {
      const session = await harness.newSession({ budget: { costUsd: 0.00006 } });
      const opening = `dollars ${randomUUID()}`;
      const turn = await turnSpending30(session.id, opening); // 20 × $1/M + 10 × $2/M = $0.00004
      await new Promise((resolve) => setTimeout(resolve, 0));
      const done1 = await waitForTurn(server, turn.id);
      assert.equal(done1.status, 'completed', 'under the limit after the first request: no question');
      // $0.00004 + 25 × $1/M + 5 × $2/M = $0.000075 now: the next turn asks before its first request
      const next = await harness.submit(session.id, `${opening} again`);
      const request = await harness.nthRequestOf(next.id, 1);
      assert.equal(request.kind, 'budget');
      assert.match(request.prompt, /spent 0\.000075 US dollars of its budget of 0\.00006/);
      const refused = await harness.resolve(request.id, { decision: 'raise', value: '0.00007' });
      assert.deepEqual([refused.status, refused.json.error.code], [422, 'invalid_decision']);
      assert.equal((await harness.resolve(request.id, { decision: 'raise', value: '0.5' })).status, 200);
      assert.equal((await waitForTurn(server, next.id)).status, 'completed');
      assert.deepEqual((await getSession(session.id)).budget, { tokens: null, costUsd: 0.5 });
    });

    it('spent counts every agent of the turn: a child agent\'s spending reaches the limit', async () => {
      const session = await harness.newSession({ budget: { tokens: 50 } });
      const tag = randomUUID().slice(0, 8);
      fake.route(`MAIN-${tag}`, { kind: 'reply', toolCalls: [spawn(`call_spawn_${tag}`, 'helper', `CHILD-${tag} count to ten`)], usage: { input: 8, output: 2 } }, { kind: 'reply', text: 'never asked' });
      // the child alone spends 45: with the main agent's 10 the turn is at 55, past 50
      fake.route(`CHILD-${tag}`, { kind: 'reply', text: 'one to ten', usage: { input: 40, output: 5 } });
      const turn = await harness.submit(session.id, `MAIN-${tag}`);
      const request = await harness.nthRequestOf(turn.id, 1);
      assert.equal(request.kind, 'budget');
      assert.match(request.prompt, /spent 55 tokens of its budget of 50/);
      await harness.resolve(request.id, { decision: 'stop' });
      const done = await waitForTurn(server, turn.id);
      assert.equal(done.status, 'completed');
      assert.equal((await server.request('GET', `/v1/turns/${turn.id}/result`)).json.output.completion.reason, 'budget_exhausted');
      assert.equal(fake.requests.filter((sent) => JSON.stringify(sent.body).includes(`MAIN-${tag}`)).length, 1, 'the main agent made no second request');
      assert.equal((await getSession(session.id)).spent.tokens, 55);
    });

    it('a child agent that reaches the limit waits on the turn\'s budget request before its next request', async () => {
      const session = await harness.newSession({ budget: { tokens: 40 } });
      const tag = randomUUID().slice(0, 8);
      fake.route(`MAIN-${tag}`, { kind: 'reply', toolCalls: [spawn(`call_spawn_${tag}`, 'reader', `CHILD-${tag} read the notes`)], usage: { input: 5, output: 5 } }, { kind: 'reply', text: 'the child said 42', usage: { input: 1, output: 1 } });
      fake.route(`CHILD-${tag}`, { kind: 'reply', toolCalls: [readNotes(`call_child_${tag}`)], usage: { input: 25, output: 5 } }, { kind: 'reply', text: '42', usage: { input: 1, output: 1 } });
      const turn = await harness.submit(session.id, `MAIN-${tag}`);
      const request = await harness.nthRequestOf(turn.id, 1);
      assert.match(request.prompt, /spent 40 tokens/);
      assert.equal(fake.requests.filter((sent) => JSON.stringify(sent.body).includes(`CHILD-${tag}`)).length, 1, 'the child waits before its second request');
      await harness.resolve(request.id, { decision: 'raise', value: '100' });
      assert.equal((await waitForTurn(server, turn.id)).status, 'completed');
      assert.equal((await server.request('GET', `/v1/turns/${turn.id}/result`)).json.output.assistantText, 'the child said 42');
      assert.equal((await getSession(session.id)).spent.tokens, 44);
    });

    it('input steered in while the turn waits on its budget reaches the request after the raise', async () => {
      const session = await harness.newSession({ budget: { tokens: 30 } });
      const opening = `steer and budget ${randomUUID()}`;
      const turn = await turnSpending30(session.id, opening);
      const request = await harness.nthRequestOf(turn.id, 1);
      const steered = await server.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input: 'mind the budget', steer: true } });
      assert.equal(steered.json.delivery, 'steered');
      await harness.resolve(request.id, { decision: 'raise', value: '1000' });
      await waitForTurn(server, turn.id);
      const [, second] = requestsOf(opening);
      assert.equal(JSON.stringify(second.body).split('mind the budget').length - 1, 1);
    });

    it('refusals: a negative or fractional token limit, two PATCH fields, a PATCH while a turn runs; an empty budget clears it', async () => {
      for (const budget of [{ tokens: -1 }, { tokens: 1.5 }, { costUsd: -0.1 }, { tokens: '10' }, { other: 1 }]) {
        const refused = await server.request('POST', '/v1/sessions', { body: { budget } });
        assert.deepEqual([refused.status, refused.json.error.code], [400, 'invalid_json'], JSON.stringify(budget));
      }
      const session = await harness.newSession({ budget: { tokens: 0, costUsd: 0 } });
      assert.deepEqual(session.budget, { tokens: 0, costUsd: 0 });
      const both = await patch(session.id, { budget: { tokens: 5 }, title: 'x' });
      assert.deepEqual([both.status, both.json.error.code], [422, 'non_atomic_patch']);
      const turn = await harness.submit(session.id, 'asks at once');
      const request = await harness.nthRequestOf(turn.id, 1);
      assert.equal(request.kind, 'budget', 'a zero budget asks before the first request');
      const busy = await patch(session.id, { budget: { tokens: 1000 } });
      assert.deepEqual([busy.status, busy.json.error.code], [409, 'session_busy']);
      await harness.resolve(request.id, { decision: 'stop' });
      await waitForTurn(server, turn.id);
      const cleared = await patch(session.id, { budget: {} });
      assert.equal(cleared.status, 200, cleared.text);
      assert.deepEqual(cleared.json.budget, { tokens: null, costUsd: null });
      assert.deepEqual((await getSession(session.id)).budget, { tokens: null, costUsd: null });
      const schema = (await server.request('GET', '/openapi.json')).json.components.schemas;
      assert.deepEqual(Object.keys(schema.PatchSession.properties).sort(), ['archived', 'budget', 'effort', 'model', 'planMode', 'title']);
      assert.ok(schema.Session.required.includes('budget'));
    });
  });
}

/**
 * Model and effort per session (CONTRACT.md §19) through the real server on both stores: PATCH
 * moves a session to another catalog model, and its next turn goes to that model's connection in
 * its dialect with the whole canonical history, tool calls and their outputs included; reasoning
 * the new dialect cannot read is left out of that request, never out of history. Every pair of
 * the three dialects, both ways, asserted in the request bodies the fake provider receives.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { BACKENDS } from '../support/backends.ts';
import { fakeProviderModels, waitForTurn, type TestServer } from '../support/server.ts';
import { fakeEncryptedReasoning, fakeThinkingSignature, type FakeProvider, type FakeStep } from '../support/fake-provider.ts';
import { useFakeServer } from '../support/harness.ts';
import { readHistoryRange } from '../../src/store/history.ts';

const QUESTION = 'What do the notes say?';
const THINKING = 'The notes file should hold the answer.';
const FOLLOW_UP = 'And what was the question?';
const WINDOW = 64_000;

type Dialect = 'openai-responses' | 'anthropic-messages' | 'openai-chat';
const MODEL_OF: Record<Dialect, string> = { 'openai-responses': 'fake-responses', 'anthropic-messages': 'fake-anthropic', 'openai-chat': 'fake-chat' };
const DIALECTS = Object.keys(MODEL_OF) as Dialect[];

function modelsFile(baseUrl: string) {
  const models = fakeProviderModels(baseUrl);
  return {
    ...models,
    models: [
      // the Chat model has a window and no prices: the switch sets both
      ...models.models.map((model) => (model.id === 'fake-chat' ? { ...model, contextWindow: WINDOW, prices: undefined } : model)),
      { id: 'fake-low-only', connection: 'fake-openai-responses', transportModel: 'low-only', efforts: ['low'] },
    ],
  };
}

/** The texts of a request body, in order, whatever its dialect. */
function wireTexts(body: any): string {
  return JSON.stringify(body);
}

for (const backend of BACKENDS) {
  describe(`switching a session's model on ${backend}`, () => {
    let fake!: FakeProvider;
    let server!: TestServer;
    const harness = useFakeServer({ backend, confinement: 'off', models: modelsFile });
    before(() => {
      ({ fake, server } = harness);
      writeFileSync(join(server.workspace, 'notes.txt'), 'the answer is 42\n');
    });

    async function runTurn(sessionId: string, input: string, steps: FakeStep[]): Promise<any[]> {
      const before = fake.requests.length;
      fake.enqueue(...steps);
      const turn = await harness.submit(sessionId, input);
      const done = await waitForTurn(server, turn.id);
      assert.equal(done.status, 'completed', done.error);
      return fake.requests.slice(before);
    }

    const patch = (sessionId: string, body: unknown) => server.request('PATCH', `/v1/sessions/${sessionId}`, { body });

    for (const from of DIALECTS) {
      for (const to of DIALECTS.filter((dialect) => dialect !== from)) {
        it(`${from} → ${to}: the next turn sends the whole history in ${to}`, async () => {
          const tag = `${from}-${to}-${backend}`.replaceAll('-', '_');
          const callId = `call_${tag}`;
          const session = await harness.newSession({ model: MODEL_OF[from], effort: 'high' });
          const first = await runTurn(session.id, QUESTION, [
            { kind: 'reply', id: `origin_${tag}`, reasoning: THINKING, text: 'Reading the notes.', toolCalls: [{ name: 'read_file', arguments: '{"path":"notes.txt"}', callId }], usage: { input: 8, output: 2 } },
            { kind: 'reply', text: 'They say 42.', usage: { input: 10, output: 5 } },
          ]);
          assert.ok(first.every((request) => request.dialect === from));

          const response = await patch(session.id, { model: MODEL_OF[to] });
          assert.equal(response.status, 200, response.text);
          const switched = response.json;
          assert.equal(switched.model, MODEL_OF[to]);
          assert.equal(switched.dialect, to);
          assert.equal(switched.connection, `fake-${to}`);
          assert.equal(switched.provider, `fake-${to.split('-')[0]}`);
          assert.equal(switched.transportModel, `fake-${to}-model`);
          assert.equal(switched.effort, 'high', 'the effort stays');
          assert.deepEqual(switched.context, { usedTokens: 15, window: to === 'openai-chat' ? WINDOW : null });
          // spent stays; a session that was unpriced (the Chat model here) counts dollars from 0 on a priced model
          assert.deepEqual(switched.spent, { tokens: 25, costUsd: from === 'openai-chat' ? 0 : (18 * 1 + 7 * 2) / 1e6 });
          assert.deepEqual((await server.request('GET', `/v1/sessions/${session.id}`)).json, switched);

          const [request] = await runTurn(session.id, FOLLOW_UP, [{ kind: 'reply', text: 'It was about the notes.' }]);
          assert.equal(request.dialect, to);
          const wire = wireTexts(request.body);
          assert.equal(request.body.model, `fake-${to}-model`);
          for (const text of [QUESTION, 'Reading the notes.', 'the answer is 42', 'They say 42.', FOLLOW_UP]) assert.ok(wire.includes(text), `${text} reaches ${to}`);
          // the same call: its id (made safe for Anthropic) in the call and in its output
          const sentId = to === 'anthropic-messages' ? callId.replace(/[^a-zA-Z0-9_-]/g, '_') : callId;
          assert.equal(wire.split(sentId).length - 1 >= 2, true, 'the call and its output keep their id');
          // reasoning made under another dialect cannot be read by this one
          const secret = from === 'anthropic-messages' ? fakeThinkingSignature(`origin_${tag}_0`) : fakeEncryptedReasoning(`rs_origin_${tag}_0`);
          assert.ok(!wire.includes(secret), 'the other dialect\'s signed or encrypted reasoning is not sent');
          if (from !== 'openai-chat') assert.ok(!wire.includes(THINKING), 'nor its text');

          // history keeps it, and which model answered each turn
          const history = await readHistoryRange(server.server.store.db, session.id, 0, 10);
          assert.equal(history.length, 2);
          if (from !== 'openai-chat') assert.ok(history[0].items.some((item) => item.type === 'reasoning'), 'the reasoning stays in history');
          const answeredBy = (index: number) => Object.keys((history[index].providerTelemetry[0] as any).models);
          assert.deepEqual(answeredBy(0), [`fake-${from}-model`]);
          assert.deepEqual(answeredBy(1), [`fake-${to}-model`]);
        });
      }
    }

    it('PATCH effort: the next request carries it; the model must accept it', async () => {
      const session = await harness.newSession({ model: 'fake-responses', effort: 'high' });
      const response = await patch(session.id, { effort: 'low' });
      assert.equal(response.status, 200, response.text);
      assert.equal(response.json.effort, 'low');
      const [request] = await runTurn(session.id, 'effort', [{ kind: 'reply', text: 'ok' }]);
      assert.equal(request.body.reasoning.effort, 'low');

      const unknown = await patch(session.id, { effort: 'xhigh' });
      assert.equal(unknown.status, 422);
      assert.equal(unknown.json.error.code, 'invalid_effort');
      assert.equal((await server.request('GET', `/v1/sessions/${session.id}`)).json.effort, 'low');
    });

    it('refusals: an unknown model, an effort the new model refuses, two fields, a running turn', async () => {
      const session = await harness.newSession({ model: 'fake-responses', effort: 'high' });
      const unknown = await patch(session.id, { model: 'no-such-model' });
      assert.deepEqual([unknown.status, unknown.json.error.code], [422, 'model_not_available']);
      const unsuited = await patch(session.id, { model: 'fake-low-only' });
      assert.deepEqual([unsuited.status, unsuited.json.error.code], [422, 'invalid_effort']);
      const both = await patch(session.id, { model: 'fake-chat', effort: 'low' });
      assert.deepEqual([both.status, both.json.error.code], [422, 'non_atomic_patch']);
      const extra = await patch(session.id, { dialect: 'openai-chat' });
      assert.equal(extra.status, 400);
      assert.equal((await server.request('GET', `/v1/sessions/${session.id}`)).json.model, 'fake-responses', 'nothing changed');

      fake.enqueue({ kind: 'slow-first-byte', delayMs: 1500, text: 'slow' });
      const turn = await harness.submit(session.id, 'busy');
      const busy = await patch(session.id, { model: 'fake-chat' });
      assert.deepEqual([busy.status, busy.json.error.code], [409, 'session_busy']);
      const effortBusy = await patch(session.id, { effort: 'low' });
      assert.deepEqual([effortBusy.status, effortBusy.json.error.code], [409, 'session_busy']);
      await waitForTurn(server, turn.id);
      // after the turn: the low-effort-only model is reachable once the effort suits it
      assert.equal((await patch(session.id, { effort: 'low' })).status, 200);
      const moved = await patch(session.id, { model: 'fake-low-only' });
      assert.equal(moved.status, 200, moved.text);
      assert.equal(moved.json.transportModel, 'low-only');
    });

    it('a switch is announced as session.updated', async () => {
      const session = await harness.newSession({ model: 'fake-responses' });
      await patch(session.id, { model: 'fake-anthropic' });
      const event = await harness.events.waitFor((candidate) => candidate.type === 'session.updated' && candidate.data.sessionId === session.id);
      assert.equal(event.data.data.session.dialect, 'anthropic-messages');
    });

    it('the OpenAPI PatchSession names model and effort', async () => {
      const schema = (await server.request('GET', '/openapi.json')).json.components.schemas.PatchSession;
      assert.deepEqual(Object.keys(schema.properties).sort(), ['archived', 'budget', 'effort', 'model', 'planMode', 'title']);
    });
  });
}

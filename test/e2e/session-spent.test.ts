/**
 * A session's `spent` and `context` (CONTRACT.md §19) through the real server on both stores:
 * tokens and dollars of every model request of every agent, the last request's tokens as the
 * context, and null where the models file gives no prices or no context window.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { BACKENDS } from '../support/backends.ts';
import { fakeProviderModels, waitForTurn, type TestServer } from '../support/server.ts';
import type { FakeProvider, FakeStep } from '../support/fake-provider.ts';
import { useFakeServer } from '../support/harness.ts';
import type { Session } from '../../src/client/index.ts';

const WINDOW = 200_000;
const spawn = (callId: string, prompt: string) => ({ name: 'spawn_agent', arguments: JSON.stringify({ label: 'helper', prompt }), callId });

/** $1 input and $2 output per million (fakeProviderModels); no cached tokens in these steps. */
const dollars = (input: number, output: number) => (input * 1 + output * 2) / 1e6;

function modelsFile(baseUrl: string) {
  const models = fakeProviderModels(baseUrl, { contextWindow: WINDOW });
  return {
    ...models,
    models: [...models.models, { id: 'fake-unpriced', connection: 'fake-openai-responses', transportModel: 'unpriced-model', efforts: ['none'] }],
  };
}

/** A Chat Completions stream that reports no usage, as some local servers send it. */
function chatStreamWithoutUsage(text: string): FakeStep {
  const chunk = (delta: object, finishReason: string | null) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-nousage', object: 'chat.completion.chunk', created: 1, model: 'local', choices: [{ index: 0, delta, finish_reason: finishReason }] })}\n\n`;
  return { kind: 'raw', body: chunk({ role: 'assistant', content: text }, null) + chunk({}, 'stop') + 'data: [DONE]\n\n' };
}

function assertDollars(actual: unknown, expected: number): void {
  assert.equal(typeof actual, 'number');
  assert.ok(Math.abs((actual as number) - expected) < 1e-9, `costUsd ${actual}, expected ${expected}`);
}

for (const backend of BACKENDS) {
  describe(`a session's spent and context on ${backend}`, () => {
    let fake!: FakeProvider;
    let server!: TestServer;
    const harness = useFakeServer({ backend, confinement: 'off', models: modelsFile });
    before(() => ({ fake, server } = harness));

    async function runTurn(sessionId: string, input: string) {
      const turn = await harness.submit(sessionId, input);
      assert.equal((await waitForTurn(server, turn.id)).status, 'completed');
      return (await server.request('GET', `/v1/sessions/${sessionId}`)).json;
    }

    it('counts every request of every agent, and the context is the last request of the session', async () => {
      const session = await harness.newSession({ model: 'fake-responses' });
      assert.deepEqual(session.spent, { tokens: 0, costUsd: 0 });
      assert.deepEqual(session.context, { usedTokens: 0, window: WINDOW });

      const tag = `spent-${backend}`;
      fake.route(`MAIN-${tag}`,
        { kind: 'reply', toolCalls: [spawn(`call_${tag}`, `CHILD-${tag}: look`)], usage: { input: 100, output: 20 } },
        { kind: 'reply', text: 'The helper looked.', usage: { input: 300, output: 10 } },
        // the second turn: the fake routes by the session's first user message
        { kind: 'reply', text: 'Again.', usage: { input: 400, output: 40 } },
      );
      fake.route(`CHILD-${tag}`, { kind: 'reply', text: 'Looked.', usage: { input: 50, output: 5 } });
      const afterFirst = await runTurn(session.id, `MAIN-${tag}: delegate`);
      assert.deepEqual(afterFirst.spent.tokens, 100 + 20 + 50 + 5 + 300 + 10, 'the child agent counts too');
      assertDollars(afterFirst.spent.costUsd, dollars(100, 20) + dollars(50, 5) + dollars(300, 10));
      assert.deepEqual(afterFirst.context, { usedTokens: 300 + 10, window: WINDOW }, "the main agent's last request");

      const afterSecond = await runTurn(session.id, 'once more');
      assert.equal(afterSecond.spent.tokens, 485 + 440);
      assertDollars(afterSecond.spent.costUsd, dollars(450, 35) + dollars(400, 40));
      assert.deepEqual(afterSecond.context, { usedTokens: 440, window: WINDOW });
      // the listing shows the same figures as GET one
      const listed = (await server.request('GET', '/v1/sessions?limit=100')).json.data.find((row: any) => row.id === session.id);
      assert.deepEqual({ spent: listed.spent, context: listed.context }, { spent: afterSecond.spent, context: afterSecond.context });

      // a fork spends from nothing, and its context is the parent's, whose history it carries
      const fork = await server.request('POST', `/v1/sessions/${session.id}/fork`, { body: {} });
      assert.equal(fork.status, 201);
      assert.deepEqual({ spent: fork.json.spent, context: fork.json.context }, { spent: { tokens: 0, costUsd: 0 }, context: afterSecond.context });
      const forkRead = (await server.request('GET', `/v1/sessions/${fork.json.id}`)).json;
      assert.deepEqual({ spent: forkRead.spent, context: forkRead.context }, { spent: { tokens: 0, costUsd: 0 }, context: afterSecond.context });
    });

    it('the OpenAPI document and the SDK type name both fields, required, nullable where the contract says', async () => {
      const schema = (await server.request('GET', '/openapi.json')).json.components.schemas.Session;
      for (const field of ['spent', 'context']) assert.ok(schema.required.includes(field), field);
      assert.deepEqual(Object.keys(schema.properties.spent.properties), ['tokens', 'costUsd']);
      assert.deepEqual(Object.keys(schema.properties.context.properties), ['usedTokens', 'window']);
      assert.match(JSON.stringify(schema.properties.spent.properties.costUsd), /"null"/);
      assert.match(JSON.stringify(schema.properties.context.properties.window), /"null"/);
      // type-checked: the SDK's Session carries the fields with these types
      const figures: Pick<Session, 'spent' | 'context'> = { spent: { tokens: 1, costUsd: null }, context: { usedTokens: 1, window: null } };
      assert.ok(figures);
    });

    it('a model without prices or a context window: tokens counted, costUsd and window null', async () => {
      const session = await harness.newSession({ model: 'fake-unpriced' });
      assert.deepEqual(session.spent, { tokens: 0, costUsd: null });
      assert.deepEqual(session.context, { usedTokens: 0, window: null });
      fake.enqueue({ kind: 'reply', text: 'cheap', usage: { input: 7, output: 6 } });
      const after = await runTurn(session.id, 'unpriced');
      assert.deepEqual(after.spent, { tokens: 13, costUsd: null });
      assert.deepEqual(after.context, { usedTokens: 13, window: null });
    });

    it('a request that reports no usage adds nothing and leaves the context as it was', async () => {
      const session = await harness.newSession({ model: 'fake-chat' });
      fake.enqueue({ kind: 'reply', text: 'counted', usage: { input: 30, output: 3 } });
      await runTurn(session.id, 'first');
      fake.enqueue(chatStreamWithoutUsage('not counted'));
      const after = await runTurn(session.id, 'second');
      assert.equal(after.spent.tokens, 33);
      assertDollars(after.spent.costUsd, dollars(30, 3));
      assert.deepEqual(after.context, { usedTokens: 33, window: WINDOW });
    });
  });
}

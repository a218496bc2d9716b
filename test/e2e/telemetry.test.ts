/**
 * Usage and provider telemetry through the real server, in every dialect: history `usage`, the
 * session counters, SSE `usage` and the `providerTelemetry` entry are filled from each provider's
 * own fields, cost from the models file's prices, and null stands for "not reported", never zero.
 */
import { describe, it, before } from 'node:test';
import assert from 'node:assert/strict';
import { BACKENDS } from '../support/backends.ts';
import { fakeProviderModels, waitForTurn, type TestServer } from '../support/server.ts';
import type { FakeProvider, FakeStep } from '../support/fake-provider.ts';
import { EventRecorder } from '../support/events.ts';
import { useServerOnFakeProvider } from '../support/harness.ts';
import { readHistoryRange } from '../../src/store/history.ts';

const STEP_USAGE = [
  { input: 100, output: 20, cached: 40, reasoning: 5 },
  { input: 150, output: 10, cached: 100, reasoning: 0 },
];

/**
 * What each dialect reports for STEP_USAGE. The fake's Anthropic stream, like Anthropic, counts
 * input_tokens without cache reads, so its prompt is input + cached; the OpenAI dialects count
 * cached tokens inside input. Prices are $1 input, $0.50 cached, $2 output per million.
 */
const EXPECTED = {
  'fake-responses': {
    transportModel: 'fake-openai-responses-model',
    provider: 'fake-openai',
    usage: { input: 250, output: 30, cached: 140 },
    telemetryInput: 250,
    cacheCreation: null,
    reasoningTokens: 5,
    stopReason: 'completed',
    limitStopReason: 'incomplete',
    cost: (110 * 1 + 140 * 0.5 + 30 * 2) / 1e6,
  },
  'fake-anthropic': {
    transportModel: 'fake-anthropic-messages-model',
    provider: 'fake-anthropic',
    usage: { input: 390, output: 30, cached: 140 },
    telemetryInput: 250,
    cacheCreation: 0,
    reasoningTokens: null,
    stopReason: 'end_turn',
    limitStopReason: 'max_tokens',
    cost: (250 * 1 + 140 * 0.5 + 30 * 2) / 1e6,
  },
  'fake-chat': {
    transportModel: 'fake-openai-chat-model',
    provider: 'fake-openai',
    usage: { input: 250, output: 30, cached: 140 },
    telemetryInput: 250,
    cacheCreation: null,
    reasoningTokens: 5,
    stopReason: 'stop',
    limitStopReason: 'length',
    cost: (110 * 1 + 140 * 0.5 + 30 * 2) / 1e6,
  },
} as const;

/** A Chat Completions stream that never reports usage, as some local servers send it. */
function chatStreamWithoutUsage(text: string): FakeStep {
  const chunk = (delta: object, finishReason: string | null) =>
    `data: ${JSON.stringify({ id: 'chatcmpl-nousage', object: 'chat.completion.chunk', created: 1, model: 'local', choices: [{ index: 0, delta, finish_reason: finishReason }] })}\n\n`;
  return { kind: 'raw', body: chunk({ role: 'assistant', content: text }, null) + chunk({}, 'stop') + 'data: [DONE]\n\n' };
}

function modelsFile(baseUrl: string) {
  const models = fakeProviderModels(baseUrl, { contextWindow: 200_000 });
  return {
    ...models,
    models: [...models.models, { id: 'fake-chat-unpriced', connection: 'fake-openai-chat', transportModel: 'unpriced-model', maxOutputTokens: 4096, efforts: ['none'] }],
  };
}

for (const backend of BACKENDS) {
  describe(`telemetry on ${backend}`, () => {
    let fake!: FakeProvider;
    let server!: TestServer;
    const started = useServerOnFakeProvider({ backend, models: modelsFile });
    before(() => ({ fake, server } = started));

    /** Runs one turn with an SSE subscriber open; returns its finished events, result and stored history. */
    async function runTurn(model: string, steps: FakeStep[]) {
      const events = new EventRecorder(server.url, { lastEventId: 0 });
      try {
        await events.opened;
        const session = (await server.request('POST', '/v1/sessions', { body: { model } })).json;
        fake.enqueue(...steps);
        const turn = await server.request('POST', `/v1/sessions/${session.id}/turns`, { body: { input: 'count the tokens' } });
        assert.equal((await waitForTurn(server, turn.json.id)).status, 'completed');
        const finished = (await events.waitForType('agent.turn.finished', turn.json.id)).data.data;
        const result = (await server.request('GET', `/v1/turns/${turn.json.id}/result`)).json;
        const [history] = await readHistoryRange(server.server.store.db, session.id, 0, 10);
        const sessionAfter = (await server.request('GET', `/v1/sessions/${session.id}`)).json;
        return { finished, result, history, session: sessionAfter };
      } finally {
        events.close();
      }
    }

    for (const [model, expected] of Object.entries(EXPECTED)) {
      it(`${model}: usage and telemetry of a two-step turn come from the provider's own fields`, async () => {
        const { finished, result, history, session } = await runTurn(model, [
          { kind: 'reply', text: 'Looking. ', toolCalls: [{ name: 'list_dir', arguments: '{}' }], usage: STEP_USAGE[0] },
          { kind: 'reply', text: 'Done.', usage: STEP_USAGE[1] },
        ]);
        assert.deepEqual(history.usage, expected.usage);
        assert.deepEqual(session.usage, expected.usage);
        assert.deepEqual(finished.usage, { inputTokens: expected.usage.input, outputTokens: expected.usage.output, cachedTokens: expected.usage.cached });
        assert.deepEqual(result.output.completion, { status: 'completed', reasoningTokens: expected.reasoningTokens });

        assert.equal(history.providerTelemetry.length, 1, 'one entry: only the main agent made requests');
        const telemetry = history.providerTelemetry[0] as any;
        assert.deepEqual(Object.keys(telemetry.models), [expected.transportModel]);
        assert.deepEqual(telemetry.models[expected.transportModel], {
          input_tokens: expected.telemetryInput,
          output_tokens: 30,
          cache_read_input_tokens: 140,
          cache_creation_input_tokens: expected.cacheCreation,
          web_search_requests: null,
          cost_usd: expected.cost,
          context_window: 200_000,
          max_output_tokens: null,
          canonical_model: model,
          provider: expected.provider,
        });
        assert.equal(telemetry.cost_usd, expected.cost);
        assert.equal(telemetry.stop_reason, expected.stopReason);
        assert.equal(telemetry.provider_turns, 2);
        assert.equal(telemetry.structured_output, null);
        assert.ok(Number.isInteger(telemetry.duration_ms) && Number.isInteger(telemetry.api_duration_ms));
        assert.ok(telemetry.duration_ms >= telemetry.api_duration_ms);
      });

      it(`${model}: an output-limit stop is reason max_tokens, with the provider's own stop_reason kept`, async () => {
        const { finished, result, history } = await runTurn(model, [{ kind: 'reply', text: 'cut sho', stop: 'max_tokens' }]);
        const completion = { status: 'incomplete', reason: 'max_tokens', reasoningTokens: expected.reasoningTokens === null ? null : 0 };
        assert.deepEqual(result.output.completion, completion);
        assert.deepEqual(finished.completion, completion);
        assert.equal((history.providerTelemetry[0] as any).stop_reason, expected.limitStopReason);
      });
    }

    it('a provider that reports no usage gives null usage and null token counts, not zeros', async () => {
      const { finished, result, history, session } = await runTurn('fake-chat', [chatStreamWithoutUsage('no counts here')]);
      assert.equal(result.output.assistantText, 'no counts here');
      assert.equal(result.output.completion.reasoningTokens, null);
      assert.equal(history.usage, null);
      assert.equal(finished.usage, null);
      assert.deepEqual(session.usage, { input: 0, output: 0, cached: 0 });
      const telemetry = history.providerTelemetry[0] as any;
      assert.equal(telemetry.cost_usd, null);
      assert.equal(telemetry.stop_reason, 'stop');
      assert.equal(telemetry.provider_turns, 1);
      const entry = telemetry.models.local;
      for (const field of ['input_tokens', 'output_tokens', 'cache_read_input_tokens', 'cache_creation_input_tokens', 'web_search_requests', 'cost_usd']) {
        assert.equal(entry[field], null, field);
      }
      assert.equal(entry.canonical_model, 'fake-chat');
    });

    it('a model without prices has a null cost but real counts, durations and its output limit', async () => {
      const { history } = await runTurn('fake-chat-unpriced', [{ kind: 'reply', text: 'one two three four five six', chunkDelayMs: 15, usage: { input: 7, output: 6 } }]);
      const telemetry = history.providerTelemetry[0] as any;
      assert.equal(telemetry.cost_usd, null);
      const entry = telemetry.models['unpriced-model'];
      assert.equal(entry.cost_usd, null);
      assert.equal(entry.input_tokens, 7);
      assert.equal(entry.output_tokens, 6);
      assert.equal(entry.max_output_tokens, 4096);
      assert.equal(entry.context_window, null);
      // eleven frames 15 ms apart: the API time is measured, not made up
      assert.ok(telemetry.api_duration_ms >= 100, `api_duration_ms ${telemetry.api_duration_ms}`);
      assert.ok(telemetry.duration_ms >= telemetry.api_duration_ms);
    });
  });
}

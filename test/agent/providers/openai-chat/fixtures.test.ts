/**
 * Every recorded Chat Completions stream, fed byte for byte (in 7-byte pieces) through the
 * official openai client into the adapter via an injected fetch.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createOpenAIChatAdapter } from '../../../../src/agent/providers/openai-chat/adapter.ts';
import { ProviderError, type CanonicalItem, type ModelRequest, type ProviderEvent } from '../../../../src/agent/providers/types.ts';
import { fixtureAsSse, listFixtures } from '../../../support/fixtures.ts';
import { collectReplay, modelRequest, replayingFetch, type Replay } from '../replay-support.ts';

function adapterFor(fixture: string, provider: string) {
  return createOpenAIChatAdapter({ provider, baseUrl: 'https://chat.example.test/v1', apiKey: 'test-key-chat' }, { fetch: replayingFetch(fixtureAsSse(fixture), 'text/event-stream') });
}

function replay(fixture: string, provider: string, overrides: Partial<ModelRequest> = {}): Promise<Replay> {
  return collectReplay(adapterFor(fixture, provider), modelRequest(overrides));
}

function calls(items: CanonicalItem[]) {
  return items
    .filter((item) => item.type === 'function_call')
    .map((item) => ({ id: item.call_id, name: item.name, arguments: JSON.parse(String(item.arguments)) as unknown }));
}

const expectations: Record<string, (fixture: string) => Promise<void>> = {
  'chat-completions/openai-parallel-tool-calls-usage.sse': async (fixture) => {
    const result = await replay(fixture, 'openai');
    assert.deepEqual(calls(result.items), [
      { id: 'call_JMW1whyEaYG438VE1OIflxA2', name: 'GetWeatherArgs', arguments: { city: 'Edinburgh', country: 'GB', units: 'c' } },
      { id: 'call_DNYTawLBoN8fj3KN6qU9N1Ou', name: 'get_stock_price', arguments: { ticker: 'AAPL', exchange: 'NASDAQ' } },
    ]);
    assert.equal(result.items.length, 2, 'no text, no reasoning');
    const started = result.events.filter((event) => event.type === 'tool.started').map((event) => event.type === 'tool.started' && event.callId);
    assert.deepEqual(started, ['call_JMW1whyEaYG438VE1OIflxA2', 'call_DNYTawLBoN8fj3KN6qU9N1Ou']);
    const secondArguments = result.events
      .map((event) => (event.type === 'tool.arguments.delta' && event.callId === 'call_DNYTawLBoN8fj3KN6qU9N1Ou' ? event.delta : ''))
      .join('');
    assert.deepEqual(JSON.parse(secondArguments), { ticker: 'AAPL', exchange: 'NASDAQ' });
    assert.equal(result.done.responseId, 'chatcmpl-ABfwAwrNePHUgBBezonVC6MX3zd63');
    assert.equal(result.done.model, 'gpt-4o-2024-08-06');
    assert.deepEqual(result.done.usage, { inputTokens: 149, outputTokens: 60, cachedTokens: 0, cacheCreationTokens: null, reasoningTokens: 0, webSearchRequests: null });
    assert.deepEqual(result.done.completion, { status: 'completed' });
    assert.equal(result.done.stopReason, 'tool_calls');
  },

  'chat-completions/openai-finish-length-usage.sse': async (fixture) => {
    const result = await replay(fixture, 'openai');
    assert.equal(result.text, '{"');
    assert.deepEqual(result.items, [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text: '{"', annotations: [] }] }]);
    assert.deepEqual(result.done.completion, { status: 'incomplete', reason: 'max_tokens' });
    assert.equal(result.done.stopReason, 'length');
    assert.deepEqual(result.done.usage, { inputTokens: 79, outputTokens: 1, cachedTokens: 0, cacheCreationTokens: null, reasoningTokens: 0, webSearchRequests: null });
  },

  'chat-completions/groq-midstream-error-event.sse': async (fixture) => {
    const events: ProviderEvent[] = [];
    let failure: unknown;
    try {
      for await (const event of adapterFor(fixture, 'groq').stream(modelRequest(), new AbortController().signal)) events.push(event);
    } catch (error) {
      failure = error;
    }
    const reasoning = events.map((event) => (event.type === 'reasoning.delta' ? event.text : '')).join('');
    assert.ok(reasoning.startsWith('We need to call'), 'delta.reasoning was streamed before the error');
    assert.ok(!events.some((event) => event.type === 'response.done' || event.type === 'item.done'));
    assert.ok(failure instanceof ProviderError, 'the error event fails the stream');
    assert.equal(failure.provider, 'groq');
    assert.equal(failure.code, 'tool_use_failed');
    assert.equal(failure.retryable, false, 'a schema validation failure is not a transient one');
    assert.match(failure.message, /groq/);
    assert.match(failure.message, /Tool call validation failed/);
  },

  'chat-completions/deepseek-reasoning-tool-call-usage.chunks.jsonl': async (fixture) => {
    const result = await replay(fixture, 'deepseek');
    const reasoningText =
      'The user is asking for the weather in San Francisco. I need to use the weather tool to get this information. Let me invoke the weather tool with the location parameter set to "San Francisco".';
    assert.equal(result.reasoning, reasoningText);
    assert.deepEqual(result.items[0], { type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: reasoningText }], provider: 'openai-chat' });
    assert.deepEqual(calls(result.items), [{ id: 'call_00_ioIn7yN9p1ZOMNpDLwd4MgAF', name: 'weather', arguments: { location: 'San Francisco' } }]);
    assert.equal(result.text, '');
    assert.deepEqual(result.done.usage, { inputTokens: 339, outputTokens: 83, cachedTokens: 320, cacheCreationTokens: null, reasoningTokens: 39, webSearchRequests: null });
    assert.equal(result.done.stopReason, 'tool_calls');
  },

  'chat-completions/groq-tool-call-single-chunk.chunks.jsonl': async (fixture) => {
    const result = await replay(fixture, 'groq');
    assert.deepEqual(calls(result.items), [{ id: 'tk85n1k4m', name: 'weather', arguments: {} }]);
    const toolEvents = result.events.filter((event) => event.type === 'tool.started' || event.type === 'tool.arguments.delta');
    assert.deepEqual(toolEvents, [
      { type: 'tool.started', callId: 'tk85n1k4m', name: 'weather', kind: 'function' },
      { type: 'tool.arguments.delta', callId: 'tk85n1k4m', delta: '{}' },
    ]);
    assert.deepEqual(result.done.usage, { inputTokens: 210, outputTokens: 15, cachedTokens: 0, cacheCreationTokens: null, reasoningTokens: null, webSearchRequests: null });
    assert.deepEqual(result.done.completion, { status: 'completed' });
  },
};

test('every Chat Completions recording has an expectation', () => {
  assert.deepEqual(listFixtures()['openai-chat'].sort(), Object.keys(expectations).sort());
});

for (const fixture of listFixtures()['openai-chat']) {
  const expectation = expectations[fixture];
  if (expectation) test(`Chat Completions recording ${fixture}`, () => expectation(fixture));
}

test('a call to a custom tool comes back as custom_tool_call with the text of its input', async () => {
  const tools = [{ name: 'weather', description: 'Weather', kind: 'custom' as const }];
  // The recorded arguments are {"location": …}, not {"input": …}: the raw text is passed on.
  const result = await replay('chat-completions/deepseek-reasoning-tool-call-usage.chunks.jsonl', 'deepseek', { tools });
  const call = result.items.find((item) => item.type === 'custom_tool_call');
  assert.equal(call?.call_id, 'call_00_ioIn7yN9p1ZOMNpDLwd4MgAF');
  assert.deepEqual(JSON.parse(String(call?.input)), { location: 'San Francisco' });
});

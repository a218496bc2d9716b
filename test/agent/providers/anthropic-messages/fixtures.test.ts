/**
 * Every recorded Anthropic stream, fed byte for byte (in 7-byte pieces, so events and UTF-8
 * characters split anywhere) through the official SDK into the adapter via an injected fetch.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { canonicalToAnthropic } from '../../../../src/agent/providers/anthropic-messages/convert.ts';
import { createAnthropicMessagesAdapter } from '../../../../src/agent/providers/anthropic-messages/adapter.ts';
import type { ModelRequest } from '../../../../src/agent/providers/types.ts';
import { fixtureAsSse, fixturePayloads, listFixtures } from '../../../support/fixtures.ts';
import { collectReplay, modelRequest, replayingFetch, type Replay } from '../replay-support.ts';

const request = (overrides: Partial<ModelRequest> = {}) => modelRequest(overrides, 'claude-test');

const connection = { provider: 'anthropic', baseUrl: 'https://api.anthropic.test', apiKey: 'test-key-anthropic' };

function replay(fixture: string, overrides: Partial<ModelRequest> = {}): Promise<Replay> {
  const adapter = createAnthropicMessagesAdapter(connection, { fetch: replayingFetch(fixtureAsSse(fixture)) });
  return collectReplay(adapter, request(overrides));
}

/** The concatenated deltas of one kind, straight from the recording. */
function recordedDeltas(fixture: string, deltaType: string, field: string): string {
  return fixturePayloads(fixture)
    .map((payload) => payload.delta as Record<string, unknown> | undefined)
    .filter((delta) => delta?.type === deltaType)
    .map((delta) => String(delta?.[field]))
    .join('');
}

function usage(inputTokens: number, outputTokens: number, extra: Partial<NonNullable<Replay['done']['usage']>> = {}) {
  return { inputTokens, outputTokens, cachedTokens: 0, cacheCreationTokens: 0, reasoningTokens: null, webSearchRequests: null, ...extra };
}

const expectations: Record<string, (fixture: string) => Promise<void>> = {
  'anthropic/text.chunks.jsonl': async (fixture) => {
    const result = await replay(fixture);
    const text = "Hello! I'm doing well, thank you for asking. How are you doing today? Is there anything I can help you with?";
    assert.equal(result.text, text);
    assert.deepEqual(result.items, [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] }]);
    assert.equal(result.done.responseId, 'msg_01QC4g3HwBThD4BaNtBckFDJ');
    assert.equal(result.done.model, 'claude-sonnet-4-5-20250929');
    assert.deepEqual(result.done.usage, usage(12, 30));
    assert.deepEqual(result.done.completion, { status: 'completed' });
    assert.equal(result.done.stopReason, 'end_turn');
  },

  'anthropic/text-then-tool-use.sse': async (fixture) => {
    const tools = [{ name: 'get_weather', description: 'Weather', kind: 'function' as const, parameters: { type: 'object' } }];
    const result = await replay(fixture, { tools });
    assert.equal(result.text, "I'll check the current weather in Paris for you.");
    const [message, call] = result.items;
    assert.equal(message.type, 'message');
    assert.equal(call.type, 'function_call');
    assert.equal(call.call_id, 'toolu_01NRLabsLyVHZPKxbKvkfSMn');
    assert.equal(call.name, 'get_weather');
    assert.deepEqual(JSON.parse(String(call.arguments)), { location: 'Paris' });
    assert.equal(result.items.length, 2);
    const started = result.events.find((event) => event.type === 'tool.started');
    assert.deepEqual(started, { type: 'tool.started', callId: 'toolu_01NRLabsLyVHZPKxbKvkfSMn', name: 'get_weather', kind: 'function' });
    const streamedArguments = result.events.map((event) => (event.type === 'tool.arguments.delta' ? event.delta : '')).join('');
    assert.deepEqual(JSON.parse(streamedArguments), { location: 'Paris' });
    assert.deepEqual(result.done.usage, usage(377, 65));
    assert.deepEqual(result.done.completion, { status: 'completed' });
    assert.equal(result.done.stopReason, 'tool_use');
  },

  'anthropic/tool-use-no-args.chunks.jsonl': async (fixture) => {
    const result = await replay(fixture);
    const call = result.items.find((item) => item.type === 'function_call');
    assert.ok(call, 'a function_call item');
    assert.equal(call.call_id, 'toolu_01QE1WLsSVp5hy5Q3GmGTmjP');
    assert.equal(call.name, 'updateIssueList');
    assert.equal(call.arguments, '{}', 'an empty input_json total is {}');
    assert.equal(result.text, "I'll update the issue list for you.");
    assert.deepEqual(result.done.usage, usage(565, 48));
    assert.equal(result.done.stopReason, 'tool_use');
  },

  'anthropic/thinking-signature.sse': async (fixture) => {
    const result = await replay(fixture, { effort: 'low' });
    const thinking = recordedDeltas(fixture, 'thinking_delta', 'thinking');
    const signature = recordedDeltas(fixture, 'signature_delta', 'signature');
    assert.ok(thinking.startsWith('This is a straightforward question about pedestrian safety.'));
    assert.ok(signature.length > 100);
    assert.equal(result.reasoning, thinking);
    assert.deepEqual(result.items[0], {
      type: 'reasoning',
      summary: [],
      content: [{ type: 'reasoning_text', text: thinking }],
      encrypted_content: signature,
      provider: 'anthropic',
    });
    assert.equal(result.items[1].type, 'message');
    assert.equal(result.text, recordedDeltas(fixture, 'text_delta', 'text'));
    assert.ok(result.text.length > 200);
    assert.deepEqual(result.done.usage, usage(43, 282));
    assert.deepEqual(result.done.completion, { status: 'completed' });
  },

  'anthropic/redacted-thinking.sse': async (fixture) => {
    const result = await replay(fixture, { effort: 'medium' });
    const recordedData = fixturePayloads(fixture)
      .map((payload) => payload.content_block as Record<string, unknown> | undefined)
      .filter((block) => block?.type === 'redacted_thinking')
      .map((block) => block?.data);
    assert.equal(recordedData.length, 2);
    assert.deepEqual(
      result.items.slice(0, 2),
      recordedData.map((data) => ({ type: 'reasoning', summary: [], encrypted_content: data, provider: 'anthropic', redacted: true })),
    );
    assert.equal(result.items[2].type, 'message');
    assert.ok(result.text.startsWith("I notice that you've sent what appears to be some kind of test string"));
    assert.equal(result.reasoning, '', 'redacted thinking has no readable text');
    assert.deepEqual(result.done.usage, usage(92, 189));
  },

  'anthropic/max-tokens-mid-tool-use.sse': async (fixture) => {
    const tools = [{ name: 'make_file', description: 'Write a file', kind: 'function' as const }];
    const result = await replay(fixture, { tools });
    assert.ok(result.text.startsWith("I'll create a comprehensive tax guide"));
    assert.deepEqual(
      result.items.map((item) => item.type),
      ['message'],
      'the unfinished tool_use is discarded, never offered for execution',
    );
    assert.ok(result.events.some((event) => event.type === 'tool.started' && event.callId === 'toolu_01EKqbqmZrGRXy18eN7m9kvY'));
    assert.deepEqual(result.done.completion, { status: 'incomplete', reason: 'max_tokens' });
    assert.equal(result.done.stopReason, 'max_tokens');
    assert.deepEqual(result.done.usage, usage(450, 124));
  },

  'anthropic/web-search-server-tool.chunks.jsonl': async (fixture) => {
    const result = await replay(fixture);
    const [search, message, ...rest] = result.items;
    assert.equal(rest.length, 0, 'one search item and one message with every text block');
    assert.equal(search.type, 'web_search_call');
    assert.equal(search.id, 'srvtoolu_01Bj5uzzLcYG5hfueSLcDH8k');
    assert.equal(search.provider, 'anthropic');
    assert.deepEqual(search.action, { type: 'search', query: 'tech news today September 26 2025' });
    const [use, searchResult] = search.anthropic_blocks as Array<Record<string, unknown>>;
    assert.deepEqual(use, { type: 'server_tool_use', id: 'srvtoolu_01Bj5uzzLcYG5hfueSLcDH8k', name: 'web_search', input: { query: 'tech news today September 26 2025' } });
    const recordedResult = fixturePayloads(fixture).find((payload) => (payload.content_block as { type?: string } | undefined)?.type === 'web_search_tool_result');
    assert.deepEqual(searchResult, recordedResult?.content_block, 'the result block is kept exactly as received');
    const parts = message.content as Array<{ type: string; text: string; annotations: Array<Record<string, unknown>> }>;
    assert.equal(parts.map((part) => part.text).join(''), recordedDeltas(fixture, 'text_delta', 'text'));
    assert.ok(parts.every((part) => part.text !== ''), 'empty text blocks are not kept');
    const cited = parts.find((part) => part.annotations.length > 0);
    assert.equal(cited?.annotations[0].type, 'url_citation');
    assert.match(String(cited?.annotations[0].url), /^https:\/\//);
    assert.deepEqual(result.done.usage, usage(15665, 795, { webSearchRequests: 1 }));
    assert.equal(result.done.stopReason, 'end_turn');
  },
};

test('every Anthropic recording has an expectation', () => {
  assert.deepEqual(listFixtures()['anthropic-messages'].sort(), Object.keys(expectations).sort());
});

for (const fixture of listFixtures()['anthropic-messages']) {
  const expectation = expectations[fixture];
  if (expectation) test(`Anthropic recording ${fixture}`, () => expectation(fixture));
}

test('custom tools come back as custom_tool_call with their free-text input', async () => {
  const tools = [{ name: 'get_weather', description: 'Weather', kind: 'custom' as const }];
  // The recording's tool input is {"location":"Paris"}, not {"input": …}: the JSON is kept as text.
  const result = await replay('anthropic/text-then-tool-use.sse', { tools });
  const call = result.items.find((item) => item.type === 'custom_tool_call');
  assert.equal(call?.call_id, 'toolu_01NRLabsLyVHZPKxbKvkfSMn');
  assert.deepEqual(JSON.parse(String(call?.input)), { location: 'Paris' });
  assert.ok(result.events.some((event) => event.type === 'tool.started' && event.kind === 'custom'));
});

test('recorded turns replay to Anthropic as received: signatures, redacted data and server blocks intact', async () => {
  const thinkingFixture = 'anthropic/thinking-signature.sse';
  const [thinkingTurn] = canonicalToAnthropic((await replay(thinkingFixture)).items);
  assert.deepEqual((thinkingTurn.content as unknown[])[0], {
    type: 'thinking',
    thinking: recordedDeltas(thinkingFixture, 'thinking_delta', 'thinking'),
    signature: recordedDeltas(thinkingFixture, 'signature_delta', 'signature'),
  });

  const redactedFixture = 'anthropic/redacted-thinking.sse';
  const [redactedTurn] = canonicalToAnthropic((await replay(redactedFixture)).items);
  const recordedRedacted = fixturePayloads(redactedFixture)
    .map((payload) => payload.content_block as Record<string, unknown> | undefined)
    .filter((block) => block?.type === 'redacted_thinking');
  assert.deepEqual((redactedTurn.content as unknown[]).slice(0, 2), recordedRedacted);

  const searchFixture = 'anthropic/web-search-server-tool.chunks.jsonl';
  const [searchTurn] = canonicalToAnthropic((await replay(searchFixture)).items);
  const content = searchTurn.content as unknown as Array<Record<string, unknown>>;
  const recordedBlocks = fixturePayloads(searchFixture)
    .map((payload) => payload.content_block as Record<string, unknown> | undefined)
    .filter((block) => block?.type === 'server_tool_use' || block?.type === 'web_search_tool_result');
  assert.deepEqual(content.slice(0, 2), [{ ...recordedBlocks[0], input: { query: 'tech news today September 26 2025' } }, recordedBlocks[1]]);
  assert.ok(content.slice(2).every((block) => block.type === 'text'));
  assert.equal(content.slice(2).map((block) => block.text).join(''), recordedDeltas(searchFixture, 'text_delta', 'text'));
});

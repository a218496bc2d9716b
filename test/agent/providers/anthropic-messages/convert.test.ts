/**
 * Canonical ↔ Anthropic conversion: lossless round trips for everything Anthropic can read, and
 * the rules for what it cannot (other providers' reasoning, unsigned thinking).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { anthropicToCanonical, canonicalToAnthropic, isAnthropicOnlyItem } from '../../../../src/agent/providers/anthropic-messages/convert.ts';
import { isResponsesReadable } from '../../../../src/agent/providers/openai-responses/adapter.ts';
import type { CanonicalItem } from '../../../../src/agent/providers/types.ts';

const customToolNames = new Set(['apply_patch']);

const searchUse = { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'agentd news' } };
const searchResult = {
  type: 'web_search_tool_result',
  tool_use_id: 'srvtoolu_1',
  content: [{ type: 'web_search_result', title: 'News', url: 'https://news.example/a', encrypted_content: 'EncResult==', page_age: null }],
};

/** A whole conversation in the canonical shape the Anthropic side produces. */
const conversation: CanonicalItem[] = [
  { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Fix the bug and check the weather.' }] },
  { type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: 'Two tools needed.' }], encrypted_content: 'SigAAA==', provider: 'anthropic' },
  { type: 'reasoning', summary: [], encrypted_content: 'RedactedBBB==', provider: 'anthropic', redacted: true },
  { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'On it.', annotations: [] }] },
  { type: 'function_call', call_id: 'toolu_weather', name: 'get_weather', arguments: '{"city":"Paris"}' },
  { type: 'custom_tool_call', call_id: 'toolu_patch', name: 'apply_patch', input: '*** Begin Patch\n*** End Patch' },
  { type: 'function_call_output', call_id: 'toolu_weather', output: 'sunny' },
  { type: 'custom_tool_call_output', call_id: 'toolu_patch', output: [{ type: 'input_text', text: 'patch failed' }], is_error: true },
  { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Any news?' }] },
  { type: 'web_search_call', id: 'srvtoolu_1', status: 'completed', provider: 'anthropic', anthropic_blocks: [searchUse, searchResult], action: { type: 'search', query: 'agentd news' } },
  { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Nothing new.', annotations: [] }] },
];

test('canonical → Anthropic merges roles, puts tool results first and keeps signatures, redacted data and ids', () => {
  const messages = canonicalToAnthropic(conversation, { customToolNames });
  assert.deepEqual(messages, [
    { role: 'user', content: [{ type: 'text', text: 'Fix the bug and check the weather.' }] },
    {
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'Two tools needed.', signature: 'SigAAA==' },
        { type: 'redacted_thinking', data: 'RedactedBBB==' },
        { type: 'text', text: 'On it.' },
        { type: 'tool_use', id: 'toolu_weather', name: 'get_weather', input: { city: 'Paris' } },
        { type: 'tool_use', id: 'toolu_patch', name: 'apply_patch', input: { input: '*** Begin Patch\n*** End Patch' } },
      ],
    },
    {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_weather', content: 'sunny' },
        { type: 'tool_result', tool_use_id: 'toolu_patch', content: [{ type: 'text', text: 'patch failed' }], is_error: true },
        { type: 'text', text: 'Any news?' },
      ],
    },
    { role: 'assistant', content: [searchUse, searchResult, { type: 'text', text: 'Nothing new.' }] },
  ]);
});

test('canonical → Anthropic → canonical gives back the same items', () => {
  const messages = canonicalToAnthropic(conversation, { customToolNames });
  assert.deepEqual(anthropicToCanonical(messages, customToolNames), conversation);
});

test('tool_result blocks go before text even when the text came first', () => {
  const messages = canonicalToAnthropic([
    { type: 'function_call', call_id: 'toolu_a', name: 'a', arguments: '{}' },
    { type: 'message', role: 'user', content: 'and also this' },
    { type: 'function_call_output', call_id: 'toolu_a', output: { ok: true } },
  ]);
  assert.deepEqual(messages[1], {
    role: 'user',
    content: [
      { type: 'tool_result', tool_use_id: 'toolu_a', content: '{"ok":true}' },
      { type: 'text', text: 'and also this' },
    ],
  });
});

test('reasoning from other providers and unsigned thinking are not sent to Anthropic', () => {
  const messages = canonicalToAnthropic([
    { type: 'message', role: 'user', content: 'hi' },
    { type: 'reasoning', id: 'rs_1', summary: [{ type: 'summary_text', text: 'openai' }], encrypted_content: 'gAAAA-openai' },
    { type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: 'deepseek thoughts' }], provider: 'openai-chat' },
    { type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: 'unsigned' }], encrypted_content: '', provider: 'anthropic' },
    { type: 'web_search_call', id: 'ws_1', status: 'completed', action: { type: 'search', query: 'q' } },
    { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'hello' }] },
  ]);
  assert.deepEqual(messages, [
    { role: 'user', content: [{ type: 'text', text: 'hi' }] },
    { role: 'assistant', content: [{ type: 'text', text: 'hello' }] },
  ]);
});

test('tool ids Anthropic would reject are rewritten the same way in call and result', () => {
  const messages = canonicalToAnthropic([
    { type: 'function_call', call_id: 'functions.lookup:0', name: 'lookup', arguments: 'not json' },
    { type: 'function_call_output', call_id: 'functions.lookup:0', output: 'ok' },
  ]);
  assert.deepEqual(messages, [
    { role: 'assistant', content: [{ type: 'tool_use', id: 'functions_lookup_0', name: 'lookup', input: {} }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'functions_lookup_0', content: 'ok' }] },
  ]);
});

test('images travel as base64 or URL sources and come back as input_image parts', () => {
  const input: CanonicalItem[] = [
    {
      type: 'message',
      role: 'user',
      content: [
        { type: 'input_text', text: 'Look:' },
        { type: 'input_image', image_url: 'data:image/png;base64,iVBORw0KGgo=', detail: 'auto' },
        { type: 'input_image', image_url: 'https://img.example/cat.jpg', detail: 'auto' },
      ],
    },
  ];
  const messages = canonicalToAnthropic(input);
  assert.deepEqual(messages[0].content, [
    { type: 'text', text: 'Look:' },
    { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
    { type: 'image', source: { type: 'url', url: 'https://img.example/cat.jpg' } },
  ]);
  assert.deepEqual(anthropicToCanonical(messages), input);
});

test('origin markers tell which items only Anthropic can read', () => {
  const anthropicOnly = conversation.filter(isAnthropicOnlyItem).map((item) => item.type);
  assert.deepEqual(anthropicOnly, ['reasoning', 'reasoning', 'web_search_call']);
  const forResponses = conversation.filter(isResponsesReadable);
  assert.equal(forResponses.length, conversation.length - 3);
  assert.ok(isResponsesReadable({ type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'gAAAA' }), 'OpenAI reasoning stays');
  assert.ok(!isResponsesReadable({ type: 'reasoning', summary: [], content: [], provider: 'openai-chat' }), 'Chat reasoning text is dropped');
});

/**
 * Canonical → Chat Completions messages: tool call ids survive, assistant output is grouped so tool
 * messages follow their calls, and items Chat cannot carry are left out.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { canonicalToChatMessages, chatTools } from '../../../../src/agent/providers/openai-chat/convert.ts';
import type { CanonicalItem } from '../../../../src/agent/providers/types.ts';

test('canonical history becomes Chat messages with every tool call id kept', () => {
  const history: CanonicalItem[] = [
    { type: 'message', role: 'developer', content: [{ type: 'input_text', text: 'Workspace: /repo' }] },
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Fix it' }] },
    { type: 'reasoning', id: 'rs_1', summary: [], encrypted_content: 'gAAAA' },
    { type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: 'thinking' }], encrypted_content: 'sig', provider: 'anthropic' },
    { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Looking.', annotations: [] }] },
    { type: 'function_call', call_id: 'call_read', name: 'read_file', arguments: '{"path":"a.ts"}' },
    { type: 'custom_tool_call', call_id: 'toolu_patch', name: 'apply_patch', input: '*** Begin Patch' },
    { type: 'function_call_output', call_id: 'call_read', output: 'export {}' },
    { type: 'custom_tool_call_output', call_id: 'toolu_patch', output: [{ type: 'input_text', text: 'Done' }] },
    { type: 'web_search_call', id: 'srvtoolu_1', status: 'completed', provider: 'anthropic', anthropic_blocks: [] },
    { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'Fixed.' }] },
    { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'What is this?' }, { type: 'input_image', image_url: 'https://img.example/x.png' }] },
  ];
  assert.deepEqual(canonicalToChatMessages('Be careful.', history), [
    { role: 'system', content: 'Be careful.' },
    { role: 'system', content: 'Workspace: /repo' },
    { role: 'user', content: 'Fix it' },
    {
      role: 'assistant',
      content: 'Looking.',
      tool_calls: [
        { id: 'call_read', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.ts"}' } },
        { id: 'toolu_patch', type: 'function', function: { name: 'apply_patch', arguments: '{"input":"*** Begin Patch"}' } },
      ],
    },
    { role: 'tool', tool_call_id: 'call_read', content: 'export {}' },
    { role: 'tool', tool_call_id: 'toolu_patch', content: 'Done' },
    { role: 'assistant', content: 'Fixed.' },
    {
      role: 'user',
      content: [
        { type: 'text', text: 'What is this?' },
        { type: 'image_url', image_url: { url: 'https://img.example/x.png' } },
      ],
    },
  ]);
});

test('a call with no text before it has null content; non-text outputs are JSON-encoded', () => {
  const messages = canonicalToChatMessages('', [
    { type: 'function_call', call_id: 'call_1', name: 'stat', arguments: '{}' },
    { type: 'function_call_output', call_id: 'call_1', output: { size: 3 } },
  ]);
  assert.deepEqual(messages, [
    { role: 'assistant', content: null, tool_calls: [{ id: 'call_1', type: 'function', function: { name: 'stat', arguments: '{}' } }] },
    { role: 'tool', tool_call_id: 'call_1', content: '{"size":3}' },
  ]);
});

test('function tools keep their schema; custom tools become one required string parameter', () => {
  const tools = chatTools([
    { name: 'stat', description: 'Stat a file', kind: 'function' },
    { name: 'apply_patch', description: 'Patch', kind: 'custom', format: { type: 'grammar', syntax: 'regex', definition: '^x$' } },
  ]);
  assert.deepEqual(tools[0], { type: 'function', function: { name: 'stat', description: 'Stat a file', parameters: { type: 'object', properties: {} } } });
  const parameters = tools[1].function.parameters as { properties: { input: { type: string; description: string } }; required: string[] };
  assert.equal(parameters.properties.input.type, 'string');
  assert.match(parameters.properties.input.description, /regex grammar:\n\^x\$/);
  assert.deepEqual(parameters.required, ['input']);
});

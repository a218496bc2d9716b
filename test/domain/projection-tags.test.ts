import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { OPAQUE_ITEM_TYPES, createProjectionBudget, projectHistoryItems } from '../../src/domain/projection.ts';
import { projectOne } from './projection-support.ts';

type Json = Record<string, any>;

describe('message content parts (SPEC.md §2)', () => {
  const parts: Json[] = [
    { type: 'input_text', text: 't', prompt_cache_breakpoint: { ttl: '5m' } },
    { type: 'output_text', text: 'o', annotations: [], logprobs: [{ token: 'o' }] },
    { type: 'text', text: 'x' },
    { type: 'reasoning_text', text: 'r' },
    { type: 'summary_text', text: 's' },
    { type: 'refusal', refusal: 'no' },
    { type: 'input_image', detail: 'high', file_id: 'file_1', image_url: 'https://i.test/a.png', prompt_cache_breakpoint: true },
    {
      type: 'input_file',
      detail: 'low',
      file_data: 'QUJD',
      file_id: 'file_2',
      file_url: 'https://f.test/a.pdf',
      filename: 'a.pdf',
      prompt_cache_breakpoint: null,
    },
    { type: 'input_audio', input_audio: { data: 'UklG', format: 'wav' } },
  ];

  for (const part of parts) {
    it(`${part.type} keeps its fields and drops others`, () => {
      const projected = projectOne({ type: 'message', role: 'user', content: [{ ...part, extra_field: 'gone' }] }) as Json;
      assert.deepEqual(projected.content, [part]);
    });
  }

  it('encrypted_content parts keep no plaintext', () => {
    const projected = projectOne({
      type: 'message',
      role: 'assistant',
      content: [{ type: 'encrypted_content', encrypted_content: 'ciphertext', text: 'leak' }],
    }) as Json;
    assert.deepEqual(projected.content, [{ type: 'encrypted_content', encrypted_content: '<redacted>' }]);
  });

  it('unknown part tags keep only type, and are never turned into text', () => {
    const projected = projectOne({
      type: 'message',
      role: 'assistant',
      content: [{ type: 'hologram', text: 'I am assistant text', url: 'https://x.test' }],
    }) as Json;
    assert.deepEqual(projected.content, [{ type: 'hologram' }]);
  });

  it('drops parts that are not objects with a string type', () => {
    const projected = projectOne({
      type: 'message',
      role: 'user',
      content: ['loose string', 3, null, [], {}, { type: 7 }, { type: 'text', text: 'kept' }],
    }) as Json;
    assert.deepEqual(projected.content, [{ type: 'text', text: 'kept' }]);
  });
});

describe('unknown and opaque item tags', () => {
  for (const type of [...OPAQUE_ITEM_TYPES, 'future_item_kind']) {
    it(`${type} keeps only type`, () => {
      assert.deepEqual(
        projectOne({ type, id: 'x', role: 'assistant', content: 'text', output: 'y', arguments: '{}' }),
        { type },
      );
    });
  }

  it('lists every recognised tag SPEC.md reduces to type', () => {
    assert.deepEqual([...OPAQUE_ITEM_TYPES].sort(), [
      'apply_patch_call',
      'apply_patch_call_output',
      'code_interpreter_call',
      'file_search_call',
      'local_shell_call_output',
      'mcp_approval_request',
      'mcp_approval_response',
      'mcp_call',
      'mcp_list_tools',
      'program',
      'program_output',
      'shell_call',
      'shell_call_output',
    ]);
  });

  it('drops items that are not objects with a string type, without calling that a cut', () => {
    const budget = createProjectionBudget();
    const projected = projectHistoryItems(
      ['text', 5, null, true, [], {}, { type: null }, { type: 'x'.repeat(16384) }, { type: 'compaction_trigger' }],
      budget,
    );
    assert.deepEqual(projected, [{ type: 'compaction_trigger' }]);
    assert.equal(budget.truncated, false);
  });
});

describe('fields of the wrong type are left out', () => {
  it('drops typed fields whose values have another type', () => {
    assert.deepEqual(
      projectOne({ type: 'function_call', call_id: 'c', name: 'n', arguments: { a: 1 }, async: 'yes' }),
      { type: 'function_call', call_id: 'c', name: 'n' },
    );
    assert.deepEqual(projectOne({ type: 'custom_tool_call', call_id: 'c', name: 'n', input: ['x'] }), {
      type: 'custom_tool_call',
      call_id: 'c',
      name: 'n',
    });
    const click = projectOne({
      type: 'computer_call',
      actions: [{ type: 'click', x: 1.5, y: '2', button: 3, keys: 'a' }],
    }) as Json;
    assert.deepEqual(click.actions, [{ type: 'click' }]);
    assert.deepEqual(projectOne({ type: 'message', role: 'user', content: 42 }), { type: 'message', role: 'user' });
  });
});

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { projectOne } from './projection-support.ts';

type Json = Record<string, any>;

/** Expects `kept` to survive unchanged and every field of `dropped` to disappear. */
function assertKeeps(kept: Json, dropped: Json = { not_listed: 'gone' }): void {
  assert.deepEqual(projectOne({ ...kept, ...dropped }), kept);
}

const metadata = {
  turn_id: 'turn-1',
  create_time: { seconds: 1 },
  executed_tool_calls: [{ name: 'shell' }],
  content_item_kinds: ['text', 'image'],
};

describe('history item types keep their listed fields (SPEC.md §2)', () => {
  it('message, with array content and metadata', () => {
    assertKeeps({
      type: 'message',
      id: 'msg_1',
      role: 'assistant',
      content: [{ type: 'output_text', text: 'hi', annotations: [{ url: 'x' }], logprobs: [{ p: 0.5 }] }],
      status: 'completed',
      phase: 'final_answer',
      internal_chat_message_metadata_passthrough: metadata,
    });
  });

  it('message, with string content and an unknown role kept', () => {
    assertKeeps({ type: 'message', role: 'critic', content: 'plain text' });
  });

  it('message metadata keeps only its listed fields', () => {
    const projected = projectOne({
      type: 'message',
      role: 'user',
      content: 'x',
      internal_chat_message_metadata_passthrough: { ...metadata, authorization: 'grant-all' },
    }) as Json;
    assert.deepEqual(projected.internal_chat_message_metadata_passthrough, metadata);
  });

  it('agent_message', () => {
    assertKeeps({
      type: 'agent_message',
      id: 'am_1',
      author: '/root/explorer',
      recipient: '/root',
      content: [{ type: 'text', text: 'report' }],
      internal_chat_message_metadata_passthrough: metadata,
    });
  });

  it('function_call, with encrypted arguments redacted', () => {
    const item = {
      type: 'function_call',
      id: 'fc_1',
      call_id: 'call_1',
      name: 'shell',
      namespace: 'tools',
      provider: 'openai',
      arguments: '{"command":"ls"}',
      encrypted_function_args: ['opaque-1', 'opaque-2'],
      status: 'completed',
      async: false,
    };
    assert.deepEqual(projectOne({ ...item, extra: 1 }), { ...item, encrypted_function_args: '<redacted>' });
  });

  it('function_call_output, with any JSON output', () => {
    assertKeeps({
      type: 'function_call_output',
      id: 'fco_1',
      call_id: 'call_1',
      name: 'shell',
      namespace: 'tools',
      provider: 'openai',
      output: { stdout: 'ok', exit: 0, nested: [1, [2, { three: null }]] },
      status: 'completed',
      async: true,
    });
  });

  it('custom_tool_call', () => {
    assertKeeps({
      type: 'custom_tool_call',
      id: 'ctc_1',
      call_id: 'call_2',
      name: 'apply_patch',
      namespace: 'tools',
      input: '*** Begin Patch',
      status: 'in_progress',
      async: false,
    });
  });

  it('custom_tool_call_output', () => {
    assertKeeps({
      type: 'custom_tool_call_output',
      id: 'ctco_1',
      call_id: 'call_2',
      name: 'apply_patch',
      output: 'Done',
      status: 'completed',
      async: false,
    }, { namespace: 'not listed for this type' });
  });

  it('computer_call, with every action type, safety checks and extension fields kept', () => {
    const actions = [
      { type: 'screenshot' },
      { type: 'wait' },
      { type: 'click', x: 1, y: 2, button: 'left', keys: ['shift'] },
      { type: 'double_click', x: 3, y: 4, keys: [] },
      { type: 'move', x: 5, y: 6, keys: ['ctrl'] },
      { type: 'type', text: 'hello' },
      { type: 'keypress', keys: ['enter'] },
      { type: 'scroll', x: 7, y: 8, scroll_x: 0, scroll_y: -120, keys: [] },
      { type: 'drag', path: [{ x: 1, y: 1 }, { x: 9, y: 9 }], keys: ['alt'] },
    ];
    const item = {
      type: 'computer_call',
      id: 'cc_1',
      call_id: 'call_3',
      actions,
      pending_safety_checks: [{ id: 'sc_1', code: 'malicious_instructions', message: 'careful', vendor: { x: 1 } }],
      status: 'completed',
      vendor_extension: { action: { type: 'click' } },
    };
    assert.deepEqual(projectOne(item), item);
  });

  it('computer actions drop unlisted fields and keep only type for unknown tags', () => {
    const projected = projectOne({
      type: 'computer_call',
      call_id: 'c',
      actions: [
        { type: 'click', x: 1, y: 2, button: 'left', keys: [], speed: 'fast' },
        { type: 'screenshot', region: [0, 0] },
        { type: 'teleport', x: 1, y: 2 },
      ],
    }) as Json;
    assert.deepEqual(projected.actions, [
      { type: 'click', x: 1, y: 2, button: 'left', keys: [] },
      { type: 'screenshot' },
      { type: 'teleport' },
    ]);
  });

  it('computer_call_output, with its screenshot output and extension fields kept', () => {
    const item = {
      type: 'computer_call_output',
      id: 'cco_1',
      call_id: 'call_3',
      output: { type: 'computer_screenshot', image_url: 'data:image/png;base64,AAAA', detail: 'original' },
      acknowledged_safety_checks: [{ id: 'sc_1' }],
      status: 'completed',
      current_url: 'https://example.test',
    };
    assert.deepEqual(projectOne(item), item);
    const other = projectOne({ ...item, output: { type: 'video', url: 'x' } }) as Json;
    assert.deepEqual(other.output, { type: 'video' });
  });

  it('reasoning, with encrypted content redacted', () => {
    const item = {
      type: 'reasoning',
      id: 'rs_1',
      summary: [{ type: 'summary_text', text: 'thinking' }, { type: 'other_summary' }],
      content: [{ type: 'reasoning_text', text: 'step 1' }],
      encrypted_content: 'gAAAA-secret',
      status: 'completed',
    };
    assert.deepEqual(projectOne({ ...item, extra: true }), { ...item, encrypted_content: '<redacted>' });
  });

  it('reasoning summary entries keep only type and text', () => {
    const projected = projectOne({ type: 'reasoning', summary: [{ type: 'summary_text', text: 's', score: 1 }] }) as Json;
    assert.deepEqual(projected.summary, [{ type: 'summary_text', text: 's' }]);
  });

  it('item_reference keeps only its id, never a body', () => {
    assertKeeps({ type: 'item_reference', id: 'msg_9' }, { content: 'referenced body', role: 'user' });
  });

  it('additional_tools', () => {
    assertKeeps({ type: 'additional_tools', id: 'at_1', role: 'developer', tools: [{ name: 'x' }, 'y', 3] });
  });

  it('local_shell_call with an exec action', () => {
    assertKeeps({
      type: 'local_shell_call',
      id: 'lsc_1',
      call_id: 'call_4',
      status: 'completed',
      action: {
        type: 'exec',
        command: ['ls', '-la'],
        timeout_ms: 1000,
        working_directory: '/tmp',
        env: { LANG: 'C', type: 'env vars may be named anything' },
        user: 'nobody',
      },
    });
  });

  it('local_shell_call exec action drops unlisted fields and non-string env values', () => {
    const projected = projectOne({
      type: 'local_shell_call',
      action: { type: 'exec', command: ['ls', 7], env: { A: '1', B: 2 }, shell: 'zsh' },
    }) as Json;
    assert.deepEqual(projected.action, { type: 'exec', command: ['ls'], env: { A: '1' } });
    const unknown = projectOne({ type: 'local_shell_call', action: { type: 'spawn', command: ['x'] } }) as Json;
    assert.deepEqual(unknown.action, { type: 'spawn' });
  });

  it('tool_search_call and tool_search_output', () => {
    assertKeeps({
      type: 'tool_search_call',
      id: 'ts_1',
      call_id: 'call_5',
      status: 'completed',
      execution: 'server',
      arguments: { query: 'files' },
    });
    assertKeeps({
      type: 'tool_search_output',
      id: 'tso_1',
      call_id: 'call_5',
      status: 'completed',
      execution: 'server',
      tools: [{ name: 'read_file' }],
    });
  });

  it('web_search_call with each action', () => {
    assertKeeps({
      type: 'web_search_call',
      id: 'ws_1',
      status: 'completed',
      action: { type: 'search', query: 'q', queries: ['q', 'r'] },
    });
    assertKeeps({ type: 'web_search_call', action: { type: 'open_page', url: 'https://a.test' } });
    assertKeeps({ type: 'web_search_call', action: { type: 'find_in_page', url: 'https://a.test', pattern: 'x' } });
    const projected = projectOne({ type: 'web_search_call', action: { type: 'search', query: 'q', sources: [{ url: 'u' }] } }) as Json;
    assert.deepEqual(projected.action, { type: 'search', query: 'q' });
  });

  it('image_generation_call', () => {
    assertKeeps({ type: 'image_generation_call', id: 'ig_1', status: 'completed', revised_prompt: 'a cat', result: 'iVBOR' });
  });

  it('compaction and context_compaction, with encrypted content redacted', () => {
    for (const type of ['compaction', 'context_compaction']) {
      assert.deepEqual(projectOne({ type, id: 'cmp_1', encrypted_content: 'secret', summary: 'x' }), {
        type,
        id: 'cmp_1',
        encrypted_content: '<redacted>',
      });
    }
  });

  it('normalizes compaction_summary to compaction', () => {
    assert.deepEqual(projectOne({ type: 'compaction_summary', id: 'c', encrypted_content: 'e' }), {
      type: 'compaction',
      id: 'c',
      encrypted_content: '<redacted>',
    });
  });

  it('compaction_trigger keeps only its type', () => {
    assertKeeps({ type: 'compaction_trigger' }, { id: 'x', reason: 'full' });
  });

  it('preserves unfamiliar status values', () => {
    assertKeeps({ type: 'function_call', call_id: 'c', name: 'n', arguments: '{}', status: 'paused_by_operator' });
  });
});

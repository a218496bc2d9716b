import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  createProjectionBudget,
  projectHistoryItems,
  projectJson,
  projectText,
} from '../../src/domain/projection.ts';

type Json = Record<string, any>;

/** An item whose cost is easy to count: nodes = 4 + output.length (top array, item, type, output). */
function outputItem(output: unknown[]): Json {
  return { type: 'function_call_output', output };
}
/** Text of `outputItem`: "type" + "function_call_output" + "output". */
const OUTPUT_ITEM_TEXT = 4 + 20 + 6;

describe('projection budget defaults', () => {
  it('starts at 65,536 characters and 2,048 nodes, untruncated', () => {
    assert.deepEqual(createProjectionBudget(), { textChars: 65536, nodes: 2048, truncated: false });
    assert.deepEqual(createProjectionBudget(10, 3), { textChars: 10, nodes: 3, truncated: false });
  });
});

describe('node budget', () => {
  it('keeps everything when the projection uses exactly 2,048 nodes', () => {
    const budget = createProjectionBudget();
    const [item] = projectHistoryItems([outputItem(new Array(2044).fill(0))], budget) as Json[];
    assert.equal(item.output.length, 2044);
    assert.equal(item.projectionTruncated, undefined);
    assert.equal(budget.nodes, 0);
    assert.equal(budget.truncated, false);
  });

  it('drops the rest of the array one node past 2,048 and marks the enclosing object', () => {
    const budget = createProjectionBudget();
    const [item] = projectHistoryItems([outputItem(new Array(2045).fill(0))], budget) as Json[];
    assert.equal(item.output.length, 2044);
    assert.equal(item.projectionTruncated, true);
    assert.equal(budget.truncated, true);
    assert.equal(budget.nodes, 0);
  });

  it('counts every value, null and booleans included', () => {
    const budget = createProjectionBudget(65536, 8);
    const [item] = projectHistoryItems([outputItem([null, true, 'x', 1, 2])], budget) as Json[];
    assert.deepEqual(item.output, [null, true, 'x', 1]);
    assert.equal(item.projectionTruncated, true);
  });

  it('drops whole items that no longer fit and flags only the budget for the top-level array', () => {
    const budget = createProjectionBudget(65536, 5);
    const items = projectHistoryItems([{ type: 'compaction_trigger' }, { type: 'compaction_trigger' }, { type: 'x' }], budget);
    assert.deepEqual(items, [{ type: 'compaction_trigger' }, { type: 'compaction_trigger' }]);
    assert.equal(budget.truncated, true);
  });

  it('never starts an item whose object and tag node do not both fit', () => {
    const budget = createProjectionBudget(65536, 2);
    assert.deepEqual(projectHistoryItems([{ type: 'compaction_trigger' }], budget), []);
    assert.equal(budget.truncated, true);
    assert.equal(budget.nodes, 2, 'the array that held nothing is refunded');
  });

  it('returns an empty array when not even the array fits', () => {
    const budget = createProjectionBudget(65536, 0);
    assert.deepEqual(projectHistoryItems([{ type: 'message' }], budget), []);
    assert.equal(budget.truncated, true);
  });

  it('does not call an empty array truncated', () => {
    const budget = createProjectionBudget(0, 0);
    assert.deepEqual(projectHistoryItems([], budget), []);
    assert.equal(budget.truncated, false);
  });
});

describe('text budget', () => {
  const full = 'a'.repeat(16383);

  it('keeps everything at exactly 65,536 characters', () => {
    const budget = createProjectionBudget();
    const tail = 'b'.repeat(65536 - OUTPUT_ITEM_TEXT - 3 * 16383);
    const [item] = projectHistoryItems([outputItem([full, full, full, tail])], budget) as Json[];
    assert.deepEqual(item.output, [full, full, full, tail]);
    assert.equal(item.projectionTruncated, undefined);
    assert.equal(budget.textChars, 0);
    assert.equal(budget.truncated, false);
  });

  it('cuts the string that crosses 65,536 characters by one and marks the enclosing object', () => {
    const budget = createProjectionBudget();
    const tail = 'b'.repeat(65536 - OUTPUT_ITEM_TEXT - 3 * 16383);
    const [item] = projectHistoryItems([outputItem([full, full, full, tail + 'c'])], budget) as Json[];
    assert.deepEqual(item.output, [full, full, full, tail]);
    assert.equal(item.projectionTruncated, true);
    assert.equal(budget.truncated, true);
  });

  it('stops at the first non-empty string once the text is spent, but still emits text-free values', () => {
    const budget = createProjectionBudget(OUTPUT_ITEM_TEXT + 3);
    const [item] = projectHistoryItems([outputItem(['abc', 1, '', false, 'x', 2])], budget) as Json[];
    assert.deepEqual(item.output, ['abc', 1, '', false]);
    assert.equal(item.projectionTruncated, true);
  });

  it('counts key lengths as text and drops a field whose key does not fit', () => {
    const budget = createProjectionBudget(OUTPUT_ITEM_TEXT + 5);
    const [item] = projectHistoryItems([outputItem([{ abc: 1, de: 2, f: 3 }])], budget) as Json[];
    assert.deepEqual(item.output, [{ abc: 1, de: 2, projectionTruncated: true }]);
    assert.equal(item.projectionTruncated, undefined, 'the cut is marked on the innermost object');
    assert.equal(budget.textChars, 0);
  });

  it('never cuts an item tag: an item whose tag does not fit is not started', () => {
    const budget = createProjectionBudget(4 + 'compaction_trigger'.length - 1);
    assert.deepEqual(projectHistoryItems([{ type: 'compaction_trigger' }], budget), []);
    assert.equal(budget.truncated, true);
  });

  it('keeps a redaction marker whole or not at all', () => {
    const budget = createProjectionBudget(OUTPUT_ITEM_TEXT + 'encrypted_content'.length + 9);
    const [item] = projectHistoryItems([outputItem([{ encrypted_content: 'secret' }])], budget) as Json[];
    assert.deepEqual(item, { type: 'function_call_output', projectionTruncated: true });
  });
});

describe('hollow containers', () => {
  it('removes a container cut before its first child, refunds it and stops its parent', () => {
    const budget = createProjectionBudget(OUTPUT_ITEM_TEXT + 1, 100);
    const [item] = projectHistoryItems([outputItem(['a', { long_key: 1 }, 'b'])], budget) as Json[];
    assert.deepEqual(item.output, ['a']);
    assert.equal(item.projectionTruncated, true);
    assert.equal(budget.nodes, 100 - 5);
    assert.equal(budget.textChars, 0);
  });

  it('removes nested hollow containers up to the first one holding content', () => {
    const budget = createProjectionBudget(OUTPUT_ITEM_TEXT + 'kept'.length + 1, 100);
    const [item] = projectHistoryItems([outputItem([{ kept: 'x', deeper: [[{ key: 1 }]] }])], budget) as Json[];
    assert.deepEqual(item.output, [{ kept: 'x', projectionTruncated: true }]);
    assert.equal(budget.nodes, 100 - 6);
  });

  it('does not emit a run of hollow objects once the text is spent', () => {
    const budget = createProjectionBudget(OUTPUT_ITEM_TEXT);
    const [item] = projectHistoryItems([outputItem(new Array(500).fill({ a: 1 }))], budget) as Json[];
    assert.deepEqual(item, { type: 'function_call_output', projectionTruncated: true });
  });

  it('keeps empty containers that were not cut', () => {
    const [item] = projectHistoryItems([outputItem([[], {}])], createProjectionBudget()) as Json[];
    assert.deepEqual(item.output, [[], {}]);
  });
});

describe('single strings', () => {
  it('keeps a string of 16,383 characters', () => {
    const budget = createProjectionBudget();
    const [item] = projectHistoryItems([{ type: 'custom_tool_call', input: 'x'.repeat(16383) }], budget) as Json[];
    assert.equal(item.input.length, 16383);
    assert.equal(item.projectionTruncated, undefined);
  });

  it('cuts a string of 16,384 characters to 16,383 without an ellipsis and marks its object', () => {
    const budget = createProjectionBudget();
    const [item] = projectHistoryItems([{ type: 'custom_tool_call', input: 'x'.repeat(16384) }], budget) as Json[];
    assert.equal(item.input, 'x'.repeat(16383));
    assert.equal(item.projectionTruncated, true);
    assert.equal(budget.truncated, true);
  });

  it('cuts strings inside content parts and marks the part, not the message', () => {
    const budget = createProjectionBudget();
    const [message] = projectHistoryItems(
      [{ type: 'message', role: 'user', content: [{ type: 'input_text', text: 'y'.repeat(20000) }] }],
      budget,
    ) as Json[];
    assert.equal(message.content[0].text.length, 16383);
    assert.equal(message.content[0].projectionTruncated, true);
    assert.equal(message.projectionTruncated, undefined);
  });

  it('does not split a surrogate pair at the cut', () => {
    const budget = createProjectionBudget();
    const [item] = projectHistoryItems([{ type: 'custom_tool_call', input: 'x'.repeat(16382) + '😀' }], budget) as Json[];
    assert.equal(item.input, 'x'.repeat(16382));
  });
});

describe('one budget shared by a whole history turn', () => {
  it('spends items, displayItems and text fields from the same budget', () => {
    const budget = createProjectionBudget(65536, 2048);
    const items = projectHistoryItems([outputItem(new Array(1000).fill(0))], budget);
    const displayItems = projectHistoryItems([outputItem(new Array(1500).fill(0))], budget) as Json[];
    assert.equal((items[0] as Json).output.length, 1000);
    assert.equal(displayItems[0].output.length, 2048 - 1004 - 4);
    assert.equal(displayItems[0].projectionTruncated, true);
    assert.equal(projectText('assistant text', budget), '');
    assert.equal(budget.truncated, true);
  });

  it('projects text fields with the single-string limit and the remaining budget', () => {
    const budget = createProjectionBudget(20000);
    assert.equal(projectText('z'.repeat(16384), budget), 'z'.repeat(16383));
    assert.equal(budget.truncated, true);
    assert.equal(projectText('w'.repeat(5000), budget), 'w'.repeat(20000 - 16383));
    assert.equal(budget.textChars, 0);
    assert.equal(projectText('', budget), '');
  });

  it('projects other JSON fields with redaction and returns null when nothing fits', () => {
    const budget = createProjectionBudget();
    assert.deepEqual(projectJson({ models: { m: { cost_usd: null } }, Encrypted_Content: 'x' }, budget), {
      models: { m: { cost_usd: null } },
      Encrypted_Content: '<redacted>',
    });
    assert.equal(projectJson(undefined, budget), null);
    const spent = createProjectionBudget(0, 0);
    assert.equal(projectJson({ a: 1 }, spent), null);
    assert.equal(spent.truncated, true);
  });
});

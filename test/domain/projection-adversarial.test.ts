import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_OPAQUE_DEPTH, createProjectionBudget, projectHistoryItems } from '../../src/domain/projection.ts';

type Json = Record<string, any>;

function outputOf(output: unknown, budget = createProjectionBudget()): Json {
  const [item] = projectHistoryItems([{ type: 'function_call_output', output }], budget) as Json[];
  return item;
}

/** Depth of nested containers, walked without recursion. */
function depthOf(value: unknown, step: (v: any) => unknown): number {
  let depth = 0;
  let current = value;
  while (typeof current === 'object' && current !== null) {
    depth += 1;
    current = step(current);
  }
  return depth;
}

describe('adversarial input', () => {
  it('handles 100,000 levels of nested objects, cutting at the depth cap', () => {
    let deep: unknown = 'bottom';
    for (let level = 0; level < 100_000; level += 1) deep = { v: level, a: deep };
    const budget = createProjectionBudget(1e9, 1e7);
    const item = outputOf(deep, budget);
    assert.equal(depthOf(item.output, (v) => v.a), MAX_OPAQUE_DEPTH + 1);
    let innermost = item.output;
    while (innermost.a !== undefined) innermost = innermost.a;
    assert.deepEqual(innermost, { v: 100_000 - 1 - MAX_OPAQUE_DEPTH, projectionTruncated: true });
    assert.equal(budget.truncated, true);
  });

  it('handles 100,000 levels of nested arrays', () => {
    let deep: unknown = 0;
    for (let level = 0; level < 100_000; level += 1) deep = [level, deep];
    const item = outputOf(deep);
    assert.equal(depthOf(item.output, (v) => v[1]), MAX_OPAQUE_DEPTH + 1);
    assert.equal(item.projectionTruncated, true);
  });

  it('drops a 100,000-level chain with no content above the cut, marking the item', () => {
    let deep: unknown = 0;
    for (let level = 0; level < 100_000; level += 1) deep = { a: [deep] };
    const budget = createProjectionBudget();
    const item = outputOf(deep, budget);
    assert.deepEqual(item, { type: 'function_call_output', projectionTruncated: true });
    assert.equal(budget.nodes, 2048 - 3);
  });

  it('bounds deep nesting by the node budget too', () => {
    let deep: unknown = 0;
    for (let level = 0; level < 100_000; level += 1) deep = { v: level, a: deep };
    const budget = createProjectionBudget(65536, 40);
    const item = outputOf(deep, budget);
    // 3 nodes for the array, the item and its type; 2 per level; the 19th level cannot hold its `v`.
    assert.equal(depthOf(item.output, (v) => v.a), 18);
    assert.equal(budget.nodes, 1);
  });

  it('stops early in a huge array', () => {
    const huge = new Array(3_000_000).fill('x');
    const item = outputOf(huge);
    assert.equal(item.output.length, 2048 - 4);
    assert.equal(item.projectionTruncated, true);
  });

  it('scans a huge array of malformed items once and keeps the tagged ones', () => {
    const items: unknown[] = new Array(1_000_000).fill(7);
    items.push({ type: 'compaction_trigger' });
    assert.deepEqual(projectHistoryItems(items, createProjectionBudget()), [{ type: 'compaction_trigger' }]);
  });

  it('drops a field whose key alone exceeds the text budget', () => {
    const item = outputOf({ first: 0, ['k'.repeat(1_000_000)]: 1, small: 2 });
    assert.deepEqual(item.output, { first: 0, projectionTruncated: true });
  });

  it('cuts an object with very many keys at the node budget', () => {
    const wide: Json = {};
    for (let index = 0; index < 100_000; index += 1) wide[`k${index}`] = index;
    const item = outputOf(wide);
    assert.equal(Object.keys(item.output).length, 2048 - 4 + 1);
    assert.equal(item.output.projectionTruncated, true);
  });

  it('copies a __proto__ key as data, never as a prototype', () => {
    const hostile = JSON.parse('{"__proto__": {"polluted": true}, "x": 1}');
    const item = outputOf(hostile);
    assert.equal(Object.getPrototypeOf(item.output), Object.prototype);
    assert.deepEqual(Object.keys(item.output), ['__proto__', 'x']);
    assert.equal(({} as Json).polluted, undefined);
    assert.deepEqual(JSON.parse(JSON.stringify(item.output)).__proto__, { polluted: true });
  });

  it('never copies an input projectionTruncated key, so the marker is always ours', () => {
    const item = outputOf({ projectionTruncated: true, a: 1 });
    assert.deepEqual(item.output, { a: 1 });
    assert.equal(item.projectionTruncated, undefined);
  });

  it('turns values JSON cannot hold into null in arrays and drops them in objects', () => {
    const item = outputOf({ list: [undefined, () => 1, Number.NaN, Infinity, 1n], fn: () => 1, gone: undefined, ok: 1 });
    assert.deepEqual(item.output, { list: [null, null, null, null, null], ok: 1 });
  });

  it('never produces output larger than the budget allows', () => {
    const noisy = Array.from({ length: 50 }, (_, index) => ({
      type: index % 2 === 0 ? 'message' : 'function_call_output',
      role: 'user',
      content: [{ type: 'input_text', text: 'q'.repeat(20_000) }],
      output: { ['key'.repeat(100)]: 'v'.repeat(20_000), list: new Array(500).fill({ a: 'b' }) },
    }));
    const budget = createProjectionBudget();
    const projected = projectHistoryItems(noisy, budget);
    let strings = 0;
    let nodes = 0;
    const pending: unknown[] = [projected];
    while (pending.length > 0) {
      const value = pending.pop();
      nodes += 1;
      if (typeof value === 'string') strings += value.length;
      else if (Array.isArray(value)) pending.push(...value);
      else if (typeof value === 'object' && value !== null) {
        for (const [key, child] of Object.entries(value)) {
          if (key === 'projectionTruncated') continue;
          strings += key.length;
          pending.push(child);
        }
      }
    }
    assert.ok(nodes <= 2048, `nodes ${nodes}`);
    assert.ok(strings <= 65536, `text ${strings}`);
    assert.equal(nodes, 2048 - budget.nodes);
    assert.equal(strings, 65536 - budget.textChars);
  });
});

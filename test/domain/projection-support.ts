import assert from 'node:assert/strict';
import { createProjectionBudget, projectHistoryItems } from '../../src/domain/projection.ts';

/** Projects one item with a fresh budget that it must fit in whole. */
export function projectOne(item: unknown): unknown {
  const budget = createProjectionBudget();
  const projected = projectHistoryItems([item], budget);
  assert.equal(budget.truncated, false, 'these fixtures fit the budget');
  return projected[0];
}
